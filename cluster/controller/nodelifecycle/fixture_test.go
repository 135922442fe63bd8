package nodelifecycle

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// t0 is "now" when a test starts.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture holds fake clients and informer caches for one test, as
// sample-controller's tests do: objects go into both the fake clientset
// and the informers' stores, and a test asserts the actions one sync sent.
type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder

	mu          sync.Mutex
	transitions []string
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objects...)
	return &fixture{
		t:        t,
		client:   client,
		factory:  informers.NewSharedInformerFactory(client, 0),
		clock:    clocktesting.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(100),
	}
}

// ctx carries the fixture's transition observer.
func (f *fixture) ctx() context.Context {
	return WithObserver(context.Background(), func(t Transition) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.transitions = append(f.transitions, transitionString(t))
	})
}

// cache puts objects into the informers' stores, as a synced informer
// would have them.
func (f *fixture) cache(objects ...runtime.Object) {
	f.t.Helper()
	for _, obj := range objects {
		var err error
		switch o := obj.(type) {
		case *v1.Node:
			err = f.factory.Core().V1().Nodes().Informer().GetIndexer().Add(o)
		case *v1.Pod:
			err = f.factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *coordv1.Lease:
			err = f.factory.Coordination().V1().Leases().Informer().GetIndexer().Add(o)
		default:
			err = fmt.Errorf("cannot cache %T", obj)
		}
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

// recache replaces the cached node with what the fake API server holds,
// as the informer would after a watch event.
func (f *fixture) recache(name string) {
	f.t.Helper()
	node, err := f.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.factory.Core().V1().Nodes().Informer().GetIndexer().Update(node); err != nil {
		f.t.Fatal(err)
	}
}

// actions returns the requests sent since the last call, as
// "verb resource[/subresource] [namespace/]name", leaving out the list and
// watch requests of informers.
func (f *fixture) actions() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		out = append(out, actionString(a))
	}
	f.client.ClearActions()
	return out
}

func actionString(a core.Action) string {
	resource := a.GetResource().Resource
	if sub := a.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	var name string
	switch a := a.(type) {
	case core.GetAction:
		name = a.GetName()
	case core.DeleteAction:
		name = a.GetName()
	case core.PatchAction:
		name = a.GetName()
	case core.CreateAction:
		if m, err := metaName(a.GetObject()); err == nil {
			name = m
		}
	case core.UpdateAction:
		if m, err := metaName(a.GetObject()); err == nil {
			name = m
		}
	}
	if ns := a.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return a.GetVerb() + " " + resource + " " + name
}

func metaName(obj runtime.Object) (string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return "", fmt.Errorf("%T has no metadata", obj)
	}
	return m.GetName(), nil
}

// events drains the recorded events ("Type Reason Message").
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// takeTransitions drains the reported transitions.
func (f *fixture) takeTransitions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.transitions
	f.transitions = nil
	return out
}

func transitionString(t Transition) string {
	parts := []string{t.Kind}
	for _, s := range []string{t.Node, t.Pod, t.Taint} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if t.Kind == TransitionZoneState {
		parts = append(parts, fmt.Sprintf("zone=%q", t.Zone))
	}
	if t.From != "" || t.To != "" {
		parts = append(parts, t.From+"->"+t.To)
	}
	return strings.Join(parts, " ")
}

// node returns what the fake API server holds.
func (f *fixture) node(name string) *v1.Node {
	f.t.Helper()
	node, err := f.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return node
}

// taints lists a node's taints as "key:Effect", sorted.
func taints(node *v1.Node) []string {
	var out []string
	for i := range node.Spec.Taints {
		out = append(out, node.Spec.Taints[i].ToString())
	}
	sort.Strings(out)
	return out
}

// nodeOpt changes a test node.
type nodeOpt func(*v1.Node)

// newNode returns a node created an hour before t0 whose kubelet posted
// Ready=ready (with healthy pressure conditions) at heartbeat.
func newNode(name string, ready v1.ConditionStatus, heartbeat time.Time, opts ...nodeOpt) *v1.Node {
	hb := metav1.NewTime(heartbeat)
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
	}
	reason := map[v1.ConditionStatus]string{v1.ConditionTrue: "KubeletReady", v1.ConditionFalse: "KubeletNotReady", v1.ConditionUnknown: reasonNodeStatusUnknown}[ready]
	node.Status.Conditions = []v1.NodeCondition{
		{Type: v1.NodeReady, Status: ready, Reason: reason, LastHeartbeatTime: hb, LastTransitionTime: hb},
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: hb},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: hb},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: hb},
	}
	for _, o := range opts {
		o(node)
	}
	return node
}

func withTaints(taints ...v1.Taint) nodeOpt {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, taints...) }
}

func withCondition(t v1.NodeConditionType, s v1.ConditionStatus) nodeOpt {
	return func(n *v1.Node) {
		if c := getNodeCondition(&n.Status, t); c != nil {
			c.Status = s
			return
		}
		n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: t, Status: s})
	}
}

func unschedulable() nodeOpt { return func(n *v1.Node) { n.Spec.Unschedulable = true } }

// newPod returns a running pod on node whose Ready condition is ready.
func newPod(name, node string, ready v1.ConditionStatus, tolerations ...v1.Toleration) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{NodeName: node, Tolerations: tolerations},
		Status: v1.PodStatus{
			Phase: v1.PodRunning,
			Conditions: []v1.PodCondition{
				{Type: v1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
			},
		},
	}
}

func newLease(node string, renew time.Time) *coordv1.Lease {
	rt := metav1.NewMicroTime(renew)
	return &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: v1.NamespaceNodeLease, Name: node},
		Spec:       coordv1.LeaseSpec{RenewTime: &rt},
	}
}

var (
	metav1GetOptions    = metav1.GetOptions{}
	metav1UpdateOptions = metav1.UpdateOptions{}
)
