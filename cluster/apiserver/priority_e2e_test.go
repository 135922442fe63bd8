package apiserver_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestPriorityClasses drives scheduling.k8s.io/v1 PriorityClasses and the
// Priority admission plugin with the real kubectl and client-go: the two
// system classes exist from the start, a pod's class becomes its
// spec.priority and spec.preemptionPolicy, an unknown class and a second
// globalDefault are refused with upstream's messages, a globalDefault
// class is given to pods that name none, and values and the system-
// prefix are validated as upstream.
func TestPriorityClasses(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	cs := adminClient(t, c)
	k := newKubectl(t, c, auth.AdminUser)
	const ns = "prio"
	createNamespace(ctx, t, cs, ns)

	tables := parseTables(k.ok(ctx, t, "get", "priorityclasses"))
	if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"}) {
		t.Fatalf("get priorityclasses: %+v", tables)
	}
	for name, value := range map[string]string{"system-node-critical": "2000001000", "system-cluster-critical": "2000000000"} {
		r := tables[0].row(name)
		if tables[0].column(r, "VALUE") != value || tables[0].column(r, "GLOBAL-DEFAULT") != "false" || tables[0].column(r, "PREEMPTIONPOLICY") != "PreemptLowerPriority" {
			t.Errorf("row of %s: %v", name, r)
		}
	}

	wantLines(t, "kubectl create priorityclass", k.ok(ctx, t, "create", "priorityclass", "high", "--value=1000", "--description=for the test"),
		"priorityclass.scheduling.k8s.io/high created")
	wantLines(t, "kubectl create pc --preemption-policy", k.ok(ctx, t, "create", "pc", "polite", "--value=500", "--preemption-policy=Never"),
		"priorityclass.scheduling.k8s.io/polite created")

	// A pod's class is resolved into its spec.
	p := pod(ns, "important", "")
	p.Spec.PriorityClassName = "high"
	got, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 1000 || got.Spec.PreemptionPolicy == nil || *got.Spec.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("pod of class high: priority %v policy %v", got.Spec.Priority, got.Spec.PreemptionPolicy)
	}
	p = pod(ns, "polite", "")
	p.Spec.PriorityClassName = "polite"
	if got, err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil || *got.Spec.Priority != 500 || *got.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("pod of class polite: %v %+v", err, got.Spec)
	}
	p = pod(ns, "critical", "")
	p.Spec.PriorityClassName = "system-node-critical"
	if got, err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil || *got.Spec.Priority != 2000001000 {
		t.Errorf("pod of class system-node-critical: %v %+v", err, got.Spec)
	}
	p = pod(ns, "plain", "")
	if got, err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil || *got.Spec.Priority != 0 || got.Spec.PriorityClassName != "" {
		t.Errorf("pod without a class and no default: %v %+v", err, got.Spec)
	}

	// Refusals, with upstream's words.
	p = pod(ns, "lost", "")
	p.Spec.PriorityClassName = "nonesuch"
	_, err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods "lost" is forbidden: no PriorityClass with name nonesuch was found`)
	p = pod(ns, "sneaky", "")
	p.Spec.PriorityClassName, p.Spec.Priority = "high", ptr.To[int32](5)
	_, err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods "sneaky" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name`)
	res := k.run(ctx, t, nil, "create", "pc", "huge", "--value=1000000001")
	if res.code == 0 || !strings.Contains(res.stderr, `PriorityClass.scheduling.k8s.io "huge" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000`) {
		t.Errorf("too high a value: code %d, %s", res.code, res.stderr)
	}
	res = k.run(ctx, t, nil, "create", "pc", "system-mine", "--value=10")
	if res.code == 0 || !strings.Contains(res.stderr, `metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class`) {
		t.Errorf("a system- name: code %d, %s", res.code, res.stderr)
	}
	_, err = cs.SchedulingV1().PriorityClasses().Patch(ctx, "high", "application/merge-patch+json", []byte(`{"value":2000}`), metav1.PatchOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, `PriorityClass.scheduling.k8s.io "high" is invalid: value: Forbidden: may not be changed in an update.`)

	// One globalDefault: it is given to pods that name no class.
	wantLines(t, "kubectl create pc --global-default", k.ok(ctx, t, "create", "pc", "everyday", "--value=100", "--global-default"),
		"priorityclass.scheduling.k8s.io/everyday created")
	res = k.run(ctx, t, nil, "create", "pc", "another", "--value=200", "--global-default")
	if res.code == 0 || !strings.Contains(res.stderr, `priorityclasses.scheduling.k8s.io "another" is forbidden: PriorityClass everyday is already marked as default. Only one default can exist`) {
		t.Errorf("a second default: code %d, %s", res.code, res.stderr)
	}
	_, err = cs.SchedulingV1().PriorityClasses().Patch(ctx, "high", "application/merge-patch+json", []byte(`{"globalDefault":true}`), metav1.PatchOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `priorityclasses.scheduling.k8s.io "high" is forbidden: PriorityClass everyday is already marked as default. Only one default can exist`)
	if _, err := cs.SchedulingV1().PriorityClasses().Patch(ctx, "everyday", "application/merge-patch+json", []byte(`{"description":"still default"}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("updating the default itself: %v", err)
	}
	p = pod(ns, "defaulted", "")
	if got, err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil || *got.Spec.Priority != 100 || got.Spec.PriorityClassName != "everyday" {
		t.Errorf("pod under a globalDefault: %v %+v", err, got.Spec)
	}

	// The priority survives an update that leaves it out, and cannot change.
	got.Spec.Priority, got.Spec.PreemptionPolicy = nil, nil
	if got, err = cs.CoreV1().Pods(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil || got.Spec.Priority == nil || *got.Spec.Priority != 100 {
		t.Errorf("update without the priority: %v", err)
	}
	var pcs *schedulingv1.PriorityClassList
	if pcs, err = cs.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{}); err != nil || len(pcs.Items) != 5 {
		t.Errorf("list: %v %d", err, len(pcs.Items))
	}
	if out := k.ok(ctx, t, "api-resources", "--api-group=scheduling.k8s.io"); !strings.Contains(out, "priorityclasses") || !strings.Contains(out, " pc ") {
		t.Errorf("api-resources: %s", out)
	}
}
