package defaults

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// defaultCPUUtilization is the target an HPA without metrics gets
// (autoscaling.DefaultCPUUtilization).
const defaultCPUUtilization = 80

// defaultHPA is upstream's SetDefaults_HorizontalPodAutoscaler for
// autoscaling/v2: minReplicas 1, a CPU utilization target of 80% when no
// metric is given, and a behavior's unset rules filled with the defaults
// (a nil behavior stays nil: the controller then applies its flags).
func defaultHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	if hpa.Spec.MinReplicas == nil {
		hpa.Spec.MinReplicas = ptr.To[int32](1)
	}
	if len(hpa.Spec.Metrics) == 0 {
		hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](defaultCPUUtilization),
			}},
		}}
	}
	if b := hpa.Spec.Behavior; b != nil {
		b.ScaleUp = scalingRules(b.ScaleUp, ptr.To[int32](0), []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		})
		// The scale-down window stays unset: the controller applies its
		// --horizontal-pod-autoscaler-downscale-stabilization.
		b.ScaleDown = scalingRules(b.ScaleDown, nil, []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		})
	}
}

// scalingRules is GenerateHPAScaleUpRules / GenerateHPAScaleDownRules:
// each unset field of r takes the default.
func scalingRules(r *autoscalingv2.HPAScalingRules, window *int32, policies []autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	if r == nil {
		r = &autoscalingv2.HPAScalingRules{}
	}
	if r.StabilizationWindowSeconds == nil {
		r.StabilizationWindowSeconds = window
	}
	if r.SelectPolicy == nil {
		r.SelectPolicy = ptr.To(autoscalingv2.MaxChangePolicySelect)
	}
	// Only a list left out is filled, as upstream: an empty one is the
	// user's, and validation refuses it.
	if r.Policies == nil {
		r.Policies = policies
	}
	return r
}
