package validation

import (
	"fmt"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestValidateHPA(t *testing.T) {
	valid := func() *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MinReplicas:    ptr.To[int32](1), MaxReplicas: 5,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}},
			},
		}
	}
	tests := []struct {
		name   string
		mutate func(*autoscalingv2.HorizontalPodAutoscaler)
		want   string // "" for valid
	}{
		{name: "valid", mutate: func(*autoscalingv2.HorizontalPodAutoscaler) {}},
		{name: "min 0", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](0) },
			want: "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"},
		{name: "max below min", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](6) },
			want: "spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`"},
		{name: "no kind", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Kind = "" },
			want: "spec.scaleTargetRef.kind: Required value"},
		{name: "zero utilization", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[0].Resource.Target.AverageUtilization = ptr.To[int32](0)
		}, want: "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"},
		{name: "behavior within bounds", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](3600), SelectPolicy: ptr.To(autoscalingv2.MinChangePolicySelect),
					Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 1800}}},
			}
		}},
		{name: "behavior without policies", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{}}}
		}, want: "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy"},
		{name: "window over an hour", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](3601),
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 10, PeriodSeconds: 60}}}}
		}, want: "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 3601: must be less than or equal to 3600"},
		{name: "negative window", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](-1),
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 10, PeriodSeconds: 60}}}}
		}, want: "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: -1: must be greater than or equal to zero"},
		{name: "unknown selectPolicy", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.ScalingPolicySelect("Most")),
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 10, PeriodSeconds: 60}}}}
		}, want: `spec.behavior.scaleUp.selectPolicy: Unsupported value: "Most": supported values: "Disabled", "Max", "Min"`},
		{name: "bad policy", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}, {Type: "Replicas", Value: 0, PeriodSeconds: 1801}}}}
		}, want: `spec.behavior.scaleUp.policies[1].type: Unsupported value: "Replicas": supported values: "Percent", "Pods", spec.behavior.scaleUp.policies[1].value: Invalid value: 0: must be greater than zero, spec.behavior.scaleUp.policies[1].periodSeconds: Invalid value: 1801: must be less than or equal to 1800`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hpa := valid()
			tt.mutate(hpa)
			errs := validateHPA(hpa)
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs.ToAggregate())
				}
				return
			}
			if errs.ToAggregate() == nil || !strings.Contains(errs.ToAggregate().Error(), tt.want) {
				t.Errorf("errors %v, want %q", errs.ToAggregate(), tt.want)
			}
		})
	}
}

// An autoscaling/v1 HPA is checked as the v2 object it converts to, so a
// bad metric in its metrics annotation is refused with v2's field path.
func TestValidateHPAV1(t *testing.T) {
	hpa := &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](50),
		},
	}
	if errs := ValidateCreate(hpa); len(errs) != 0 {
		t.Fatalf("valid v1 HPA: %v", errs)
	}
	bad := hpa.DeepCopy()
	bad.Spec.TargetCPUUtilizationPercentage = ptr.To[int32](0)
	if errs := ValidateCreate(bad); !strings.Contains(fmt.Sprint(errs), "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0") {
		t.Errorf("target 0%%: %v", errs)
	}
	bad = hpa.DeepCopy()
	bad.Annotations = map[string]string{"autoscaling.alpha.kubernetes.io/metrics": `[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"0"}}]`}
	if errs := ValidateUpdate(bad, hpa); !strings.Contains(fmt.Sprint(errs), "spec.metrics[0].resource.target.averageValue: Invalid value: \"0\": must be positive") {
		t.Errorf("a memory target of 0, in the annotation: %v", errs)
	}
	bad = hpa.DeepCopy()
	bad.Status.CurrentReplicas = -1
	if errs := ValidateStatusUpdate(bad, hpa); !strings.Contains(fmt.Sprint(errs), "status.currentReplicas") {
		t.Errorf("negative current replicas: %v", errs)
	}
}
