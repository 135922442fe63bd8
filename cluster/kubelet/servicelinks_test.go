package kubelet

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
)

func service(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.ServiceSpec{ClusterIP: ip, Ports: ports},
	}
}

// TestServiceEnvVars pins the names and values to upstream's
// pkg/kubelet/envvars (its FromServices test cases, rewritten).
func TestServiceEnvVars(t *testing.T) {
	services := []*v1.Service{
		service("default", "foo-bar", "1.2.3.4", v1.ServicePort{Port: 8083, Protocol: v1.ProtocolTCP}),
		service("default", "abc-123", "5.6.7.8",
			v1.ServicePort{Name: "u-d-p", Port: 8081, Protocol: v1.ProtocolUDP},
			v1.ServicePort{Name: "t-c-p", Port: 8082, Protocol: v1.ProtocolTCP}),
		service("default", "q-u-u-x", "9.8.7.6",
			v1.ServicePort{Port: 8081, Protocol: v1.ProtocolTCP},
			v1.ServicePort{Name: "8083", Port: 8083, Protocol: v1.ProtocolTCP}),
		service("default", "svrc-clusterip-none", "None", v1.ServicePort{Port: 8082, Protocol: v1.ProtocolTCP}),
		service("default", "svrc-clusterip-empty", "", v1.ServicePort{Port: 8082, Protocol: v1.ProtocolTCP}),
		service("default", "sctp-1", "9.9.9.9", v1.ServicePort{Name: "sctp", Port: 7777, Protocol: v1.ProtocolSCTP}),
		service("default", "v6", "2001:db8::1", v1.ServicePort{Port: 53}),
	}
	want := []v1.EnvVar{
		{Name: "ABC_123_SERVICE_HOST", Value: "5.6.7.8"},
		{Name: "ABC_123_SERVICE_PORT", Value: "8081"},
		{Name: "ABC_123_SERVICE_PORT_U_D_P", Value: "8081"},
		{Name: "ABC_123_SERVICE_PORT_T_C_P", Value: "8082"},
		{Name: "ABC_123_PORT", Value: "udp://5.6.7.8:8081"},
		{Name: "ABC_123_PORT_8081_UDP", Value: "udp://5.6.7.8:8081"},
		{Name: "ABC_123_PORT_8081_UDP_PROTO", Value: "udp"},
		{Name: "ABC_123_PORT_8081_UDP_PORT", Value: "8081"},
		{Name: "ABC_123_PORT_8081_UDP_ADDR", Value: "5.6.7.8"},
		{Name: "ABC_123_PORT_8082_TCP", Value: "tcp://5.6.7.8:8082"},
		{Name: "ABC_123_PORT_8082_TCP_PROTO", Value: "tcp"},
		{Name: "ABC_123_PORT_8082_TCP_PORT", Value: "8082"},
		{Name: "ABC_123_PORT_8082_TCP_ADDR", Value: "5.6.7.8"},
		{Name: "FOO_BAR_SERVICE_HOST", Value: "1.2.3.4"},
		{Name: "FOO_BAR_SERVICE_PORT", Value: "8083"},
		{Name: "FOO_BAR_PORT", Value: "tcp://1.2.3.4:8083"},
		{Name: "FOO_BAR_PORT_8083_TCP", Value: "tcp://1.2.3.4:8083"},
		{Name: "FOO_BAR_PORT_8083_TCP_PROTO", Value: "tcp"},
		{Name: "FOO_BAR_PORT_8083_TCP_PORT", Value: "8083"},
		{Name: "FOO_BAR_PORT_8083_TCP_ADDR", Value: "1.2.3.4"},
		{Name: "Q_U_U_X_SERVICE_HOST", Value: "9.8.7.6"},
		{Name: "Q_U_U_X_SERVICE_PORT", Value: "8081"},
		{Name: "Q_U_U_X_SERVICE_PORT_8083", Value: "8083"},
		{Name: "Q_U_U_X_PORT", Value: "tcp://9.8.7.6:8081"},
		{Name: "Q_U_U_X_PORT_8081_TCP", Value: "tcp://9.8.7.6:8081"},
		{Name: "Q_U_U_X_PORT_8081_TCP_PROTO", Value: "tcp"},
		{Name: "Q_U_U_X_PORT_8081_TCP_PORT", Value: "8081"},
		{Name: "Q_U_U_X_PORT_8081_TCP_ADDR", Value: "9.8.7.6"},
		{Name: "Q_U_U_X_PORT_8083_TCP", Value: "tcp://9.8.7.6:8083"},
		{Name: "Q_U_U_X_PORT_8083_TCP_PROTO", Value: "tcp"},
		{Name: "Q_U_U_X_PORT_8083_TCP_PORT", Value: "8083"},
		{Name: "Q_U_U_X_PORT_8083_TCP_ADDR", Value: "9.8.7.6"},
		{Name: "SCTP_1_SERVICE_HOST", Value: "9.9.9.9"},
		{Name: "SCTP_1_SERVICE_PORT", Value: "7777"},
		{Name: "SCTP_1_SERVICE_PORT_SCTP", Value: "7777"},
		{Name: "SCTP_1_PORT", Value: "sctp://9.9.9.9:7777"},
		{Name: "SCTP_1_PORT_7777_SCTP", Value: "sctp://9.9.9.9:7777"},
		{Name: "SCTP_1_PORT_7777_SCTP_PROTO", Value: "sctp"},
		{Name: "SCTP_1_PORT_7777_SCTP_PORT", Value: "7777"},
		{Name: "SCTP_1_PORT_7777_SCTP_ADDR", Value: "9.9.9.9"},
		{Name: "V6_SERVICE_HOST", Value: "2001:db8::1"},
		{Name: "V6_SERVICE_PORT", Value: "53"},
		{Name: "V6_PORT", Value: "tcp://[2001:db8::1]:53"},
		{Name: "V6_PORT_53_TCP", Value: "tcp://[2001:db8::1]:53"},
		{Name: "V6_PORT_53_TCP_PROTO", Value: "tcp"},
		{Name: "V6_PORT_53_TCP_PORT", Value: "53"},
		{Name: "V6_PORT_53_TCP_ADDR", Value: "2001:db8::1"},
	}
	if diff := cmp.Diff(want, serviceEnvVars(services)); diff != "" {
		t.Errorf("serviceEnvVars (-want +got):\n%s", diff)
	}
}

// TestServiceEnvScope checks which Services a pod sees: its namespace's
// with enableServiceLinks, default/kubernetes always, and what a
// container defines itself wins.
func TestServiceEnvScope(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	ctx := context.Background()
	for _, svc := range []*v1.Service{
		service("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}),
		service("default", "web", "10.96.0.20", v1.ServicePort{Port: 80, Protocol: v1.ProtocolTCP}),
		service("shop", "cart", "10.96.0.30", v1.ServicePort{Port: 8080, Protocol: v1.ProtocolTCP}),
		service("shop", "db", "None", v1.ServicePort{Port: 5432, Protocol: v1.ProtocolTCP}),
	} {
		if _, err := fx.client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return len(fx.k.services.GetStore().List()) == 4 })

	kubernetesVars := map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT": "tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
	}
	tests := []struct {
		name      string
		namespace string
		links     *bool
		env       []v1.EnvVar
		command   []string
		want      map[string]string
		wantCmd   []string
	}{{
		name: "own namespace and kubernetes", namespace: "shop", links: ptr.To(true),
		want: merge(kubernetesVars, map[string]string{
			"CART_SERVICE_HOST": "10.96.0.30", "CART_SERVICE_PORT": "8080", "CART_PORT": "tcp://10.96.0.30:8080",
			"CART_PORT_8080_TCP": "tcp://10.96.0.30:8080", "CART_PORT_8080_TCP_PROTO": "tcp",
			"CART_PORT_8080_TCP_PORT": "8080", "CART_PORT_8080_TCP_ADDR": "10.96.0.30",
		}),
	}, {
		name: "links off keeps kubernetes", namespace: "shop", links: ptr.To(false),
		want: kubernetesVars,
	}, {
		name: "unset means on", namespace: "default",
		want: merge(kubernetesVars, map[string]string{
			"WEB_SERVICE_HOST": "10.96.0.20", "WEB_SERVICE_PORT": "80", "WEB_PORT": "tcp://10.96.0.20:80",
			"WEB_PORT_80_TCP": "tcp://10.96.0.20:80", "WEB_PORT_80_TCP_PROTO": "tcp",
			"WEB_PORT_80_TCP_PORT": "80", "WEB_PORT_80_TCP_ADDR": "10.96.0.20",
		}),
	}, {
		name: "container's own variable wins, references expand", namespace: "other", links: ptr.To(true),
		env: []v1.EnvVar{
			{Name: "KUBERNETES_SERVICE_PORT", Value: "6443"},
			{Name: "API", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT_HTTPS)"},
		},
		command: []string{"curl", "$(KUBERNETES_PORT)"},
		want:    merge(kubernetesVars, map[string]string{"KUBERNETES_SERVICE_PORT": "6443", "API": "https://10.96.0.1:443"}),
		wantCmd: []string{"curl", "tcp://10.96.0.1:443"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("p", appImage, func(p *v1.Pod) {
				p.Namespace = tt.namespace
				p.Spec.EnableServiceLinks = tt.links
				p.Spec.Containers[0].Env = tt.env
				p.Spec.Containers[0].Command = tt.command
			})
			env, err := fx.k.containerEnv(ctx, pod, &pod.Spec.Containers[0], "10.88.0.9")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, kv := range env.list() {
				got[kv.Key] = kv.Value
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if tt.env != nil && env.list()[0].Key != tt.env[0].Name {
				t.Errorf("declared variables come first, got %v", env.list())
			}
			if cmd := expandAll(tt.command, env.lookup); !cmp.Equal(cmd, tt.wantCmd) {
				t.Errorf("command = %q, want %q", cmd, tt.wantCmd)
			}
		})
	}
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
