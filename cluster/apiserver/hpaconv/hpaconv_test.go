package hpaconv

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func q(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }

func sameObject(t *testing.T, what string, got, want any) {
	t.Helper()
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s differs (-want +got):\n%s", what, cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })))
	}
}

// fullV2 is an HPA with everything v1 cannot say: metrics of every source,
// a behavior, current metrics and conditions, as the controller and a user
// leave them.
func fullV2() *autoscalingv2.HorizontalPodAutoscaler {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "orders"}}
	when := metav1.Date(2026, 11, 29, 15, 0, 0, 0, metav1.Now().Location())
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{"team": "shop"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](2),
			MaxReplicas:    10,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("500Mi")}}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("1k")}}},
				{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
					DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
					Metric:          autoscalingv2.MetricIdentifier{Name: "hits"},
					Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q("10k")}}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue_depth", Selector: sel},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("30")}}},
				{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceCPU, Container: "app",
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}}},
				// The CPU target comes last: v1 puts it after the others.
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)}}},
			},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: DefaultScaleUpRules(),
				ScaleDown: &autoscalingv2.HPAScalingRules{
					StabilizationWindowSeconds: ptr.To[int32](60),
					SelectPolicy:               ptr.To(autoscalingv2.MinChangePolicySelect),
					Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 30}},
					Tolerance:                  q("50m"),
				},
			},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: ptr.To[int64](3),
			LastScaleTime:      &when,
			CurrentReplicas:    4,
			DesiredReplicas:    5,
			CurrentMetrics: []autoscalingv2.MetricStatus{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
					Current: autoscalingv2.MetricValueStatus{AverageValue: q("350m"), AverageUtilization: ptr.To[int32](88)}}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
					Current: autoscalingv2.MetricValueStatus{AverageValue: q("1200")}}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: "queue_depth", Selector: sel},
					Current: autoscalingv2.MetricValueStatus{Value: q("120"), AverageValue: q("24")}}},
			},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, LastTransitionTime: when, Reason: "ReadyForNewScale", Message: "recommended size matches current size"},
				{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, LastTransitionTime: when, Reason: "ValidMetricFound", ObservedGeneration: ptr.To[int64](3)},
			},
		},
	}
}

// A v2 HPA read as v1 and written back as v1 comes back whole: what v1 has
// no field for rides in the annotations.
func TestV2ToV1ToV2(t *testing.T) {
	in := fullV2()
	v1 := FromV2(in)
	if got := v1.Spec.TargetCPUUtilizationPercentage; got == nil || *got != 70 {
		t.Errorf("targetCPUUtilizationPercentage = %v, want 70", got)
	}
	if got := v1.Status.CurrentCPUUtilizationPercentage; got == nil || *got != 88 {
		t.Errorf("currentCPUUtilizationPercentage = %v, want 88", got)
	}
	for _, k := range []string{MetricSpecsAnnotation, MetricStatusesAnnotation, ConditionsAnnotation, BehaviorSpecsAnnotation, "team"} {
		if _, ok := v1.Annotations[k]; !ok {
			t.Errorf("annotation %s missing: %v", k, v1.Annotations)
		}
	}
	// The other metrics are v1 MetricSpecs, CPU utilization left out.
	var others []map[string]any
	if err := json.Unmarshal([]byte(v1.Annotations[MetricSpecsAnnotation]), &others); err != nil || len(others) != 5 {
		t.Fatalf("metrics annotation = %s (%v)", v1.Annotations[MetricSpecsAnnotation], err)
	}
	if mem := others[0]["resource"].(map[string]any); mem["name"] != "memory" || mem["targetAverageValue"] != "500Mi" {
		t.Errorf("memory metric in v1 shape = %v", others[0])
	}
	if pods := others[1]["pods"].(map[string]any); pods["metricName"] != "requests_per_second" || pods["targetAverageValue"] != "1k" {
		t.Errorf("pods metric in v1 shape = %v", others[1])
	}
	// The behavior annotation holds upstream's internal type: Go field
	// names for keys.
	var b map[string]map[string]any
	if err := json.Unmarshal([]byte(v1.Annotations[BehaviorSpecsAnnotation]), &b); err != nil {
		t.Fatal(err)
	}
	if down := b["ScaleDown"]; down["StabilizationWindowSeconds"] != float64(60) || down["SelectPolicy"] != "Min" || down["Tolerance"] != "50m" {
		t.Errorf("behavior annotation = %s", v1.Annotations[BehaviorSpecsAnnotation])
	}
	if up := b["ScaleUp"]; up["Tolerance"] != nil || len(up["Policies"].([]any)) != 2 {
		t.Errorf("behavior annotation = %s", v1.Annotations[BehaviorSpecsAnnotation])
	}

	back := ToV2(v1)
	sameObject(t, "v2 after v1", back, in)
	if in.Annotations["team"] != "shop" || len(in.Annotations) != 1 {
		t.Errorf("FromV2 changed its input's annotations: %v", in.Annotations)
	}
}

// A v1 HPA written as v1, read as v2 and back as v1 is the same object.
func TestV1ToV2ToV1(t *testing.T) {
	plain := &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef:                 autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:                    ptr.To[int32](1),
			MaxReplicas:                    5,
			TargetCPUUtilizationPercentage: ptr.To[int32](50),
		},
	}
	v2 := ToV2(plain)
	want := []autoscalingv2.MetricSpec{cpuUtilization(50)}
	sameObject(t, "metrics", v2.Spec.Metrics, want)
	if v2.Annotations != nil || v2.Spec.Behavior != nil {
		t.Errorf("v2 = %+v", v2)
	}
	back := FromV2(v2)
	sameObject(t, "v1 after v2", back, plain)

	// Now with everything in the annotations, in the shapes upstream
	// writes: a memory metric, a behavior that sets only scale-down, the
	// controller's current metrics and conditions.
	full := plain.DeepCopy()
	full.Annotations = map[string]string{
		"team":                   "shop",
		MetricSpecsAnnotation:    `[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}}]`,
		BehaviorSpecsAnnotation:  `{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":10,"PeriodSeconds":60}],"Tolerance":null}}`,
		MetricStatusesAnnotation: `[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":42,"currentAverageValue":"210m"}}]`,
		ConditionsAnnotation:     `[{"type":"ScalingActive","status":"True","lastTransitionTime":"2026-11-29T15:00:00Z","reason":"ValidMetricFound"}]`,
	}
	full.Status.CurrentCPUUtilizationPercentage = ptr.To[int32](42)
	v2 = ToV2(full)
	wantMetrics := []autoscalingv2.MetricSpec{
		{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("500Mi")}}},
		cpuUtilization(50),
	}
	sameObject(t, "metrics", v2.Spec.Metrics, wantMetrics)
	wantBehavior := &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: DefaultScaleUpRules(), // left out: upstream fills in the default rules
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 10, PeriodSeconds: 60}}},
	}
	sameObject(t, "behavior", v2.Spec.Behavior, wantBehavior)
	wantCurrent := []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
		Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](42), AverageValue: q("210m")}}}}
	sameObject(t, "current metrics", v2.Status.CurrentMetrics, wantCurrent)
	if len(v2.Status.Conditions) != 1 || v2.Status.Conditions[0].Reason != "ValidMetricFound" || v2.Status.Conditions[0].LastTransitionTime.IsZero() {
		t.Errorf("conditions = %+v", v2.Status.Conditions)
	}
	if len(v2.Annotations) != 1 || v2.Annotations["team"] != "shop" {
		t.Errorf("v2 annotations = %v, want only the user's", v2.Annotations)
	}
	if len(full.Annotations) != 5 {
		t.Errorf("ToV2 changed its input's annotations: %v", full.Annotations)
	}

	back = FromV2(v2)
	// The annotations come back with the same content (the behavior now
	// with its scale-up rules spelled out).
	sameObject(t, "spec", back.Spec, full.Spec)
	sameObject(t, "status", back.Status, full.Status)
	for _, k := range []string{MetricSpecsAnnotation, MetricStatusesAnnotation, ConditionsAnnotation} {
		sameJSON(t, k, back.Annotations[k], full.Annotations[k])
	}
	sameObject(t, "v2 after v1 after v2", ToV2(back), v2)
}

func sameJSON(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: %v in %s", what, err, want)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", what, d)
	}
}

// A v1 HPA that names no target gets upstream's 80% CPU on the way to v2
// (v1 left it to the controller; the conversion writes it down).
func TestV1WithoutTargetGetsDefaultCPU(t *testing.T) {
	v2 := ToV2(&autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3}})
	sameObject(t, "metrics", v2.Spec.Metrics, []autoscalingv2.MetricSpec{cpuUtilization(DefaultCPUUtilization)})
}

// An annotation that does not parse is dropped, not an error, as upstream;
// and round-trip annotations a v2 object carries never reach v1 as they
// were (they would say something the object does not).
func TestStaleAndBrokenAnnotations(t *testing.T) {
	v2 := ToV2(&autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{MetricSpecsAnnotation: "not json", BehaviorSpecsAnnotation: "{}"}},
		Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3, TargetCPUUtilizationPercentage: ptr.To[int32](60)},
	})
	sameObject(t, "metrics", v2.Spec.Metrics, []autoscalingv2.MetricSpec{cpuUtilization(60)})
	if v2.Annotations != nil || v2.Spec.Behavior != nil {
		t.Errorf("annotations %v, behavior %+v: want neither", v2.Annotations, v2.Spec.Behavior)
	}

	stale := fullV2()
	stale.Spec.Metrics = stale.Spec.Metrics[len(stale.Spec.Metrics)-1:]
	stale.Spec.Behavior = nil
	stale.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
	stale.Annotations[MetricSpecsAnnotation] = `[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"1Gi"}}]`
	stale.Annotations[ConditionsAnnotation] = `[]`
	v1 := FromV2(stale)
	if len(v1.Annotations) != 1 || v1.Annotations["team"] != "shop" {
		t.Errorf("v1 annotations = %v, want only the user's", v1.Annotations)
	}
}
