package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestNewEndpointReconciler(t *testing.T) {
	tests := []struct {
		addr     string
		wantIP   string
		wantPort int32
		wantErr  bool
	}{
		{addr: "172.18.0.2:6443", wantIP: "172.18.0.2", wantPort: 6443},
		{addr: "127.0.0.3:16443", wantIP: "127.0.0.3", wantPort: 16443},
		{addr: "[fd00::2]:6443", wantIP: "fd00::2", wantPort: 6443},
		{addr: "0.0.0.0:6443", wantErr: true},
		{addr: "master-1:6443", wantErr: true},
		{addr: "172.18.0.2", wantErr: true},
		{addr: "172.18.0.2:0", wantErr: true},
		{addr: "172.18.0.2:99999", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			r, err := newEndpointReconciler(nil, tt.addr)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %s:%d, want an error", r.ip, r.port)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.ip != tt.wantIP || r.port != tt.wantPort {
				t.Errorf("got %s:%d, want %s:%d", r.ip, r.port, tt.wantIP, tt.wantPort)
			}
		})
	}
}

func TestKubernetesEndpointSliceAddressType(t *testing.T) {
	ports := []corev1.EndpointPort{{Name: "https", Port: 6443, Protocol: corev1.ProtocolTCP}}
	for ips, want := range map[string]discoveryv1.AddressType{
		"10.0.0.1": discoveryv1.AddressTypeIPv4,
		"fd00::1":  discoveryv1.AddressTypeIPv6,
	} {
		if got := kubernetesEndpointSlice([]string{ips}, ports).AddressType; got != want {
			t.Errorf("%s: address type %s, want %s", ips, got, want)
		}
	}
}
