package apiserver_test

import (
	"fmt"
	"net"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// TestServiceAllocation: ClusterIPs come from 10.96.0.0/12 and NodePorts
// from 30000-32767, never twice, even when services are created at once
// (through two API servers, whose allocators share etcd).
func TestServiceAllocation(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{APIServers: 2})
	clients := []kubernetes.Interface{adminClient(t, c), clientFor(t, c, 1, auth.AdminUser)}
	ctx := testContext(t, testTimeout)
	const ns, count = "svc", 30
	createNamespace(ctx, t, clients[0], ns)

	services := make([]*corev1.Service, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	for i := range count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("np-%02d", i), Namespace: ns}, Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
			services[i], errs[i] = clients[i%2].CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		}()
	}
	wg.Wait()

	_, serviceNet, _ := net.ParseCIDR("10.96.0.0/12")
	ips, ports := map[string]string{}, map[int32]string{}
	for i, svc := range services {
		if errs[i] != nil {
			t.Errorf("create np-%02d: %v", i, errs[i])
			continue
		}
		ip := net.ParseIP(svc.Spec.ClusterIP)
		switch {
		case ip == nil || !serviceNet.Contains(ip):
			t.Errorf("%s: clusterIP %q is not in 10.96.0.0/12", svc.Name, svc.Spec.ClusterIP)
		case svc.Spec.ClusterIP == "10.96.0.1":
			t.Errorf("%s: got 10.96.0.1, the kubernetes service's address", svc.Name)
		case ips[svc.Spec.ClusterIP] != "":
			t.Errorf("%s and %s share clusterIP %s", ips[svc.Spec.ClusterIP], svc.Name, svc.Spec.ClusterIP)
		}
		ips[svc.Spec.ClusterIP] = svc.Name
		if len(svc.Spec.ClusterIPs) != 1 || svc.Spec.ClusterIPs[0] != svc.Spec.ClusterIP {
			t.Errorf("%s: clusterIPs %v; want [%s]", svc.Name, svc.Spec.ClusterIPs, svc.Spec.ClusterIP)
		}
		np := svc.Spec.Ports[0].NodePort
		switch {
		case np < 30000 || np > 32767:
			t.Errorf("%s: nodePort %d is not in 30000-32767", svc.Name, np)
		case ports[np] != "":
			t.Errorf("%s and %s share nodePort %d", ports[np], svc.Name, np)
		}
		ports[np] = svc.Name
	}
	if t.Failed() {
		return
	}

	// Taken addresses and ports are refused; a deleted service's are free
	// again.
	first := services[0]
	dup := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dup", Namespace: ns}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, ClusterIP: first.Spec.ClusterIP,
		Ports: []corev1.ServicePort{{Port: 80, NodePort: services[1].Spec.Ports[0].NodePort}}}}
	_, err := clients[0].CoreV1().Services(ns).Create(ctx, dup, metav1.CreateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, "")
	if err := clients[0].CoreV1().Services(ns).Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := clients[1].CoreV1().Services(ns).Delete(ctx, services[1].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reused, err := clients[1].CoreV1().Services(ns).Create(ctx, dup, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create with the deleted services' clusterIP and nodePort: %v", err)
	}
	if reused.Spec.ClusterIP != first.Spec.ClusterIP || reused.Spec.Ports[0].NodePort != services[1].Spec.Ports[0].NodePort {
		t.Errorf("reused = %s:%d; want %s:%d", reused.Spec.ClusterIP, reused.Spec.Ports[0].NodePort, first.Spec.ClusterIP, services[1].Spec.Ports[0].NodePort)
	}
}
