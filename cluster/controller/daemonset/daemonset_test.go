package daemonset

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
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
	"github.com/klab-dev/klab/cluster/controller/internal/history"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newDS(opts ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "agent-uid", Generation: 1},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "klab/app"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{
					MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0)),
				},
			},
		},
	}
	for _, o := range opts {
		o(ds)
	}
	return ds
}

func nodeSelector(ds *appsv1.DaemonSet) {
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "worker"}
}

func newNode(name string, opts ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"role": "worker"}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func tainted(key string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

func unlabelled(n *corev1.Node) { n.Labels = nil }

// daemonPod returns a pod of ds bound to node, of revision hash.
func daemonPod(name string, ds *appsv1.DaemonSet, node, hash string, opts ...func(*corev1.Pod)) *corev1.Pod {
	labels := map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: hash}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Labels: labels,
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Spec:   corev1.PodSpec{NodeName: node, Affinity: replaceNodeNameAffinity(nil, node)},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
}

func unbound(p *corev1.Pod) { p.Spec.NodeName = "" }

// templateHash is the controller-revision-hash of ds's current template.
func templateHash(ds *appsv1.DaemonSet) string {
	return controllerutil.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
}

// currentRevision is the ControllerRevision of ds's template, as the
// controller stores it.
func currentRevision(t *testing.T, ds *appsv1.DaemonSet, revision int64) *appsv1.ControllerRevision {
	t.Helper()
	patch, err := history.TemplatePatch(ds)
	if err != nil {
		t.Fatal(err)
	}
	hash := templateHash(ds)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: history.Name(ds.Name, hash), Namespace: ds.Namespace, UID: types.UID(hash + "-uid"),
			Labels:          map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: hash},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: revision,
	}
}

// fixture holds objects and, for each DaemonSet among them, the revision
// of its current template (which tests of a sync take as given).
func fixture(t *testing.T, objects ...runtime.Object) (*controllertest.Fixture, *Controller) {
	t.Helper()
	for _, obj := range objects {
		if ds, ok := obj.(*appsv1.DaemonSet); ok {
			objects = append(objects, currentRevision(t, ds, 1))
		}
	}
	f := controllertest.New(objects...)
	dsc, err := newController(f.Context)
	if err != nil {
		t.Fatal(err)
	}
	dsc.failedPodsBackoff.Clock = clocktesting.NewFakeClock(now)
	if err := f.Index(objects...); err != nil {
		t.Fatal(err)
	}
	return f, dsc
}

func createdPods(f *controllertest.Fixture) []*corev1.Pod {
	var out []*corev1.Pod
	for _, a := range f.Client.Actions() {
		if c, ok := a.(clienttesting.CreateAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, c.GetObject().(*corev1.Pod))
		}
	}
	return out
}

func lastStatus(t *testing.T, f *controllertest.Fixture) *appsv1.DaemonSetStatus {
	t.Helper()
	actions := f.Client.Actions()
	for i := len(actions) - 1; i >= 0; i-- {
		if u, ok := actions[i].(clienttesting.UpdateAction); ok && actions[i].GetSubresource() == "status" {
			return &u.GetObject().(*appsv1.DaemonSet).Status
		}
	}
	return nil
}

func TestSyncDaemonSet(t *testing.T) {
	ds := newDS()
	cur := templateHash(ds)
	selecting := newDS(nodeSelector)
	curSelecting := templateHash(selecting)
	tests := []struct {
		name        string
		objects     []runtime.Object
		wantActions []string
		wantEvents  []string
		wantStatus  *appsv1.DaemonSetStatus
		wantNodes   []string // nodes of the created pods
	}{
		{
			name: "one pod on each node the DaemonSet may run on",
			objects: []runtime.Object{newDS(nodeSelector),
				newNode("plain"),
				newNode("unlabelled", unlabelled),
				newNode("dedicated", tainted("dedicated", corev1.TaintEffectNoSchedule)),
				newNode("cordoned", tainted(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)),
				newNode("not-ready", tainted(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)),
				newNode("evicting", tainted("maintenance", corev1.TaintEffectNoExecute)),
			},
			wantActions: []string{"create pods agent-", "create pods agent-", "create pods agent-", "update daemonsets/status agent"},
			wantNodes:   []string{"cordoned", "not-ready", "plain"},
			wantStatus:  &appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, NumberUnavailable: 3, ObservedGeneration: 1},
		},
		{
			name: "pods leave nodes the DaemonSet may no longer run on",
			objects: []runtime.Object{selecting,
				newNode("plain"), newNode("unlabelled", unlabelled),
				newNode("dedicated", tainted("dedicated", corev1.TaintEffectNoSchedule)),
				newNode("evicting", tainted("maintenance", corev1.TaintEffectNoExecute)),
				daemonPod("on-plain", ds, "plain", curSelecting, ready), daemonPod("on-unlabelled", ds, "unlabelled", curSelecting, ready),
				daemonPod("on-dedicated", ds, "dedicated", curSelecting, ready), daemonPod("on-evicting", ds, "evicting", curSelecting, ready),
			},
			// A NoSchedule taint keeps new pods away but lets a running
			// one stay (it counts as misscheduled).
			wantActions: []string{"delete pods on-evicting", "delete pods on-unlabelled", "update daemonsets/status agent"},
			wantEvents:  []string{"Normal SuccessfulDelete Deleted pod: on-evicting", "Normal SuccessfulDelete Deleted pod: on-unlabelled"},
			wantStatus: &appsv1.DaemonSetStatus{
				DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberMisscheduled: 3, NumberReady: 1,
				UpdatedNumberScheduled: 1, NumberAvailable: 1, ObservedGeneration: 1,
			},
		},
		{
			name: "a second pod on a node goes, the oldest stays",
			objects: []runtime.Object{ds, newNode("n1"),
				daemonPod("older", ds, "n1", cur, ready),
				daemonPod("newer", ds, "n1", cur, ready, func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now) }),
			},
			wantActions: []string{"delete pods newer", "update daemonsets/status agent"},
			wantEvents:  []string{"Normal SuccessfulDelete Deleted pod: newer"},
		},
		{
			name: "a failed pod is deleted, to be replaced",
			objects: []runtime.Object{ds, newNode("n1"),
				daemonPod("crashed", ds, "n1", cur, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })},
			wantActions: []string{"delete pods crashed", "update daemonsets/status agent"},
			wantEvents: []string{
				"Warning FailedDaemonPod Found failed daemon pod default/crashed on node n1, will try to kill it",
				"Normal SuccessfulDelete Deleted pod: crashed",
			},
		},
		{
			name: "an unbound pod for a node that is gone is deleted",
			objects: []runtime.Object{ds, newNode("n1"), daemonPod("here", ds, "n1", cur, ready),
				daemonPod("orphaned", ds, "gone", cur, unbound)},
			wantActions: []string{"delete pods orphaned", "update daemonsets/status agent"},
			wantEvents:  []string{"Normal SuccessfulDelete Deleted pod: orphaned"},
		},
		{
			name: "rolling update deletes maxUnavailable old pods",
			objects: []runtime.Object{ds, newNode("n1"), newNode("n2"), newNode("n3"),
				daemonPod("old-1", ds, "n1", "old", ready), daemonPod("old-2", ds, "n2", "old", ready), daemonPod("old-3", ds, "n3", "old", ready)},
			wantActions: []string{"delete pods old-1", "update daemonsets/status agent"},
			wantEvents:  []string{"Normal SuccessfulDelete Deleted pod: old-1"},
			wantStatus: &appsv1.DaemonSetStatus{
				DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 3, NumberAvailable: 3, ObservedGeneration: 1,
			},
		},
		{
			name: "rolling update waits while a new pod is unavailable",
			objects: []runtime.Object{ds, newNode("n1"), newNode("n2"),
				daemonPod("new-1", ds, "n1", cur), daemonPod("old-2", ds, "n2", "old", ready)},
			wantActions: []string{"update daemonsets/status agent"},
		},
		{
			name: "rolling update replaces an unavailable old pod beyond maxUnavailable",
			objects: []runtime.Object{ds, newNode("n1"), newNode("n2"),
				daemonPod("new-1", ds, "n1", cur), daemonPod("old-2", ds, "n2", "old")},
			wantActions: []string{"delete pods old-2", "update daemonsets/status agent"},
			wantEvents:  []string{"Normal SuccessfulDelete Deleted pod: old-2"},
		},
		{
			name: "rolling update with maxSurge starts a new pod beside an old one",
			objects: []runtime.Object{
				newDS(func(ds *appsv1.DaemonSet) {
					ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{
						MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1)),
					}
				}),
				newNode("n1"), newNode("n2"),
				daemonPod("old-1", ds, "n1", "old", ready), daemonPod("old-2", ds, "n2", "old", ready)},
			wantActions: []string{"create pods agent-", "update daemonsets/status agent"},
			wantNodes:   []string{"n1"},
		},
		{
			name: "OnDelete leaves old pods alone",
			objects: []runtime.Object{
				newDS(func(ds *appsv1.DaemonSet) {
					ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
				}),
				newNode("n1"), daemonPod("old-1", ds, "n1", "old", ready)},
			wantActions: []string{"update daemonsets/status agent"},
			wantStatus: &appsv1.DaemonSetStatus{
				DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1, ObservedGeneration: 1,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dsc := fixture(t, tt.objects...)
			if err := dsc.syncDaemonSet(context.Background(), "default/agent"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if diff := cmp.Diff(controllertest.Sorted(tt.wantActions), controllertest.Sorted(f.Actions())); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			events := f.Events()
			created := createdPods(f)
			var nodes []string
			for _, p := range created {
				name, err := targetNodeName(p)
				if err != nil {
					t.Fatal(err)
				}
				nodes = append(nodes, name)
			}
			if diff := cmp.Diff(controllertest.Sorted(tt.wantNodes), controllertest.Sorted(nodes)); diff != "" {
				t.Errorf("nodes of created pods (-want +got):\n%s", diff)
			}
			// Created pods are named by the fake API; only count those events.
			var other []string
			creates := 0
			for _, e := range events {
				if strings.HasPrefix(e, "Normal SuccessfulCreate Created pod: agent-") {
					creates++
					continue
				}
				other = append(other, e)
			}
			if creates != len(created) {
				t.Errorf("%d SuccessfulCreate events for %d pods", creates, len(created))
			}
			if diff := cmp.Diff(controllertest.Sorted(tt.wantEvents), controllertest.Sorted(other)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tt.wantStatus != nil {
				if diff := cmp.Diff(tt.wantStatus, lastStatus(t, f)); diff != "" {
					t.Errorf("status (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestCreatedPodIsPinnedAndTolerant(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.HostNetwork = true
		// The template's own not-ready toleration with a limit gives way
		// to the daemon one without.
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{
			Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300),
		}}
	})
	f, dsc := fixture(t, ds, newNode("n1"))
	if err := dsc.syncDaemonSet(context.Background(), "default/agent"); err != nil {
		t.Fatal(err)
	}
	pods := createdPods(f)
	if len(pods) != 1 {
		t.Fatalf("created %d pods, want 1", len(pods))
	}
	pod := pods[0]
	wantAffinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}},
	}}}
	if diff := cmp.Diff(wantAffinity, pod.Spec.Affinity); diff != "" {
		t.Errorf("affinity (-want +got):\n%s", diff)
	}
	if pod.Spec.NodeName != "" {
		t.Errorf("nodeName = %q, want the scheduler to bind it", pod.Spec.NodeName)
	}
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	want := []corev1.Toleration{
		exists("node.kubernetes.io/not-ready", corev1.TaintEffectNoExecute),
		exists("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute),
		exists("node.kubernetes.io/disk-pressure", corev1.TaintEffectNoSchedule),
		exists("node.kubernetes.io/memory-pressure", corev1.TaintEffectNoSchedule),
		exists("node.kubernetes.io/pid-pressure", corev1.TaintEffectNoSchedule),
		exists("node.kubernetes.io/unschedulable", corev1.TaintEffectNoSchedule),
		exists("node.kubernetes.io/network-unavailable", corev1.TaintEffectNoSchedule),
	}
	if diff := cmp.Diff(want, pod.Spec.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != templateHash(ds) || pod.GenerateName != "agent-" {
		t.Errorf("labels %v generateName %q; want controller-revision-hash %s and agent-", pod.Labels, pod.GenerateName, templateHash(ds))
	}
}

func TestFailedPodReplacementBacksOff(t *testing.T) {
	ds := newDS()
	crashed := daemonPod("crashed", ds, "n1", templateHash(ds), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
	f, dsc := fixture(t, ds, newNode("n1"), crashed)
	ctx := context.Background()
	if err := dsc.syncDaemonSet(ctx, "default/agent"); err != nil {
		t.Fatal(err)
	}
	// The delete is observed, but the kubelet fails the next pod at once:
	// the same failure is not acted on again before the backoff ends.
	dsc.deletePod(crashed)
	f.Client.ClearActions()
	if err := dsc.syncDaemonSet(ctx, "default/agent"); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.Actions() {
		if a == "delete pods crashed" {
			t.Errorf("failed pod deleted again within its backoff: %v", f.Actions())
		}
	}
}
