package proxy

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	kubeproxy "github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
	"github.com/klab-dev/klab/cluster/proxy/traffic"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// The fixture is a small cluster: a master and two workers, and four
// Services in default: the API server's own, web (a NodePort in front of
// three pods), api (one pod) and db (headless). "After" one of web's pods
// is being replaced: the old one terminates, a new one is ready.

var fixtureNodes = []runtime.Node{
	{Name: "master-1", Role: runtime.RoleMaster, Host: "172.18.0.2"},
	{Name: "worker-1", Role: runtime.RoleWorker, Host: "172.18.0.3"},
	{Name: "worker-2", Role: runtime.RoleWorker, Host: "172.18.0.4"},
}

func fixtureInfo() *lab.Info {
	return &lab.Info{Version: 1, Name: "demo", Runtime: "local", Nodes: fixtureNodes}
}

func svcObj(name, clusterIP string, port, target, nodePort int32) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: clusterIP,
			Ports: []corev1.ServicePort{{Port: port, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(target)}}},
	}
	if nodePort != 0 {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = nodePort
	}
	return s
}

// ep is one endpoint of a slice: a pod (or none), its IP and node.
type ep struct {
	pod, ip, node      string
	ready, terminating bool
}

func sliceObj(svc string, port int32, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: svc + "-x7k2p", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, e := range eps {
		x := discoveryv1.Endpoint{Addresses: []string{e.ip}, NodeName: ptr.To(e.node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e.ready), Serving: ptr.To(e.ready || e.terminating), Terminating: ptr.To(e.terminating)}}
		if e.pod != "" {
			x.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: e.pod}
		}
		s.Endpoints = append(s.Endpoints, x)
	}
	return s
}

// fixtureObjects returns the fixture's Services and EndpointSlices, before
// or after web's pod is replaced.
func fixtureObjects(after bool) ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	db := svcObj("db", corev1.ClusterIPNone, 5432, 5432, 0)
	svcs := []*corev1.Service{
		svcObj("kubernetes", "10.96.0.1", 443, 6443, 0),
		svcObj("web", "10.96.23.117", 80, 8080, 30080),
		svcObj("api", "10.96.71.4", 8080, 8080, 0),
		db,
	}
	web := []ep{
		{"web-7d9c6b5f4-2xkqp", "10.244.1.2", "worker-1", true, false},
		{"web-7d9c6b5f4-8mzvn", "10.244.2.2", "worker-2", true, false},
		{"web-7d9c6b5f4-tq4rj", "10.244.1.3", "worker-1", true, false},
	}
	if after {
		web[2].ready, web[2].terminating = false, true
		web = append(web, ep{"web-7d9c6b5f4-w5hcd", "10.244.2.3", "worker-2", true, false})
	}
	slices := []*discoveryv1.EndpointSlice{
		sliceObj("kubernetes", 6443, ep{"", "172.18.0.2", "master-1", true, false}),
		sliceObj("web", 8080, web...),
		sliceObj("api", 8080, ep{"api-5b7f9c8d6-qx2lm", "10.244.2.5", "worker-2", true, false}),
	}
	return svcs, slices
}

// renderRules is what the kube-proxy of node programs in mode for the
// objects: the real proxier's output.
func renderRules(t testing.TB, mode, node string, svcs []*corev1.Service, slices []*discoveryv1.EndpointSlice) string {
	t.Helper()
	var ip netip.Addr
	for _, n := range fixtureNodes {
		if n.Name == node {
			ip = netip.MustParseAddr(n.Host)
		}
	}
	m, err := proxier.New(mode, proxier.Config{NodeIP: ip, ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"),
		Now: func() time.Time { return uitest.Now }})
	if err != nil {
		t.Fatal(err)
	}
	m.Sync(proxier.BuildSnapshot(node, svcs, slices))
	var b bytes.Buffer
	if err := m.Render(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fakeCluster is an in-memory twin of the lab's Cluster: Services that
// tests change, kube-proxies that render real rules for them and publish
// events, a mode switch, and traffic answered by the ready endpoints in
// turn.
type fakeCluster struct {
	t testing.TB

	mu      sync.Mutex
	mode    string
	svcs    []*corev1.Service
	slices  []*discoveryv1.EndpointSlice
	changes chan struct{}
	streams map[string]chan kubeproxy.Event
	// What the view asked for.
	rulesAsked []string
	switches   []string
	sent       []lab.TrafficOptions
	// gate, when set, holds a burst after half its requests until closed.
	gate chan struct{}
	// failEvery makes every n-th request fail at the connect stage.
	failEvery int
}

func newFake(t testing.TB) *fakeCluster {
	svcs, slices := fixtureObjects(false)
	return &fakeCluster{t: t, mode: proxier.ModeIPTables, svcs: svcs, slices: slices,
		changes: make(chan struct{}, 1), streams: map[string]chan kubeproxy.Event{}}
}

func (f *fakeCluster) WatchServices(context.Context) (<-chan struct{}, error) {
	f.changes <- struct{}{}
	return f.changes, nil
}

func (f *fakeCluster) Services() ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.svcs), slices.Clone(f.slices)
}

func (f *fakeCluster) ProxyEvents(_ context.Context, node string) (<-chan kubeproxy.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan kubeproxy.Event, 16)
	f.streams[node] = ch
	return ch, nil
}

func (f *fakeCluster) ProxyStatuses(context.Context) ([]lab.NodeProxy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []lab.NodeProxy
	for _, n := range fixtureNodes {
		out = append(out, lab.NodeProxy{Node: n.Name, Status: &kubeproxy.Status{Node: n.Name, Mode: f.mode,
			IPVSScheduler: "rr", Rules: 20, LastSync: kubeproxy.SyncInfo{At: uitest.Now}}})
	}
	return out, nil
}

func (f *fakeCluster) ProxyRules(_ context.Context, node string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rulesAsked = append(f.rulesAsked, node)
	return renderRules(f.t, f.mode, node, f.svcs, f.slices), nil
}

// SwitchMode switches every kube-proxy, which each say so on its stream.
func (f *fakeCluster) SwitchMode(_ context.Context, mode string) ([]lab.NodeProxy, error) {
	f.mu.Lock()
	from := f.mode
	f.mode = mode
	f.switches = append(f.switches, mode)
	f.mu.Unlock()
	f.emit(kubeproxy.Event{Kind: kubeproxy.EventModeChanged, From: from, To: mode, Mode: mode})
	return f.ProxyStatuses(context.Background())
}

// emit publishes an event on every kube-proxy's stream.
func (f *fakeCluster) emit(e kubeproxy.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.streams {
		ch <- e
	}
}

// setObjects replaces the Services and EndpointSlices, as the API server
// would tell the informers, and the kube-proxies sync.
func (f *fakeCluster) setObjects(svcs []*corev1.Service, slices []*discoveryv1.EndpointSlice) {
	f.mu.Lock()
	f.svcs, f.slices = svcs, slices
	f.mu.Unlock()
	select {
	case f.changes <- struct{}{}:
	default:
	}
	f.emit(kubeproxy.Event{Kind: kubeproxy.EventSync})
}

// Traffic answers from the ready endpoints of the Service in turn, as a
// round-robin mode would.
func (f *fakeCluster) Traffic(ctx context.Context, o lab.TrafficOptions) (*traffic.Report, error) {
	f.mu.Lock()
	f.sent = append(f.sent, o)
	mode, gate, failEvery := f.mode, f.gate, f.failEvery
	var eps []discoveryv1.Endpoint
	for _, s := range f.slices {
		if s.Labels[discoveryv1.LabelServiceName] == o.Service {
			for _, e := range s.Endpoints {
				if *e.Conditions.Ready {
					eps = append(eps, e)
				}
			}
		}
	}
	f.mu.Unlock()
	if len(eps) == 0 {
		return nil, fmt.Errorf("no endpoints")
	}
	for seq := 1; seq <= o.Count; seq++ {
		r := traffic.Result{Seq: seq, Mode: mode, ProxyNode: o.Node, Latency: time.Millisecond}
		if failEvery > 0 && seq%failEvery == 0 {
			r.Stage, r.Err = traffic.StageConnect, "503 Service Unavailable: dial 10.244.1.3:8080: connection refused"
		} else {
			e := eps[seq%len(eps)]
			r.Pod, r.Node, r.PodIP, r.Namespace = e.TargetRef.Name, *e.NodeName, e.Addresses[0], "default"
		}
		o.OnResult(r)
		if gate != nil && seq == o.Count/2 {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return &traffic.Report{Requests: o.Count}, nil
}

// harness runs a View as Bubble Tea would: commands in goroutines, their
// messages back into Update on the test's goroutine.
type harness struct {
	t    *testing.T
	v    *View
	f    *fakeCluster
	ctx  context.Context
	msgs chan tea.Msg
	// handled lists the messages given to Update, in order.
	handled []tea.Msg
}

// start shows the fixture cluster through f in lang at w×h, and waits
// until the first rules are on screen.
func start(t *testing.T, lang i18n.Lang, w, h int, f *fakeCluster) *harness {
	t.Helper()
	hs := startView(t, lang, w, h, fixtureInfo(), func(*lab.Info) (Cluster, error) { return f, nil })
	hs.f = f
	hs.until("the first rules", func() bool { return hs.v.listed && hs.v.fetched })
	return hs
}

// startView starts a view of the cluster info describes, reached through
// connect.
func startView(t *testing.T, lang i18n.Lang, w, h int, info *lab.Info, connect func(*lab.Info) (Cluster, error)) *harness {
	t.Helper()
	c := uitest.Setup(t, lang)
	v := NewWith(c, connect)
	v.SetSize(w, h)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hs := &harness{t: t, v: v, ctx: ctx, msgs: make(chan tea.Msg, 64)}
	hs.exec(v.Start(ctx, info))
	return hs
}

func (h *harness) exec(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if batch, ok := msg.(tea.BatchMsg); ok {
			for _, c := range batch {
				h.exec(c)
			}
			return
		}
		if msg != nil {
			select {
			case h.msgs <- msg:
			case <-h.ctx.Done():
			}
		}
	}()
}

// until feeds messages to the view until cond holds.
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	h.untilWithin(10*time.Second, what, cond)
}

func (h *harness) untilWithin(timeout time.Duration, what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(timeout)
	for !cond() {
		select {
		case msg := <-h.msgs:
			h.handled = append(h.handled, msg)
			h.exec(h.v.Update(msg))
		case <-deadline:
			h.t.Fatalf("timed out waiting for %s; the view shows:\n%s", what, h.v.View())
		}
	}
}

// press sends a key and runs the command it asks for, if any: it reports
// whether there was one.
func (h *harness) press(k string) bool {
	cmd := h.v.Update(uitest.Key(k))
	h.exec(cmd)
	return cmd != nil
}
