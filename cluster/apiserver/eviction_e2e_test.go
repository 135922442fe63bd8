package apiserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestEvictionHonoursBudgets drives pods/eviction as kubectl drain does:
// refused with upstream's 429 and cause while the budget allows no
// disruption, taken (and recorded in the budget's status) when it allows
// one, and refused again while the disruption controller has not seen the
// budget's latest spec. The test plays the disruption controller by
// writing the budget's status itself.
func TestEvictionHonoursBudgets(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 3*testTimeout)
	cs := adminClient(t, c)
	const ns = "drain"
	createNamespace(ctx, t, cs, ns)
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-a", "web-b"} {
		runningPod(ctx, t, cs, ns, name, "node-1")
	}
	k := newKubectl(t, c, auth.AdminUser)
	wantLines(t, "kubectl create pdb", k.ok(ctx, t, "-n", ns, "create", "pdb", "web", "--selector=app=web", "--min-available=2"),
		"poddisruptionbudget.policy/web created")
	setBudgetStatus(ctx, t, cs, ns, "web", 2, 2, 0)

	tables := parseTables(k.ok(ctx, t, "-n", ns, "get", "pdb"))
	if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"}) {
		t.Fatalf("get pdb: %+v", tables)
	}
	if r := tables[0].row("web"); tables[0].column(r, "MIN AVAILABLE") != "2" || tables[0].column(r, "MAX UNAVAILABLE") != "N/A" || tables[0].column(r, "ALLOWED DISRUPTIONS") != "0" {
		t.Errorf("pdb row %v", r)
	}

	// drain evicts, is refused, retries every 5 s and gives up at its
	// timeout; the node stays cordoned and both pods stay.
	res := k.run(ctx, t, nil, "drain", "node-1", "--ignore-daemonsets", "--grace-period=0", "--timeout=7s")
	if res.code == 0 {
		t.Fatalf("drain succeeded past a budget that allows nothing:\n%s%s", res.stdout, res.stderr)
	}
	wantRefusal := `error when evicting pods/"web-a" -n "drain" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`
	if !strings.Contains(res.stderr, wantRefusal) {
		t.Errorf("drain's output lacks %q:\nstdout: %s\nstderr: %s", wantRefusal, res.stdout, res.stderr)
	}
	if node, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{}); err != nil || !node.Spec.Unschedulable {
		t.Errorf("node-1 after drain: %v, unschedulable %v", err, node.Spec.Unschedulable)
	}

	// The refusal carries the budget's arithmetic as its cause.
	err := cs.PolicyV1().Evictions(ns).Evict(ctx, eviction(ns, "web-a"))
	wantStatus(t, err, 429, metav1.StatusReasonTooManyRequests, "Cannot evict pod as it would violate the pod's disruption budget.")
	if st := statusOf(t, err); st.Details == nil || len(st.Details.Causes) != 1 ||
		st.Details.Causes[0].Type != policyv1.DisruptionBudgetCause || st.Details.Causes[0].Message != "The disruption budget web needs 2 healthy pods and has 2 currently" {
		t.Errorf("cause: %+v", st.Details)
	}

	// With one disruption allowed, one eviction goes through and spends it.
	setBudgetStatus(ctx, t, cs, ns, "web", 2, 1, 1)
	if err := cs.PolicyV1().Evictions(ns).Evict(ctx, eviction(ns, "web-a")); err != nil {
		t.Fatalf("evict web-a with a disruption allowed: %v", err)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "web-a", metav1.GetOptions{}); err == nil {
		t.Error("web-a is still there after its eviction")
	}
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pdb.Status.DisruptedPods["web-a"]; !ok || pdb.Status.DisruptionsAllowed != 0 {
		t.Errorf("budget after the eviction: %+v; want web-a disrupted and no disruption left", pdb.Status)
	}
	err = cs.PolicyV1().Evictions(ns).Evict(ctx, eviction(ns, "web-b"))
	wantStatus(t, err, 429, metav1.StatusReasonTooManyRequests, "Cannot evict pod as it would violate the pod's disruption budget.")

	// A changed spec the controller has not observed: still processing.
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"minAvailable":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	setBudgetStatus(ctx, t, cs, ns, "web", 1, 1, 5) // observedGeneration stays 1
	err = cs.PolicyV1().Evictions(ns).Evict(ctx, eviction(ns, "web-b"))
	if st := statusOf(t, err); st.Code != 429 || st.Details == nil || len(st.Details.Causes) != 1 ||
		st.Details.Causes[0].Message != "The disruption budget web is still being processed by the server." {
		t.Errorf("eviction under an unobserved spec: %v %+v", err, st.Details)
	}

	// A pending pod disrupts nothing: it goes without asking.
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, labelled(pod(ns, "web-pending", "")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.PolicyV1().Evictions(ns).Evict(ctx, eviction(ns, "web-pending")); err != nil {
		t.Errorf("evict a pending pod: %v", err)
	}

	// The Eviction must name the pod of its URL.
	wrong := eviction(ns, "web-b")
	wrong.Name = "web-a"
	err = cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("web-b").SubResource("eviction").
		Body(mustJSON(t, wrong)).Do(ctx).Error()
	wantStatus(t, err, 400, metav1.StatusReasonBadRequest, "name in URL does not match name in Eviction object")

	// Once the budget allows it, drain empties the node.
	observeBudget(ctx, t, cs, ns, "web", 1, 1, 1)
	out := k.ok(ctx, t, "drain", "node-1", "--ignore-daemonsets", "--grace-period=0", "--timeout=20s")
	wantLines(t, "kubectl drain", out, "node/node-1 already cordoned", "evicting pod drain/web-b", "pod/web-b evicted", "node/node-1 drained")
}

// TestPodDisruptionBudgetValidation checks upstream's field errors.
func TestPodDisruptionBudgetValidation(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, testTimeout)
	cs := adminClient(t, c)
	createNamespace(ctx, t, cs, "pdb")
	two, half, tooMuch := intstr.FromInt32(2), intstr.FromString("50%"), intstr.FromString("150%")
	bad := []struct {
		name    string
		spec    policyv1.PodDisruptionBudgetSpec
		message string
	}{
		{"both", policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, MaxUnavailable: &half},
			`PodDisruptionBudget.policy "both" is invalid: spec: Invalid value: `},
		{"over", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &tooMuch},
			`PodDisruptionBudget.policy "over" is invalid: spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%`},
		{"policy", policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, UnhealthyPodEvictionPolicy: ptr.To(policyv1.UnhealthyPodEvictionPolicyType("Never"))},
			`PodDisruptionBudget.policy "policy" is invalid: spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"`},
	}
	for _, tc := range bad {
		_, err := cs.PolicyV1().PodDisruptionBudgets("pdb").Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: tc.spec}, metav1.CreateOptions{})
		if st := statusOf(t, err); st.Code != 422 || !strings.HasPrefix(st.Message, tc.message) {
			t.Errorf("%s: %d %q; want 422 %q", tc.name, st.Code, st.Message, tc.message)
		}
	}
	created, err := cs.PolicyV1().PodDisruptionBudgets("pdb").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "ok"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &half, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 7},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Generation != 1 || created.Status.DisruptionsAllowed != 0 {
		t.Errorf("created: generation %d, status %+v; want 1 and an empty status", created.Generation, created.Status)
	}
	created.Status.DisruptionsAllowed = -1
	_, err = cs.PolicyV1().PodDisruptionBudgets("pdb").UpdateStatus(ctx, created, metav1.UpdateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, `PodDisruptionBudget.policy "ok" is invalid: status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0`)
}

// runningPod creates a pod on node that a ReplicaSet controls (so drain
// will evict it) and marks it Running and Ready, as its kubelet would.
func runningPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name, node string) {
	t.Helper()
	p := labelled(pod(ns, name, node))
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "web-rs-uid", Controller: ptr.To(true)}}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func labelled(p *corev1.Pod) *corev1.Pod {
	p.Labels = map[string]string{"app": "web"}
	return p
}

func eviction(ns, name string) *policyv1.Eviction {
	return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}}
}

// setBudgetStatus writes the status the disruption controller would,
// leaving observedGeneration at 1.
func setBudgetStatus(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, desired, current, allowed int32) {
	t.Helper()
	writeBudgetStatus(ctx, t, cs, ns, name, desired, current, allowed, false)
}

// observeBudget writes the status with observedGeneration caught up.
func observeBudget(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, desired, current, allowed int32) {
	t.Helper()
	writeBudgetStatus(ctx, t, cs, ns, name, desired, current, allowed, true)
}

func writeBudgetStatus(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, desired, current, allowed int32, caughtUp bool) {
	t.Helper()
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status.ObservedGeneration = 1
	if caughtUp {
		pdb.Status.ObservedGeneration = pdb.Generation
	}
	pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy, pdb.Status.DisruptionsAllowed, pdb.Status.ExpectedPods = desired, current, allowed, current
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, obj any) []byte {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
