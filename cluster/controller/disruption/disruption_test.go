package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
)

var webLabels = map[string]string{"app": "web"}

func budget(minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: minAvailable, MaxUnavailable: maxUnavailable,
			Selector: &metav1.LabelSelector{MatchLabels: webLabels},
		},
	}
}

func replicaSet(replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-rs", Namespace: "default", UID: "rs-uid"},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)},
	}
}

// webPod returns a Ready pod of the ReplicaSet.
func webPod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Labels: webLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-rs", UID: "rs-uid", Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func orphan(p *corev1.Pod)   { p.OwnerReferences = nil }

func ref(v intstr.IntOrString) *intstr.IntOrString { return &v }

// TestSync checks the status one sync writes: how many Pods must stay
// healthy for each way of writing a budget, and how many may go.
func TestSync(t *testing.T) {
	type counts struct{ expected, desired, healthy, allowed int32 }
	tests := []struct {
		name    string
		pdb     *policyv1.PodDisruptionBudget
		objects []runtime.Object
		want    counts
		reason  string
	}{
		{"minAvailable 2 of 3 ready allows one", budget(ref(intstr.FromInt32(2)), nil),
			[]runtime.Object{webPod("a"), webPod("b"), webPod("c")}, counts{3, 2, 3, 1}, policyv1.SufficientPodsReason},
		{"an unready pod is not healthy", budget(ref(intstr.FromInt32(2)), nil),
			[]runtime.Object{webPod("a"), webPod("b"), webPod("c", notReady)}, counts{3, 2, 2, 0}, policyv1.InsufficientPodsReason},
		{"maxUnavailable counts the owner's replicas", budget(nil, ref(intstr.FromInt32(1))),
			[]runtime.Object{replicaSet(4), webPod("a"), webPod("b"), webPod("c")}, counts{4, 3, 3, 0}, policyv1.InsufficientPodsReason},
		{"minAvailable 50% rounds up", budget(ref(intstr.FromString("50%")), nil),
			[]runtime.Object{replicaSet(3), webPod("a"), webPod("b"), webPod("c")}, counts{3, 2, 3, 1}, policyv1.SufficientPodsReason},
		{"no pods allow nothing", budget(ref(intstr.FromInt32(0)), nil), nil, counts{0, 0, 0, 0}, policyv1.InsufficientPodsReason},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objects := append([]runtime.Object{tc.pdb}, tc.objects...)
			f := controllertest.New(objects...)
			dc, err := newController(f.Context)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Index(objects...); err != nil {
				t.Fatal(err)
			}
			if err := dc.sync(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"update poddisruptionbudgets/status web"}, f.Actions()); diff != "" {
				t.Fatalf("actions (-want +got):\n%s", diff)
			}
			s := writtenStatus(t, f)
			got := counts{s.ExpectedPods, s.DesiredHealthy, s.CurrentHealthy, s.DisruptionsAllowed}
			if got != tc.want || s.ObservedGeneration != 1 {
				t.Errorf("status %+v, observedGeneration %d; want %+v and 1", got, s.ObservedGeneration, tc.want)
			}
			if c := apimeta.FindStatusCondition(s.Conditions, policyv1.DisruptionAllowedCondition); c == nil || c.Reason != tc.reason {
				t.Errorf("condition %+v; want reason %s", c, tc.reason)
			}
		})
	}
}

// TestDisruptedPods checks the evictions the API server granted: such a
// Pod is not healthy while its deletion is due, the controller looks again
// at the deadline, and past it the Pod counts once more.
func TestDisruptedPods(t *testing.T) {
	now := time.Now()
	pdb := budget(ref(intstr.FromInt32(1)), nil)
	pdb.Status.DisruptedPods = map[string]metav1.Time{"a": metav1.NewTime(now.Add(-time.Minute)), "b": metav1.NewTime(now.Add(-3 * time.Minute)), "gone": metav1.NewTime(now)}
	objects := []runtime.Object{pdb, webPod("a"), webPod("b"), webPod("c")}
	f := controllertest.New(objects...)
	dc, err := newController(f.Context)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Index(objects...); err != nil {
		t.Fatal(err)
	}
	err = dc.sync(context.Background(), "default/web")
	if err == nil || !isRequeueAround(err, time.Minute) {
		t.Errorf("sync = %v; want a requeue in about a minute, when a's deletion is overdue", err)
	}
	s := writtenStatus(t, f)
	if _, ok := s.DisruptedPods["a"]; !ok || len(s.DisruptedPods) != 1 || s.CurrentHealthy != 2 || s.DisruptionsAllowed != 1 {
		t.Errorf("status %+v; want only a disrupted, b and c healthy, one disruption allowed", s)
	}
	if diff := cmp.Diff([]string{"Warning NotDeleted Pod was expected by PDB default/web to be deleted but it wasn't"}, f.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestFailSafe: a percentage budget over a Pod whose owner cannot be
// found allows nothing and says why.
func TestFailSafe(t *testing.T) {
	objects := []runtime.Object{budget(nil, ref(intstr.FromString("10%"))), webPod("a"), webPod("b", orphan)}
	f := controllertest.New(objects...)
	dc, err := newController(f.Context)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Index(objects...); err != nil {
		t.Fatal(err)
	}
	if err := dc.sync(context.Background(), "default/web"); err == nil {
		t.Fatal("sync succeeded without the pods' ReplicaSet")
	}
	s := writtenStatus(t, f)
	c := apimeta.FindStatusCondition(s.Conditions, policyv1.DisruptionAllowedCondition)
	if s.DisruptionsAllowed != 0 || c == nil || c.Reason != policyv1.SyncFailedReason || c.Message != `found no controllers for pod "a"` {
		t.Errorf("status %+v, condition %+v", s, c)
	}
	events := f.Events()
	if len(events) != 1 || events[0] != `Warning CalculateExpectedPodCountFailed Failed to calculate the number of expected pods: found no controllers for pod "a"` {
		t.Errorf("events %q", events)
	}
}

func writtenStatus(t *testing.T, f *controllertest.Fixture) policyv1.PodDisruptionBudgetStatus {
	t.Helper()
	var last *policyv1.PodDisruptionBudget
	for _, a := range f.Client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			last = u.GetObject().(*policyv1.PodDisruptionBudget)
		}
	}
	if last == nil {
		t.Fatal("no status written")
	}
	return last.Status
}

// isRequeueAround reports whether err asks for the key again after
// about d (within a few seconds of the test's own run time).
func isRequeueAround(err error, d time.Duration) bool {
	after, ok := strings.CutPrefix(err.Error(), "requeue after ")
	if !ok {
		return false
	}
	got, perr := time.ParseDuration(after)
	return perr == nil && got > d-5*time.Second && got <= d
}
