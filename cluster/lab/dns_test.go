package lab

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/klab-dev/klab/cluster/dns"
)

// TestEnsureDNSObjects checks what the add-on step makes, as kubeadm's
// CoreDNS phase does, and that running it again (a restarted cluster)
// changes nothing.
func TestEnsureDNSObjects(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	for range 2 {
		if err := ensureDNSObjects(ctx, client, "10.96.0.10"); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := client.CoreV1().Services("kube-system").Get(ctx, dns.ServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.96.0.10" || svc.Spec.Selector[dns.AppLabel] != dns.AppLabelValue || len(svc.Spec.Ports) != 3 {
		t.Fatalf("kube-dns Service: %+v", svc.Spec)
	}
	want := map[string]struct {
		port   int32
		proto  string
		target intstr.IntOrString
	}{
		"dns": {53, "UDP", intstr.FromString("dns")}, "dns-tcp": {53, "TCP", intstr.FromString("dns-tcp")},
		"metrics": {9153, "TCP", intstr.FromString("metrics")},
	}
	for _, p := range svc.Spec.Ports {
		w, ok := want[p.Name]
		if !ok || p.Port != w.port || string(p.Protocol) != w.proto || p.TargetPort != w.target {
			t.Errorf("port %+v", p)
		}
	}
	if _, err := client.CoreV1().ServiceAccounts("kube-system").Get(ctx, dnsServiceAccount, metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	binding, err := client.RbacV1().ClusterRoleBindings().Get(ctx, dnsClusterRole, metav1.GetOptions{})
	if err != nil || binding.Subjects[0].Name != dnsServiceAccount || binding.RoleRef.Name != dnsClusterRole {
		t.Errorf("binding %+v, %v", binding, err)
	}
	role, err := client.RbacV1().ClusterRoles().Get(ctx, dnsClusterRole, metav1.GetOptions{})
	if err != nil || len(role.Rules) != 2 {
		t.Errorf("role %+v, %v", role, err)
	}
}
