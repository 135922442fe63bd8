package proxy

import (
	"fmt"
	"maps"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// TestProgrammedServices: the status names every proxied Service with the
// ready endpoints of its best port; a not-ready endpoint does not count,
// a headless Service is not programmed at all, and the Local traffic
// policies are reported.
func TestProgrammedServices(t *testing.T) {
	svc := func(name, ip string, ports ...string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip}}
		for i, p := range ports {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: p, Port: int32(80 + i), Protocol: corev1.ProtocolTCP})
		}
		return s
	}
	slice := func(svcName, port string, ready ...bool) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: svcName + "-" + port, Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(port), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
		for i, r := range ready {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{"10.244.1." + string(rune('1'+i))},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(r)},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("%s-%s-%d", svcName, port, i)},
			})
		}
		return s
	}
	local := func(s *corev1.Service) *corev1.Service {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
		return s
	}
	snap := proxier.BuildSnapshot("worker-1",
		[]*corev1.Service{local(svc("web", "10.96.0.10", "")), svc("two", "10.96.0.11", "a", "b"), svc("empty", "10.96.0.12", ""), svc("db", corev1.ClusterIPNone, "")},
		[]*discoveryv1.EndpointSlice{slice("web", "", true, false, true), slice("two", "a", true), slice("two", "b", true, true), slice("db", "", true)})
	got := programmedServices(snap)
	want := map[string]ProgrammedService{
		"default/web":   {Endpoints: 2, Pods: []string{"web--0", "web--2"}, ExternalLocal: true, InternalLocal: true},
		"default/two":   {Endpoints: 2, Pods: []string{"two-b-0", "two-b-1"}},
		"default/empty": {},
	}
	if !maps.EqualFunc(got, want, func(a, b ProgrammedService) bool { return reflect.DeepEqual(a, b) }) {
		t.Errorf("programmedServices = %v, want %v", got, want)
	}
	if got := programmedServices(nil); len(got) != 0 {
		t.Errorf("before the first sync: %v, want none", got)
	}
}
