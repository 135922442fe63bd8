package statefulset

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
)

func newSet(replicas int32, policy appsv1.PodManagementPolicyType) *appsv1.StatefulSet {
	labels := map[string]string{"app": "web"}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid", Generation: 1},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas), ServiceName: "web", PodManagementPolicy: policy,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
			},
		},
	}
}

// revisionOf is the ControllerRevision of set's template, numbered n, as
// the controller stores it.
func revisionOf(t *testing.T, set *appsv1.StatefulSet, n int64) *appsv1.ControllerRevision {
	t.Helper()
	cr, err := newRevision(set, n, ptr.To[int32](0))
	if err != nil {
		t.Fatal(err)
	}
	cr.UID = types.UID(cr.Name + "-uid")
	return cr
}

// recorded returns set as the controller left it once its template was
// current: its status names the revision of that template.
func recorded(t *testing.T, set *appsv1.StatefulSet) *appsv1.StatefulSet {
	t.Helper()
	set = set.DeepCopy()
	set.Status.CurrentRevision = revisionOf(t, set, 1).Name
	return set
}

// withImage returns a copy of set with another image: a new template.
func withImage(set *appsv1.StatefulSet, image string) *appsv1.StatefulSet {
	set = set.DeepCopy()
	set.Spec.Template.Spec.Containers[0].Image = image
	set.Generation++
	return set
}

// pod returns ordinal i of set, of the revision of set's template,
// Running and Ready unless told otherwise.
func pod(set *appsv1.StatefulSet, i int, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := newPod(set, i)
	cr, err := newRevision(set, 1, ptr.To[int32](0))
	if err != nil {
		panic(err)
	}
	p.Labels[podRevisionLabel] = cr.Name
	p.UID = types.UID(p.Name + "-uid")
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func pending(p *corev1.Pod) { p.Status = corev1.PodStatus{Phase: corev1.PodPending} }
func orphan(p *corev1.Pod)  { p.OwnerReferences = nil }
func relabelled(p *corev1.Pod) {
	p.Labels["app"] = "other"
}
func renamed(name string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Name = name } }
func terminating(p *corev1.Pod) {
	p.DeletionTimestamp = ptr.To(metav1.Now())
}

// TestSync checks the actions of one sync: ordered creation from ordinal
// 0 up, each Pod waiting for the one before it, ordered removal from the
// highest ordinal down, and all at once with the Parallel policy; and a
// rolling update from the highest ordinal down to the partition, one
// healthy Pod at a time. Every case but the first starts with the
// revision of the set's first template stored.
func TestSync(t *testing.T) {
	ordered, parallel := newSet(3, appsv1.OrderedReadyPodManagement), newSet(3, appsv1.ParallelPodManagement)
	down := newSet(1, appsv1.OrderedReadyPodManagement)
	v1 := recorded(t, ordered)
	v2 := withImage(v1, "nginx:1.28")
	rev1, rev2 := revisionOf(t, v1, 1), revisionOf(t, v2, 2)
	partitioned := withImage(v1, "nginx:1.28")
	partitioned.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
	onDelete := withImage(v1, "nginx:1.28")
	onDelete.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	tests := []struct {
		name        string
		objects     []runtime.Object
		wantActions []string
	}{
		{"a new set records its first revision and makes web-0 first", []runtime.Object{ordered},
			[]string{"create controllerrevisions " + rev1.Name, "create pods web-0", "update statefulsets/status web"}},
		{"web-1 waits for web-0 to be ready", []runtime.Object{ordered, pod(ordered, 0, pending)},
			[]string{"update statefulsets/status web"}},
		{"web-1 follows a ready web-0", []runtime.Object{ordered, pod(ordered, 0)},
			[]string{"create pods web-1", "update statefulsets/status web"}},
		{"a missing web-0 is made again before anything else", []runtime.Object{ordered, pod(ordered, 1)},
			[]string{"create pods web-0", "update statefulsets/status web"}},
		{"parallel makes them all at once", []runtime.Object{parallel},
			[]string{"create pods web-0", "create pods web-1", "create pods web-2", "update statefulsets/status web"}},
		{"scale down removes the highest ordinal first", []runtime.Object{down, pod(down, 0), pod(down, 1), pod(down, 2)},
			[]string{"delete pods web-2", "update statefulsets/status web"}},
		{"and waits for it to be gone", []runtime.Object{down, pod(down, 0), pod(down, 1), pod(down, 2, terminating)},
			[]string{"update statefulsets/status web"}},
		{"scale down waits for the Pods that stay to be healthy", []runtime.Object{down, pod(down, 0, pending), pod(down, 1)},
			[]string{"update statefulsets/status web"}},
		{"a new template is a new revision, rolled out from the highest ordinal", []runtime.Object{v2, pod(v1, 0), pod(v1, 1), pod(v1, 2)},
			[]string{"create controllerrevisions " + rev2.Name, "delete pods web-2", "update statefulsets/status web"}},
		{"the replaced Pod comes back at the update revision", []runtime.Object{v2, rev2, pod(v1, 0), pod(v1, 1)},
			[]string{"create pods web-2", "update statefulsets/status web"}},
		{"the next waits for the replaced Pod to be ready", []runtime.Object{v2, rev2, pod(v1, 0), pod(v1, 1), pod(v2, 2, pending)},
			[]string{"update statefulsets/status web"}},
		{"then the next ordinal down goes", []runtime.Object{v2, rev2, pod(v1, 0), pod(v1, 1), pod(v2, 2)},
			[]string{"delete pods web-1", "update statefulsets/status web"}},
		{"ordinals below the partition keep the old revision", []runtime.Object{partitioned, revisionOf(t, partitioned, 2), pod(v1, 0), pod(v1, 1), pod(partitioned, 2)},
			[]string{"update statefulsets/status web"}},
		{"OnDelete leaves the Pods to the user", []runtime.Object{onDelete, pod(v1, 0), pod(v1, 1), pod(v1, 2)},
			[]string{"create controllerrevisions " + revisionOf(t, onDelete, 2).Name, "update statefulsets/status web"}},
		{"an orphan named as a member is adopted (after a fresh read of the set) and counts", []runtime.Object{ordered, pod(ordered, 0, orphan)},
			[]string{"get statefulsets web", "patch pods web-0", "create pods web-1", "update statefulsets/status web"}},
		{"an orphan of another name is not the set's", []runtime.Object{ordered, pod(ordered, 0, orphan, renamed("db-0"))},
			[]string{"create pods web-0", "update statefulsets/status web"}},
		{"an owned Pod that stopped matching is released", []runtime.Object{ordered, pod(ordered, 1, relabelled)},
			[]string{"patch pods web-1", "create pods web-0", "update statefulsets/status web"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if i > 0 {
				tc.objects = append(tc.objects, rev1)
			}
			f := controllertest.New(tc.objects...)
			ssc, err := newController(f.Context)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Index(tc.objects...); err != nil {
				t.Fatal(err)
			}
			if err := ssc.sync(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantActions, f.Actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodIdentity checks what makes a Pod web-1 and not just any Pod:
// its name, hostname, subdomain and labels.
func TestPodIdentity(t *testing.T) {
	f := controllertest.New(newSet(3, appsv1.ParallelPodManagement))
	set := newSet(3, appsv1.ParallelPodManagement)
	ssc, err := newController(f.Context)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Index(set); err != nil {
		t.Fatal(err)
	}
	if err := ssc.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	for _, a := range f.Client.Actions() {
		c, ok := a.(clienttesting.CreateAction)
		if !ok || a.GetVerb() != "create" {
			continue
		}
		if p, ok := c.GetObject().(*corev1.Pod); ok && p.Name == "web-1" {
			got = p
		}
	}
	if got == nil {
		t.Fatal("no web-1 created")
	}
	want := map[string]string{"app": "web", "statefulset.kubernetes.io/pod-name": "web-1", "apps.kubernetes.io/pod-index": "1",
		"controller-revision-hash": revisionOf(t, set, 1).Name}
	if diff := cmp.Diff(want, got.Labels); diff != "" || got.Spec.Hostname != "web-1" || got.Spec.Subdomain != "web" ||
		metav1.GetControllerOf(got) == nil || metav1.GetControllerOf(got).UID != "web-uid" {
		t.Errorf("web-1: labels (-want +got) %s, hostname %q subdomain %q owner %v", diff, got.Spec.Hostname, got.Spec.Subdomain, got.OwnerReferences)
	}
	ordinal, ok := ordinalOf(set, got)
	if !ok || ordinal != 1 {
		t.Errorf("ordinalOf(web-1) = %d, %v", ordinal, ok)
	}
	for _, name := range []string{"web", "web-", "web-01", "web--1", "webx-1", "web-a"} {
		if _, ok := ordinalOf(set, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}); ok {
			t.Errorf("ordinalOf(%q) accepted", name)
		}
	}
}

// TestMinReadySeconds: with minReadySeconds, the next ordinal waits until
// the one before has been Ready that long (upstream's
// isRunningAndAvailable), the set is looked at again when it will be, and
// only then is the Pod counted in status.availableReplicas.
func TestMinReadySeconds(t *testing.T) {
	set := newSet(3, appsv1.OrderedReadyPodManagement)
	set.Spec.MinReadySeconds = 30
	readyAgo := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Now().Add(-d))
		}
	}
	tests := []struct {
		name          string
		pod           *corev1.Pod
		wantActions   []string
		wantRequeue   bool
		wantAvailable int32
	}{
		{"web-1 waits for web-0 to be available", pod(set, 0, readyAgo(time.Second)),
			[]string{"update statefulsets/status web"}, true, 0},
		{"web-1 follows an available web-0", pod(set, 0, readyAgo(time.Minute)),
			[]string{"create pods web-1", "update statefulsets/status web"}, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objects := []runtime.Object{set, tc.pod}
			f := controllertest.New(objects...)
			ssc, err := newController(f.Context)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Index(objects...); err != nil {
				t.Fatal(err)
			}
			err = ssc.sync(context.Background(), "default/web")
			if (err != nil) != tc.wantRequeue {
				t.Fatalf("sync error = %v, want a requeue: %v", err, tc.wantRequeue)
			}
			actions := f.Actions()
			if len(actions) > 0 && actions[0] != tc.wantActions[0] && strings.HasPrefix(actions[0], "create controllerrevisions") {
				actions = actions[1:]
			}
			if diff := cmp.Diff(tc.wantActions, actions); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			got, err := f.Client.AppsV1().StatefulSets("default").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.AvailableReplicas != tc.wantAvailable || got.Status.ReadyReplicas != 1 {
				t.Errorf("ready, available = %d, %d; want 1, %d", got.Status.ReadyReplicas, got.Status.AvailableReplicas, tc.wantAvailable)
			}
		})
	}
}

// TestOrphanWakesItsSet: an orphan Pod's events wake the sets that would
// adopt it (matching selector, named as a member), and no other.
func TestOrphanWakesItsSet(t *testing.T) {
	set := newSet(3, appsv1.OrderedReadyPodManagement)
	f := controllertest.New(set)
	ssc, err := newController(f.Context)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Index(set); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want int
	}{
		{pod(set, 0, orphan), 1},
		{pod(set, 0, orphan, renamed("db-0")), 0},
		{pod(set, 0, orphan, relabelled), 0},
		{pod(set, 0, orphan, terminating), 0},
	} {
		ssc.enqueueOwner(tc.pod)
		if got := ssc.queue.Len(); got != tc.want {
			t.Errorf("%s labels %v: %d sets woken, want %d", tc.pod.Name, tc.pod.Labels, got, tc.want)
		}
		for ssc.queue.Len() > 0 {
			key, _ := ssc.queue.Get()
			ssc.queue.Done(key)
			ssc.queue.Forget(key)
		}
	}
}
