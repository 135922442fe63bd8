package replicaset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newRS(name string, replicas int32) *appsv1.ReplicaSet {
	labels := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app"}}},
			},
		},
	}
}

// podOpt shapes a test pod.
type podOpt func(*corev1.Pod)

func newPod(name string, rs *appsv1.ReplicaSet, opts ...podOpt) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID(name + "-uid"),
			Labels:            rs.Spec.Template.Labels,
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(rs, controllerKind)},
		},
		Spec:   corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(pod)
	}
	return pod
}

func ready(since time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-since)),
		}}
	}
}

func onNode(node string) podOpt       { return func(p *corev1.Pod) { p.Spec.NodeName = node } }
func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func orphan() podOpt                  { return func(p *corev1.Pod) { p.OwnerReferences = nil } }
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: n}}
	}
}
func deleting() podOpt {
	return func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(now)) }
}
func labelled(l map[string]string) podOpt { return func(p *corev1.Pod) { p.Labels = l } }
func created(ago time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-ago)) }
}
func deletionCost(c string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.PodDeletionCost: c} }
}

// fixture builds a controller over objects held by both the fake API and
// the informers' caches.
func fixture(t *testing.T, objects ...runtime.Object) (*controllertest.Fixture, *Controller) {
	t.Helper()
	f := controllertest.New(objects...)
	rsc, err := newController(f.Context)
	if err != nil {
		t.Fatal(err)
	}
	rsc.clock = clocktesting.NewFakePassiveClock(now)
	if err := f.Index(objects...); err != nil {
		t.Fatal(err)
	}
	return f, rsc
}

// lastStatus returns the status of the last ReplicaSet status update.
func lastStatus(t *testing.T, f *controllertest.Fixture) appsv1.ReplicaSetStatus {
	t.Helper()
	actions := f.Client.Actions()
	for i := len(actions) - 1; i >= 0; i-- {
		if u, ok := actions[i].(clienttesting.UpdateAction); ok && actions[i].GetSubresource() == "status" {
			return u.GetObject().(*appsv1.ReplicaSet).Status
		}
	}
	t.Fatal("no status update")
	return appsv1.ReplicaSetStatus{}
}

func TestSync(t *testing.T) {
	web := newRS("web", 3)
	synced := func(rs *appsv1.ReplicaSet, replicas, ready, available int32) *appsv1.ReplicaSet {
		rs = rs.DeepCopy()
		rs.Status = appsv1.ReplicaSetStatus{
			Replicas: replicas, FullyLabeledReplicas: replicas, ReadyReplicas: ready, AvailableReplicas: available,
			ObservedGeneration: rs.Generation, TerminatingReplicas: ptr.To[int32](0),
		}
		return rs
	}
	tests := []struct {
		name        string
		objects     []runtime.Object
		wantActions []string
		wantEvents  []string
		wantStatus  *appsv1.ReplicaSetStatus
	}{
		{
			name:        "scale up from zero creates the missing pods",
			objects:     []runtime.Object{web},
			wantActions: []string{"create pods web-", "create pods web-", "create pods web-", "update replicasets/status web"},
			wantEvents: []string{
				"Normal SuccessfulCreate Created pod: web-1",
				"Normal SuccessfulCreate Created pod: web-2",
				"Normal SuccessfulCreate Created pod: web-3",
			},
			wantStatus: &appsv1.ReplicaSetStatus{ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)},
		},
		{
			name:        "scale down deletes the cheapest pods",
			objects:     []runtime.Object{newRS("web", 1), newPod("a", web, ready(time.Hour)), newPod("b", web, phase(corev1.PodPending)), newPod("c", web)},
			wantActions: []string{"delete pods b", "delete pods c", "update replicasets/status web"},
			wantEvents:  []string{"Normal SuccessfulDelete Deleted pod: b", "Normal SuccessfulDelete Deleted pod: c"},
			wantStatus: &appsv1.ReplicaSetStatus{
				Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 1, AvailableReplicas: 1,
				ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0),
			},
		},
		{
			name:        "adopts a matching orphan instead of creating",
			objects:     []runtime.Object{newRS("web", 1), newPod("stray", web, orphan())},
			wantActions: []string{"get replicasets web", "patch pods stray", "update replicasets/status web"},
			wantStatus: &appsv1.ReplicaSetStatus{
				Replicas: 1, FullyLabeledReplicas: 1, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0),
			},
		},
		{
			name:        "releases a pod whose labels stopped matching and replaces it",
			objects:     []runtime.Object{newRS("web", 1), newPod("moved", web, labelled(map[string]string{"app": "debug"}))},
			wantActions: []string{"patch pods moved", "create pods web-", "update replicasets/status web"},
			wantEvents:  []string{"Normal SuccessfulCreate Created pod: web-1"},
		},
		{
			name: "ignores pods controlled by someone else",
			objects: []runtime.Object{newRS("web", 1), newPod("theirs", web, func(p *corev1.Pod) {
				p.OwnerReferences[0].UID = "other-uid"
			})},
			wantActions: []string{"create pods web-", "update replicasets/status web"},
			wantEvents:  []string{"Normal SuccessfulCreate Created pod: web-1"},
		},
		{
			name: "finished and terminating pods are replaced",
			objects: []runtime.Object{newRS("web", 3), newPod("done", web, phase(corev1.PodSucceeded)),
				newPod("going", web, deleting()), newPod("running", web, ready(time.Hour))},
			wantActions: []string{"create pods web-", "create pods web-", "update replicasets/status web"},
			wantEvents:  []string{"Normal SuccessfulCreate Created pod: web-1", "Normal SuccessfulCreate Created pod: web-2"},
			wantStatus: &appsv1.ReplicaSetStatus{
				Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
				ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](1),
			},
		},
		{
			name:    "steady state writes nothing",
			objects: []runtime.Object{synced(newRS("web", 1), 1, 1, 1), newPod("a", web, ready(time.Hour))},
		},
		{
			name: "a ready pod is not available before minReadySeconds",
			objects: []runtime.Object{func() *appsv1.ReplicaSet {
				rs := newRS("web", 1)
				rs.Spec.MinReadySeconds = 30
				return rs
			}(), newPod("a", web, ready(10*time.Second))},
			wantActions: []string{"update replicasets/status web"},
			wantStatus: &appsv1.ReplicaSetStatus{
				Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0),
			},
		},
		{
			name: "a ReplicaSet being deleted only reports",
			objects: []runtime.Object{func() *appsv1.ReplicaSet {
				rs := newRS("web", 3)
				rs.DeletionTimestamp = ptr.To(metav1.NewTime(now))
				rs.Finalizers = []string{metav1.FinalizerDeleteDependents}
				return rs
			}()},
			wantActions: []string{"update replicasets/status web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, rsc := fixture(t, tt.objects...)
			if err := rsc.sync(context.Background(), "default/web"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if diff := cmp.Diff(controllertest.Sorted(tt.wantActions), controllertest.Sorted(f.Actions())); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(controllertest.Sorted(tt.wantEvents), controllertest.Sorted(f.Events())); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tt.wantStatus != nil {
				if diff := cmp.Diff(*tt.wantStatus, lastStatus(t, f)); diff != "" {
					t.Errorf("status (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestCreatedPodsCarryTemplateAndControllerRef(t *testing.T) {
	f, rsc := fixture(t, newRS("web", 1))
	if err := rsc.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	pods, err := f.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods = %v, %v; want one", pods, err)
	}
	pod := pods.Items[0]
	ref := metav1.GetControllerOf(&pod)
	if pod.GenerateName != "web-" || pod.Labels["app"] != "web" || ref == nil || ref.UID != "web-uid" ||
		ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("pod = %+v, want generateName web-, label app=web and a blocking ReplicaSet controller ref", pod.ObjectMeta)
	}
}

func TestExpectationsBlockASecondCreate(t *testing.T) {
	f, rsc := fixture(t, newRS("web", 2))
	ctx := context.Background()
	if err := rsc.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	f.Client.ClearActions()
	// The informer has not shown the two new pods: a second sync must
	// not create them again.
	if err := rsc.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.Actions(); slices.Contains(got, "create pods web-") {
		t.Errorf("second sync actions = %v, want no create", got)
	}
	// Once the informer shows them, the expectations are met.
	for _, name := range []string{"web-1", "web-2"} {
		pod, err := f.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rsc.addPod(pod)
	}
	if !rsc.expectations.SatisfiedExpectations("default/web") {
		t.Error("expectations not satisfied after both creates were observed")
	}
}

func TestFailedCreateSetsReplicaFailure(t *testing.T) {
	f, rsc := fixture(t, newRS("web", 3))
	f.Client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("exceeded quota"))
	})
	err := rsc.sync(context.Background(), "default/web")
	if err == nil {
		t.Fatal("sync succeeded, want the create error")
	}
	// Slow start: one create fails, the other two are never sent.
	want := []string{"create pods web-", "update replicasets/status web"}
	if diff := cmp.Diff(want, f.Actions()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	st := lastStatus(t, f)
	if len(st.Conditions) != 1 || st.Conditions[0].Type != appsv1.ReplicaSetReplicaFailure ||
		st.Conditions[0].Reason != "FailedCreate" || st.Conditions[0].Message != err.Error() {
		t.Errorf("conditions = %+v, want ReplicaFailure FailedCreate %q", st.Conditions, err)
	}
	wantEvent := fmt.Sprintf("Warning FailedCreate Error creating: %v", err)
	if diff := cmp.Diff([]string{wantEvent}, f.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !rsc.expectations.SatisfiedExpectations("default/web") {
		t.Error("failed and skipped creates still expected")
	}
}

func TestDeletedReplicaSetForgetsExpectations(t *testing.T) {
	f, rsc := fixture(t)
	rsc.expectations.ExpectCreations("default/web", 3)
	if err := rsc.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.Actions(); len(got) != 0 {
		t.Errorf("actions = %v, want none", got)
	}
	if !rsc.expectations.SatisfiedExpectations("default/web") {
		t.Error("expectations of a deleted ReplicaSet kept")
	}
}

func TestPodsToDelete(t *testing.T) {
	web := newRS("web", 1)
	tests := []struct {
		name string
		pods []*corev1.Pod
		// related defaults to pods.
		related []*corev1.Pod
		diff    int
		want    []string
	}{
		{
			name: "unassigned before assigned",
			pods: []*corev1.Pod{newPod("assigned", web), newPod("unassigned", web, onNode(""))},
			diff: 1, want: []string{"unassigned"},
		},
		{
			name: "pending before unknown before running",
			pods: []*corev1.Pod{newPod("running", web), newPod("unknown", web, phase(corev1.PodUnknown)), newPod("pending", web, phase(corev1.PodPending))},
			diff: 2, want: []string{"pending", "unknown"},
		},
		{
			name: "not ready before ready",
			pods: []*corev1.Pod{newPod("ready", web, ready(time.Hour)), newPod("not-ready", web)},
			diff: 1, want: []string{"not-ready"},
		},
		{
			name: "lower deletion cost first",
			pods: []*corev1.Pod{newPod("cheap", web, ready(time.Hour), deletionCost("-10")), newPod("dear", web, ready(time.Hour), deletionCost("100"))},
			diff: 1, want: []string{"cheap"},
		},
		{
			name: "doubled up on a node before alone",
			pods: []*corev1.Pod{newPod("alone", web, ready(time.Hour), onNode("node-b")), newPod("crowded", web, ready(time.Hour), onNode("node-a"))},
			related: []*corev1.Pod{
				newPod("alone", web, onNode("node-b")), newPod("crowded", web, onNode("node-a")), newPod("sibling", web, onNode("node-a")),
			},
			diff: 1, want: []string{"crowded"},
		},
		{
			name: "ready for less time first",
			pods: []*corev1.Pod{newPod("veteran", web, ready(10*time.Hour)), newPod("newcomer", web, ready(10*time.Second))},
			diff: 1, want: []string{"newcomer"},
		},
		{
			name: "more restarts first",
			pods: []*corev1.Pod{newPod("steady", web, ready(time.Hour), restarts(0)), newPod("flaky", web, ready(time.Hour), restarts(5))},
			diff: 1, want: []string{"flaky"},
		},
		{
			name: "newer first",
			pods: []*corev1.Pod{newPod("old", web, created(48*time.Hour)), newPod("new", web, created(time.Minute))},
			diff: 1, want: []string{"new"},
		},
		{
			name: "all of them without sorting",
			pods: []*corev1.Pod{newPod("x", web), newPod("y", web)},
			diff: 2, want: []string{"x", "y"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			related := tt.related
			if related == nil {
				related = tt.pods
			}
			var got []string
			for _, p := range podsToDelete(tt.pods, related, tt.diff, metav1.NewTime(now)) {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pods to delete (-want +got):\n%s", diff)
			}
		})
	}
}
