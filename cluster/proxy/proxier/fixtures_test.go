package proxier

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const testNode = "worker-1"

var (
	testNodeIP      = netip.MustParseAddr("172.18.0.3")
	testClusterCIDR = netip.MustParsePrefix("10.244.0.0/16")
	// outsideClient is a host outside the cluster; podClient a pod.
	outsideClient = "192.168.7.20"
	podClient     = "10.244.1.9"
)

// testClock is a settable clock for session affinity timeouts.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func testConfig(clock *testClock) Config {
	return Config{NodeIP: testNodeIP, ClusterCIDR: testClusterCIDR, Now: clock.Now}
}

// newMode builds a mode by name with the test config.
func newMode(t testing.TB, name string, clock *testClock) Mode {
	t.Helper()
	m, err := New(name, testConfig(clock))
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return m
}

type serviceOption func(*corev1.Service)

func withNodePort(port int32) serviceOption {
	return func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = port
	}
}

func withInternalLocal() serviceOption {
	return func(s *corev1.Service) {
		s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
	}
}

func withExternalLocal() serviceOption {
	return func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
}

func withAffinity(seconds int32) serviceOption {
	return func(s *corev1.Service) {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(seconds)}}
	}
}

// service is a ClusterIP Service with one TCP port named "http" on 80.
func service(ns, name, clusterIP string, opts ...serviceOption) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: clusterIP,
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// ep describes one endpoint of a slice.
type ep struct {
	ip, node                       string
	notReady, serving, terminating bool
}

// slice is an IPv4 EndpointSlice for the "http" port of a service, target
// port 8080.
func slice(ns, svc string, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-abc", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for i, e := range eps {
		cond := discoveryv1.EndpointConditions{Ready: ptr.To(!e.notReady)}
		if e.notReady {
			cond.Serving = ptr.To(e.serving)
			cond.Terminating = ptr.To(e.terminating)
		}
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.ip},
			Conditions: cond,
			NodeName:   ptr.To(e.node),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: fmt.Sprintf("%s-%d", svc, i)},
		})
	}
	return s
}

// spn is the ServicePortName of a test service's "http" port.
func spn(ns, name string) ServicePortName {
	return ServicePortName{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}, Port: "http", Protocol: corev1.ProtocolTCP}
}

// threeEndpoints are the endpoints of the usual test service: one on this
// node, two elsewhere.
var threeEndpoints = []ep{
	{ip: "10.244.1.5", node: testNode},
	{ip: "10.244.2.5", node: "worker-2"},
	{ip: "10.244.3.5", node: "worker-3"},
}

// webSnapshot is one Service "default/web" with the given endpoints.
func webSnapshot(eps []ep, opts ...serviceOption) *Snapshot {
	return BuildSnapshot(testNode,
		[]*corev1.Service{service("default", "web", "10.96.0.10", opts...)},
		[]*discoveryv1.EndpointSlice{slice("default", "web", eps...)})
}

var web = spn("default", "web")

// countPicks picks n times and counts the endpoints reached by IP.
func countPicks(t *testing.T, m Mode, n int, client string, via EntryKind, rng *rand.Rand) map[string]int {
	t.Helper()
	counts := make(map[string]int)
	for i := 0; i < n; i++ {
		e, err := m.Pick(web, client, via, rng)
		if err != nil {
			t.Fatalf("%s: pick %d: %v", m.Name(), i, err)
		}
		counts[e.IP.String()]++
	}
	return counts
}
