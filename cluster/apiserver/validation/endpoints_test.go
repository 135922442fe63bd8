package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Endpoint addresses may be loopback ones (the local runtime's pods live
// on 127.x.y.z) but not unspecified or link-local.
func TestEndpointAddresses(t *testing.T) {
	tests := []struct {
		ip      string
		wantErr string
	}{
		{"127.93.125.3", ""},
		{"10.244.1.5", ""},
		{"0.0.0.0", "may not be unspecified"},
		{"169.254.1.1", "link-local range"},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			ep := &corev1.Endpoints{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Subsets: []corev1.EndpointSubset{{
					Addresses: []corev1.EndpointAddress{{IP: tt.ip}},
					Ports:     []corev1.EndpointPort{{Port: 8080, Protocol: corev1.ProtocolTCP}},
				}},
			}
			slice := &discoveryv1.EndpointSlice{
				ObjectMeta:  metav1.ObjectMeta{Name: "web-abcde", Namespace: "default"},
				AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{tt.ip}}},
				Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
			}
			for name, errs := range map[string]string{"endpoints": errString(ValidateCreate(ep).ToAggregate()), "endpointslice": errString(ValidateCreate(slice).ToAggregate())} {
				if tt.wantErr == "" && errs != "" || tt.wantErr != "" && !strings.Contains(errs, tt.wantErr) {
					t.Errorf("%s with %s: errors %q, want %q", name, tt.ip, errs, tt.wantErr)
				}
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
