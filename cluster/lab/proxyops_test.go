package lab

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
)

func TestProxyNode(t *testing.T) {
	defer i18n.SetLang(i18n.Current())
	i18n.SetLang(i18n.English)
	info := &Info{Name: "c", Nodes: []runtime.Node{
		{Name: "master-1", Role: runtime.RoleMaster, Host: "10.1.0.11", Ports: map[string]int{"proxy": 10256}},
		{Name: "worker-1", Role: runtime.RoleWorker, Host: "10.1.0.101", Ports: map[string]int{"proxy": 10256},
			Published: map[string]string{"proxy": "127.0.0.1:41000"}},
		{Name: "worker-2", Role: runtime.RoleWorker, Host: "10.1.0.102", Ports: map[string]int{}},
	}}
	n, addr, err := proxyNode(info, "")
	if err != nil || n.Name != "worker-1" || addr != "127.0.0.1:41000" {
		t.Errorf(`proxyNode("") = %s, %s, %v; want worker-1 at its published port`, n.Name, addr, err)
	}
	if n, addr, err := proxyNode(info, "master-1"); err != nil || n.Name != "master-1" || addr != "10.1.0.11:10256" {
		t.Errorf("proxyNode(master-1) = %s, %s, %v", n.Name, addr, err)
	}
	if _, _, err := proxyNode(info, "worker-9"); err == nil || !strings.Contains(err.Error(), "worker-9") || !strings.Contains(err.Error(), "master-1, worker-1, worker-2") {
		t.Errorf("proxyNode(worker-9) = %v; want an error naming it and the nodes", err)
	}
	if _, _, err := proxyNode(info, "worker-2"); err == nil || !strings.Contains(err.Error(), "worker-2") {
		t.Errorf("proxyNode(worker-2) without a proxy port = %v; want an error", err)
	}
	masters := &Info{Nodes: info.Nodes[:1]}
	if n, _, err := proxyNode(masters, ""); err != nil || n.Name != "master-1" {
		t.Errorf(`proxyNode("") without workers = %s, %v; want master-1`, n.Name, err)
	}
}

func TestTrafficTarget(t *testing.T) {
	defer i18n.SetLang(i18n.Current())
	i18n.SetLang(i18n.English)
	node := runtime.Node{Name: "worker-1", Host: "10.1.0.101"}
	svc := func(mut func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.20", Ports: []corev1.ServicePort{
				{Name: "http", Port: 80}, {Name: "admin", Port: 9000, NodePort: 30900},
			}},
		}
		mut(s)
		return s
	}
	for _, tc := range []struct {
		name, port, want, err string
		mut                   func(*corev1.Service)
	}{
		{name: "first port, ClusterIP", want: "10.96.0.20:80"},
		{name: "named port with a NodePort", port: "admin", want: "10.1.0.101:30900"},
		{name: "port by number", port: "9000", want: "10.1.0.101:30900"},
		{name: "no such port", port: "https", err: "https"},
		{name: "headless", err: "headless", mut: func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }},
		{name: "ExternalName", err: "ExternalName", mut: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }},
		{name: "no ports", err: "no ports", mut: func(s *corev1.Service) { s.Spec.Ports = nil }},
	} {
		mut := tc.mut
		if mut == nil {
			mut = func(*corev1.Service) {}
		}
		got, err := trafficTarget(svc(mut), node, tc.port)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: err = %v, want one mentioning %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
