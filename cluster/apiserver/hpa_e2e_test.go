package apiserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	acautoscalingv2 "k8s.io/client-go/applyconfigurations/autoscaling/v2"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/apiserver/hpaconv"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestHPABothVersions: an HPA written through autoscaling/v1 is the same
// object through autoscaling/v2 and back, with what v1 cannot say in
// upstream's annotations; every verb works through v1.
func TestHPABothVersions(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := adminClient(t, c)
	ctx := testContext(t, testTimeout)
	const ns = "hpa"
	createNamespace(ctx, t, cs, ns)
	v1c, v2c := cs.AutoscalingV1().HorizontalPodAutoscalers(ns), cs.AutoscalingV2().HorizontalPodAutoscalers(ns)
	ref := autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}

	// Written as v1 with a CPU target of 50%, read as v2.
	created, err := v1c.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "cpu"},
		Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](50)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create through v1: %v", err)
	}
	if p := created.Spec.TargetCPUUtilizationPercentage; p == nil || *p != 50 || created.Spec.MinReplicas == nil || *created.Spec.MinReplicas != 1 {
		t.Errorf("created v1 spec = %+v; want target 50%% and minReplicas defaulted to 1", created.Spec)
	}
	if len(created.Annotations) != 0 {
		t.Errorf("a CPU-only HPA needs no annotations in v1: %v", created.Annotations)
	}
	asV2, err := v2c.Get(ctx, "cpu", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get through v2: %v", err)
	}
	if asV2.UID != created.UID || asV2.ResourceVersion != created.ResourceVersion {
		t.Errorf("v2 view has uid %s rv %s; v1 has %s %s", asV2.UID, asV2.ResourceVersion, created.UID, created.ResourceVersion)
	}
	if m := asV2.Spec.Metrics; len(m) != 1 || m[0].Type != autoscalingv2.ResourceMetricSourceType || m[0].Resource.Name != corev1.ResourceCPU ||
		m[0].Resource.Target.Type != autoscalingv2.UtilizationMetricType || ptr.Deref(m[0].Resource.Target.AverageUtilization, 0) != 50 {
		t.Errorf("v2 metrics = %+v; want one CPU utilization target of 50", m)
	}

	// Written as v2 with a memory metric and a behavior, read as v1.
	memory := resource.MustParse("500Mi")
	_, err = v2c.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "mem"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(ref), MaxReplicas: 4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &memory}}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create through v2: %v", err)
	}
	asV1, err := v1c.Get(ctx, "mem", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get through v1: %v", err)
	}
	if asV1.Spec.TargetCPUUtilizationPercentage != nil {
		t.Errorf("v1 CPU target = %d; the HPA has none", *asV1.Spec.TargetCPUUtilizationPercentage)
	}
	var others []autoscalingv1.MetricSpec
	if err := json.Unmarshal([]byte(asV1.Annotations[hpaconv.MetricSpecsAnnotation]), &others); err != nil || len(others) != 1 ||
		others[0].Resource == nil || others[0].Resource.Name != corev1.ResourceMemory || others[0].Resource.TargetAverageValue.Cmp(memory) != 0 {
		t.Errorf("v1 metrics annotation = %q (%v); want the memory metric", asV1.Annotations[hpaconv.MetricSpecsAnnotation], err)
	}
	if b := asV1.Annotations[hpaconv.BehaviorSpecsAnnotation]; !strings.Contains(b, `"StabilizationWindowSeconds":60`) {
		t.Errorf("v1 behavior annotation = %q; want the scale-down window", b)
	}

	// The controller's status, written through v2, survives a v1 update
	// that leaves the status annotations out, and a v1 update that keeps
	// the spec annotations keeps the memory metric.
	asV2, err = v2c.Get(ctx, "mem", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	asV2.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: 2, DesiredReplicas: 3,
		CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceMemory, Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(resource.MustParse("600Mi"))}}}},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.Now().Rfc3339Copy(), Reason: "SucceededRescale"}},
	}
	if _, err := v2c.UpdateStatus(ctx, asV2, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status through v2: %v", err)
	}
	asV1, err = v1c.Get(ctx, "mem", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if asV1.Status.DesiredReplicas != 3 || asV1.Annotations[hpaconv.ConditionsAnnotation] == "" || asV1.Annotations[hpaconv.MetricStatusesAnnotation] == "" {
		t.Errorf("v1 status %+v, annotations %v; want the controller's status", asV1.Status, asV1.Annotations)
	}
	delete(asV1.Annotations, hpaconv.ConditionsAnnotation)
	delete(asV1.Annotations, hpaconv.MetricStatusesAnnotation)
	asV1.Spec.MaxReplicas = 6
	if _, err := v1c.Update(ctx, asV1, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update through v1: %v", err)
	}
	asV2, err = v2c.Get(ctx, "mem", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if asV2.Spec.MaxReplicas != 6 || len(asV2.Spec.Metrics) != 1 || asV2.Spec.Metrics[0].Resource.Name != corev1.ResourceMemory ||
		asV2.Spec.Behavior == nil || ptr.Deref(asV2.Spec.Behavior.ScaleDown.StabilizationWindowSeconds, 0) != 60 {
		t.Errorf("v2 spec after a v1 update = %+v; want maxReplicas 6 with the memory metric and behavior kept", asV2.Spec)
	}
	if len(asV2.Status.Conditions) != 1 || len(asV2.Status.CurrentMetrics) != 1 || asV2.Status.DesiredReplicas != 3 {
		t.Errorf("v2 status after a v1 update = %+v; want the controller's status kept", asV2.Status)
	}
	if len(asV2.Annotations) != 0 {
		t.Errorf("the stored v2 object carries annotations %v; the round-trip ones belong to v1", asV2.Annotations)
	}
	// Field management follows the fields across versions: the v1 update
	// took maxReplicas, the v2 create keeps the metrics.
	owners := map[string]string{}
	for _, e := range asV2.ManagedFields {
		for _, f := range []string{"f:maxReplicas", "f:metrics"} {
			if strings.Contains(string(e.FieldsV1.Raw), f) {
				owners[f] += e.APIVersion + " "
			}
		}
	}
	if owners["f:maxReplicas"] != "autoscaling/v1 " || owners["f:metrics"] != "autoscaling/v2 " {
		t.Errorf("owners after a v2 create and a v1 update = %v; want maxReplicas by the v1 entry, metrics by the v2 one\n%+v", owners, asV2.ManagedFields)
	}

	// Watch, patch (merge, strategic, JSON), list and delete through v1.
	w, err := v1c.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=cpu", ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatalf("watch through v1: %v", err)
	}
	defer w.Stop()
	patches := []struct {
		typ  types.PatchType
		body string
		want int32
	}{
		{types.MergePatchType, `{"spec":{"targetCPUUtilizationPercentage":60}}`, 60},
		{types.StrategicMergePatchType, `{"spec":{"targetCPUUtilizationPercentage":70}}`, 70},
		{types.JSONPatchType, `[{"op":"replace","path":"/spec/targetCPUUtilizationPercentage","value":80}]`, 80},
	}
	for _, p := range patches {
		patched, err := v1c.Patch(ctx, "cpu", p.typ, []byte(p.body), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("%s patch through v1: %v", p.typ, err)
		}
		if got := ptr.Deref(patched.Spec.TargetCPUUtilizationPercentage, 0); got != p.want {
			t.Errorf("%s patch: target = %d; want %d", p.typ, got, p.want)
		}
		select {
		case ev := <-w.ResultChan():
			h, ok := ev.Object.(*autoscalingv1.HorizontalPodAutoscaler)
			if ev.Type != watch.Modified || !ok || ptr.Deref(h.Spec.TargetCPUUtilizationPercentage, 0) != p.want {
				t.Errorf("watch event after the %s patch = %s %#v; want MODIFIED with target %d", p.typ, ev.Type, ev.Object, p.want)
			}
		case <-ctx.Done():
			t.Fatalf("no watch event after the %s patch", p.typ)
		}
	}
	asV2, err = v2c.Get(ctx, "cpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(asV2.Spec.Metrics[0].Resource.Target.AverageUtilization, 0); len(asV2.Spec.Metrics) != 1 || got != 80 {
		t.Errorf("v2 metrics after the v1 patches = %+v; want CPU 80", asV2.Spec.Metrics)
	}

	list, err := v1c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list through v1: %v", err)
	}
	if got := names(ptrs(list.Items)); !equalStrings(got, []string{"cpu", "mem"}) {
		t.Errorf("v1 list = %v", got)
	}
	if list.Items[1].Annotations[hpaconv.MetricSpecsAnnotation] == "" {
		t.Errorf("listed v1 HPA lacks its metrics annotation: %v", list.Items[1].Annotations)
	}

	// Checked as the v2 object it is.
	_, err = v1c.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MaxReplicas: 0},
	}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.maxReplicas") {
		t.Errorf("create with maxReplicas 0 through v1: %v; want Invalid on spec.maxReplicas", err)
	}

	// A dry run answers as the create would: the CPU target v1 leaves
	// to the controller is written down, 80% as upstream's conversion
	// writes it.
	dry, err := v1c.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "dry"},
		Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MaxReplicas: 2},
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || ptr.Deref(dry.Spec.TargetCPUUtilizationPercentage, 0) != hpaconv.DefaultCPUUtilization {
		t.Errorf("dry-run create without a target: %+v, %v; want target %d", dry, err, hpaconv.DefaultCPUUtilization)
	}

	// A status write through v1 changes the status and leaves the spec,
	// though the writer left out the spec's annotations.
	asV1, err = v1c.Get(ctx, "mem", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	asV1.Annotations = nil
	asV1.Status = autoscalingv1.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, DesiredReplicas: 3, CurrentCPUUtilizationPercentage: ptr.To[int32](30)}
	if _, err := v1c.UpdateStatus(ctx, asV1, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status through v1: %v", err)
	}
	asV2, err = v2c.Get(ctx, "mem", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm := asV2.Status.CurrentMetrics; asV2.Status.DesiredReplicas != 3 || len(cm) != 1 || cm[0].Resource.Name != corev1.ResourceCPU || ptr.Deref(cm[0].Resource.Current.AverageUtilization, 0) != 30 {
		t.Errorf("v2 status after a v1 status write = %+v; want CPU at 30%%", asV2.Status)
	}
	if len(asV2.Spec.Metrics) != 1 || asV2.Spec.Metrics[0].Resource.Name != corev1.ResourceMemory || asV2.Spec.Behavior == nil {
		t.Errorf("v2 spec after a v1 status write = %+v; want it unchanged", asV2.Spec)
	}

	if err := v1c.Delete(ctx, "cpu", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete through v1: %v", err)
	}
	if _, err := v2c.Get(ctx, "cpu", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get through v2 after a v1 delete: %v; want NotFound", err)
	}
	if err := v1c.Delete(ctx, "cpu", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `horizontalpodautoscalers.autoscaling "cpu" not found`) {
		t.Errorf("second delete through v1: %v; want upstream's NotFound", err)
	}
	if err := v1c.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deletecollection through v1: %v", err)
	}
	if left, err := v2c.List(ctx, metav1.ListOptions{}); err != nil || len(left.Items) != 0 {
		t.Errorf("v2 list after a v1 deletecollection: %v, %v; want none", names(ptrs(left.Items)), err)
	}
}

// TestHPAV1Discovery: discovery lists autoscaling v2 then v1, v2
// preferred, as upstream.
func TestHPAV1Discovery(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := adminClient(t, c)
	groups, err := cs.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	var autoscaling *metav1.APIGroup
	for i := range groups.Groups {
		if groups.Groups[i].Name == "autoscaling" {
			autoscaling = &groups.Groups[i]
		}
	}
	if autoscaling == nil {
		t.Fatalf("no autoscaling group in %+v", groups.Groups)
	}
	var versions []string
	for _, v := range autoscaling.Versions {
		versions = append(versions, v.GroupVersion)
	}
	if !equalStrings(versions, []string{"autoscaling/v2", "autoscaling/v1"}) || autoscaling.PreferredVersion.GroupVersion != "autoscaling/v2" {
		t.Errorf("autoscaling versions %v preferred %s; want [autoscaling/v2 autoscaling/v1] preferring v2", versions, autoscaling.PreferredVersion.GroupVersion)
	}
	resources, err := cs.Discovery().ServerResourcesForGroupVersion("autoscaling/v1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range resources.APIResources {
		got = append(got, r.Name)
		if r.Name == "horizontalpodautoscalers" && (!equalStrings(r.ShortNames, []string{"hpa"}) || !equalStrings(r.Categories, []string{"all"}) || !r.Namespaced || len(r.Verbs) != 8) {
			t.Errorf("autoscaling/v1 horizontalpodautoscalers = %+v", r)
		}
	}
	if !equalStrings(got, []string{"horizontalpodautoscalers", "horizontalpodautoscalers/status"}) {
		t.Errorf("autoscaling/v1 resources = %v", got)
	}
}

const hpaV1Manifest = `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: applied
  namespace: hpa-kubectl
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  maxReplicas: 3
  targetCPUUtilizationPercentage: 40
`

// TestHPAV1Kubectl: the real kubectl sees autoscaling/v1, prints v1 HPAs
// with upstream's columns, and applies a v1 manifest server-side.
func TestHPAV1Kubectl(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := adminClient(t, c)
	ctx := testContext(t, testTimeout)
	createNamespace(ctx, t, cs, "hpa-kubectl")
	k := newKubectl(t, c, auth.AdminUser)

	versions := strings.Fields(k.ok(ctx, t, "api-versions"))
	for _, want := range []string{"autoscaling/v1", "autoscaling/v2"} {
		if !equalStrings(filter(versions, want), []string{want}) {
			t.Errorf("kubectl api-versions lacks %s: %v", want, versions)
		}
	}

	manifest := filepath.Join(t.TempDir(), "hpa.yaml")
	if err := os.WriteFile(manifest, []byte(hpaV1Manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	k.ok(ctx, t, "apply", "--server-side", "-f", manifest)
	h, err := cs.AutoscalingV2().HorizontalPodAutoscalers("hpa-kubectl").Get(ctx, "applied", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the applied HPA through v2: %v", err)
	}
	if len(h.Spec.Metrics) != 1 || ptr.Deref(h.Spec.Metrics[0].Resource.Target.AverageUtilization, 0) != 40 {
		t.Errorf("applied v1 HPA as v2 = %+v; want CPU 40", h.Spec.Metrics)
	}
	var applier *metav1.ManagedFieldsEntry
	for i, e := range h.ManagedFields {
		if e.Manager == "kubectl" && e.Operation == metav1.ManagedFieldsOperationApply {
			applier = &h.ManagedFields[i]
		}
	}
	if applier == nil || applier.APIVersion != "autoscaling/v1" || !strings.Contains(string(applier.FieldsV1.Raw), "targetCPUUtilizationPercentage") {
		t.Errorf("managed fields = %+v; want kubectl's apply of autoscaling/v1 fields", h.ManagedFields)
	}
	// Another manager applying a different target through v2 conflicts
	// with kubectl's v1 ownership of it: field management sees both
	// versions of the one object.
	_, err = cs.AutoscalingV2().HorizontalPodAutoscalers("hpa-kubectl").Apply(ctx,
		acautoscalingv2.HorizontalPodAutoscaler("applied", "hpa-kubectl").WithSpec(acautoscalingv2.HorizontalPodAutoscalerSpec().
			WithScaleTargetRef(acautoscalingv2.CrossVersionObjectReference().WithAPIVersion("apps/v1").WithKind("Deployment").WithName("web")).
			WithMaxReplicas(3).
			WithMetrics(acautoscalingv2.MetricSpec().WithType(autoscalingv2.ResourceMetricSourceType).WithResource(acautoscalingv2.ResourceMetricSource().
				WithName(corev1.ResourceCPU).WithTarget(acautoscalingv2.MetricTarget().WithType(autoscalingv2.UtilizationMetricType).WithAverageUtilization(90))))),
		metav1.ApplyOptions{FieldManager: "other"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "kubectl"`) {
		t.Errorf("a v2 apply of another CPU target over kubectl's v1 one: %v; want a conflict with kubectl", err)
	}
	// A second apply with a new target is no conflict: kubectl owns it.
	changed := strings.Replace(hpaV1Manifest, "targetCPUUtilizationPercentage: 40", "targetCPUUtilizationPercentage: 45", 1)
	if err := os.WriteFile(manifest, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	k.ok(ctx, t, "apply", "--server-side", "-f", manifest)

	out := k.ok(ctx, t, "get", "hpa.v1.autoscaling", "-n", "hpa-kubectl")
	tables := parseTables(out)
	if len(tables) != 1 {
		t.Fatalf("kubectl get hpa.v1.autoscaling:\n%s", out)
	}
	if want := []string{"NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"}; !equalStrings(tables[0].header, want) {
		t.Errorf("kubectl get hpa.v1.autoscaling columns = %v; want upstream's %v", tables[0].header, want)
	}
	row := tables[0].row("applied")
	if got := tables[0].column(row, "REFERENCE") + " " + tables[0].column(row, "TARGETS") + " " + tables[0].column(row, "MINPODS") + " " + tables[0].column(row, "MAXPODS"); got != "Deployment/web cpu: <unknown>/45% 1 3" {
		t.Errorf("kubectl get hpa.v1.autoscaling row = %q\n%s", got, out)
	}

	// The short name loses its version in kubectl's shortcut expander
	// (client-go's restmapper keeps only group and resource), so only the
	// long name asks for v1 itself, against upstream as here.
	yaml := k.ok(ctx, t, "get", "horizontalpodautoscalers.v1.autoscaling", "applied", "-n", "hpa-kubectl", "-o", "yaml")
	wantMatch(t, "kubectl get horizontalpodautoscalers.v1.autoscaling -o yaml", yaml, `(?m)^apiVersion: autoscaling/v1$`, `(?m)^  targetCPUUtilizationPercentage: 45$`)

	// The v1 schema is published: kubectl explain reads it.
	explain := k.ok(ctx, t, "explain", "horizontalpodautoscalers.spec.targetCPUUtilizationPercentage", "--api-version=autoscaling/v1")
	wantMatch(t, "kubectl explain", explain, `(?m)^VERSION:\s+v1$`, `targetCPUUtilizationPercentage`)

	raw := k.ok(ctx, t, "get", "--raw", "/apis/autoscaling")
	var group metav1.APIGroup
	if err := json.Unmarshal([]byte(raw), &group); err != nil || group.PreferredVersion.Version != "v2" || len(group.Versions) != 2 {
		t.Errorf("GET /apis/autoscaling = %s (%v)", raw, err)
	}
	res := k.run(ctx, t, nil, "get", "--raw", "/apis/autoscaling/v1/namespaces/hpa-kubectl/horizontalpodautoscalers/missing")
	if res.code == 0 || !strings.Contains(res.stderr, "NotFound") && !strings.Contains(res.stderr, "not found") {
		t.Errorf("get a missing v1 HPA: exit %d %s", res.code, res.stderr)
	}
}

func filter(items []string, want string) []string {
	var out []string
	for _, s := range items {
		if s == want {
			out = append(out, s)
		}
	}
	return out
}
