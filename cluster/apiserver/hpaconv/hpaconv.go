// Package hpaconv converts a HorizontalPodAutoscaler between autoscaling/v1
// and autoscaling/v2. klab stores HPAs once, as v2, and serves them in both
// versions, as kube-apiserver does; the mapping is upstream's
// (pkg/apis/autoscaling/v1/conversion.go, through its internal HPA, which
// has v2's shape).
//
// A v1 HPA has one metric, spec.targetCPUUtilizationPercentage, and one
// status value, status.currentCPUUtilizationPercentage. Whatever else a v2
// HPA holds rides in v1 annotations, in the shapes upstream writes them, so
// that an object written in one version and read in the other loses
// nothing:
//
//   - autoscaling.alpha.kubernetes.io/metrics: every metric but CPU
//     utilization, as a JSON list of v1 MetricSpecs (the v2beta1 shape:
//     targetAverageUtilization, metricName, ...);
//   - autoscaling.alpha.kubernetes.io/current-metrics: every current metric,
//     CPU included, as v1 MetricStatuses;
//   - autoscaling.alpha.kubernetes.io/behavior: spec.behavior, in the JSON
//     of upstream's internal type, whose fields have no tags (ScaleUp,
//     StabilizationWindowSeconds, ...);
//   - autoscaling.alpha.kubernetes.io/conditions: status.conditions.
//
// The annotations are dropped on the way to v2 and written afresh on the
// way to v1, so a stale one never survives.
package hpaconv

import (
	"encoding/json"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// The round-trip annotations (upstream's pkg/apis/autoscaling/annotations.go).
const (
	MetricSpecsAnnotation    = "autoscaling.alpha.kubernetes.io/metrics"
	MetricStatusesAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	ConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	BehaviorSpecsAnnotation  = "autoscaling.alpha.kubernetes.io/behavior"
)

// DefaultCPUUtilization is the CPU target of an HPA that names no metric:
// v1 left it to the controller, v2 writes it down, and so does the
// conversion from v1.
const DefaultCPUUtilization = 80

// ToV2 returns the v2 form of a v1 HPA. It never changes in.
func ToV2(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	in = in.DeepCopy()
	out := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: in.ObjectMeta,
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas,
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime:      in.Status.LastScaleTime,
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	if in.Spec.TargetCPUUtilizationPercentage != nil {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(*in.Spec.TargetCPUUtilizationPercentage)}
	}
	if in.Status.CurrentCPUUtilizationPercentage != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{
				AverageUtilization: in.Status.CurrentCPUUtilizationPercentage,
			}},
		}}
	}
	ann := in.Annotations
	// An annotation that does not parse is ignored, as upstream ignores it.
	if enc, ok := ann[MetricSpecsAnnotation]; ok {
		var others []autoscalingv1.MetricSpec
		if err := json.Unmarshal([]byte(enc), &others); err == nil {
			// The other metrics come first, the CPU target last.
			metrics := make([]autoscalingv2.MetricSpec, 0, len(others)+len(out.Spec.Metrics))
			for _, m := range others {
				metrics = append(metrics, metricSpecToV2(m))
			}
			out.Spec.Metrics = append(metrics, out.Spec.Metrics...)
		}
	}
	if enc, ok := ann[BehaviorSpecsAnnotation]; ok {
		var b behavior
		if err := json.Unmarshal([]byte(enc), &b); err == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			out.Spec.Behavior = b.toV2()
		}
	}
	if enc, ok := ann[MetricStatusesAnnotation]; ok {
		// These carry more than currentCPUUtilizationPercentage does.
		var current []autoscalingv1.MetricStatus
		if err := json.Unmarshal([]byte(enc), &current); err == nil {
			out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, len(current))
			for i, m := range current {
				out.Status.CurrentMetrics[i] = metricStatusToV2(m)
			}
		}
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(DefaultCPUUtilization)}
	}
	if enc, ok := ann[ConditionsAnnotation]; ok {
		var conds []autoscalingv1.HorizontalPodAutoscalerCondition
		if err := json.Unmarshal([]byte(enc), &conds); err == nil {
			out.Status.Conditions = make([]autoscalingv2.HorizontalPodAutoscalerCondition, len(conds))
			for i, c := range conds {
				out.Status.Conditions[i] = autoscalingv2.HorizontalPodAutoscalerCondition{
					Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
					LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration,
				}
			}
		}
	}
	out.Annotations = dropRoundTrip(out.Annotations)
	if b := out.Spec.Behavior; b != nil {
		// A direction the annotation left out gets the default rules.
		if b.ScaleUp == nil {
			b.ScaleUp = DefaultScaleUpRules()
		}
		if b.ScaleDown == nil {
			b.ScaleDown = DefaultScaleDownRules()
		}
	}
	return out
}

// FromV2 returns the v1 form of a v2 HPA. It never changes in.
func FromV2(in *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv1.HorizontalPodAutoscaler {
	in = in.DeepCopy()
	out := &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: in.ObjectMeta,
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas,
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime:      in.Status.LastScaleTime,
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	// Only annotations this conversion writes may be there.
	out.Annotations = dropRoundTrip(out.Annotations)
	ann := map[string]string{}

	var others []autoscalingv1.MetricSpec
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) {
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				out.Spec.TargetCPUUtilizationPercentage = ptr.To(*m.Resource.Target.AverageUtilization)
			}
			continue
		}
		others = append(others, metricSpecFromV2(m))
	}
	if len(others) > 0 {
		annotate(ann, MetricSpecsAnnotation, others)
	}
	// Every current metric goes in the annotation, CPU included: its raw
	// value is there and not in currentCPUUtilizationPercentage.
	if len(in.Status.CurrentMetrics) > 0 {
		current := make([]autoscalingv1.MetricStatus, len(in.Status.CurrentMetrics))
		for i, m := range in.Status.CurrentMetrics {
			current[i] = metricStatusFromV2(m)
			if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
				out.Status.CurrentCPUUtilizationPercentage = ptr.To(*m.Resource.Current.AverageUtilization)
			}
		}
		annotate(ann, MetricStatusesAnnotation, current)
	}
	if in.Spec.Behavior != nil {
		annotate(ann, BehaviorSpecsAnnotation, behaviorFromV2(in.Spec.Behavior))
	}
	if len(in.Status.Conditions) > 0 {
		conds := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(in.Status.Conditions))
		for i, c := range in.Status.Conditions {
			conds[i] = autoscalingv1.HorizontalPodAutoscalerCondition{
				Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration,
			}
		}
		annotate(ann, ConditionsAnnotation, conds)
	}
	if len(ann) > 0 {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		for k, v := range ann {
			out.Annotations[k] = v
		}
	}
	return out
}

// annotate puts v's JSON in ann[key]. The values are plain API structs
// (strings, numbers, quantities, times), whose encoding cannot fail.
func annotate(ann map[string]string, key string, v any) {
	enc, _ := json.Marshal(v)
	ann[key] = string(enc)
}

// dropRoundTrip returns the annotations without the round-trip ones, as a
// new map when it removes any (nil when nothing is left).
func dropRoundTrip(in map[string]string) map[string]string {
	found := false
	for _, k := range []string{MetricSpecsAnnotation, MetricStatusesAnnotation, ConditionsAnnotation, BehaviorSpecsAnnotation} {
		if _, ok := in[k]; ok {
			found = true
		}
	}
	if !found {
		return in
	}
	out := map[string]string{}
	for k, v := range in {
		switch k {
		case MetricSpecsAnnotation, MetricStatusesAnnotation, ConditionsAnnotation, BehaviorSpecsAnnotation:
		default:
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func cpuUtilization(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
			Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(percent),
		}},
	}
}

// isCPUUtilization reports whether m is what targetCPUUtilizationPercentage
// says.
func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil
}

// The metric mappings below are upstream's, field for field: a v1 value
// that is not a pointer becomes a set v2 pointer, even when it is zero.

func metricSpecToV2(in autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		typ := autoscalingv2.ValueMetricType
		if s.AverageValue != nil {
			typ = autoscalingv2.AverageValueMetricType
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Target:          autoscalingv2.MetricTarget{Type: typ, Value: ptr.To(s.TargetValue), AverageValue: s.AverageValue},
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
		}
	}
	if s := in.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(s.TargetAverageValue)},
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
		}
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: s.Name, Target: resourceTarget(s.TargetAverageUtilization, s.TargetAverageValue)}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{
			Name: s.Name, Container: s.Container, Target: resourceTarget(s.TargetAverageUtilization, s.TargetAverageValue),
		}
	}
	if s := in.External; s != nil {
		typ := autoscalingv2.ValueMetricType
		if s.TargetValue == nil {
			typ = autoscalingv2.AverageValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector},
			Target: autoscalingv2.MetricTarget{Type: typ, Value: s.TargetValue, AverageValue: s.TargetAverageValue},
		}
	}
	return out
}

func resourceTarget(utilization *int32, averageValue *resource.Quantity) autoscalingv2.MetricTarget {
	typ := autoscalingv2.AverageValueMetricType
	if utilization != nil {
		typ = autoscalingv2.UtilizationMetricType
	}
	return autoscalingv2.MetricTarget{Type: typ, AverageUtilization: utilization, AverageValue: averageValue}
}

func metricSpecFromV2(in autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		out.Object = &autoscalingv1.ObjectMetricSource{
			Target:       autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName:   s.Metric.Name,
			Selector:     s.Metric.Selector,
			AverageValue: s.Target.AverageValue,
		}
		if s.Target.Value != nil {
			out.Object.TargetValue = *s.Target.Value
		}
	}
	if s := in.Pods; s != nil {
		out.Pods = &autoscalingv1.PodsMetricSource{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Target.AverageValue != nil {
			out.Pods.TargetAverageValue = *s.Target.AverageValue
		}
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{
			Name: s.Name, TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue,
		}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{
			Name: s.Name, Container: s.Container, TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue,
		}
	}
	if s := in.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricSource{
			MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector, TargetValue: s.Target.Value, TargetAverageValue: s.Target.AverageValue,
		}
	}
	return out
}

func metricStatusToV2(in autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		out.Object = &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Current:         autoscalingv2.MetricValueStatus{Value: ptr.To(s.CurrentValue), AverageValue: s.AverageValue},
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
		}
	}
	if s := in.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricStatus{
			Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(s.CurrentAverageValue)},
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
		}
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: s.Name, Current: autoscalingv2.MetricValueStatus{
			AverageValue: ptr.To(s.CurrentAverageValue), AverageUtilization: s.CurrentAverageUtilization,
		}}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, Current: autoscalingv2.MetricValueStatus{
			AverageValue: ptr.To(s.CurrentAverageValue), AverageUtilization: s.CurrentAverageUtilization,
		}}
	}
	if s := in.External; s != nil {
		out.External = &autoscalingv2.ExternalMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: ptr.To(s.CurrentValue), AverageValue: s.CurrentAverageValue},
		}
	}
	return out
}

func metricStatusFromV2(in autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		out.Object = &autoscalingv1.ObjectMetricStatus{
			Target:       autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName:   s.Metric.Name,
			Selector:     s.Metric.Selector,
			AverageValue: s.Current.AverageValue,
		}
		if s.Current.Value != nil {
			out.Object.CurrentValue = *s.Current.Value
		}
	}
	if s := in.Pods; s != nil {
		out.Pods = &autoscalingv1.PodsMetricStatus{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Current.AverageValue != nil {
			out.Pods.CurrentAverageValue = *s.Current.AverageValue
		}
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricStatus{Name: s.Name, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			out.Resource.CurrentAverageValue = *s.Current.AverageValue
		}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			out.ContainerResource.CurrentAverageValue = *s.Current.AverageValue
		}
	}
	if s := in.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricStatus{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector, CurrentAverageValue: s.Current.AverageValue}
		if s.Current.Value != nil {
			out.External.CurrentValue = *s.Current.Value
		}
	}
	return out
}

// behavior is upstream's internal HorizontalPodAutoscalerBehavior, whose
// JSON is what the behavior annotation holds: its fields carry no json
// tags, so the keys are the Go names and a nil pointer is null.
type behavior struct {
	ScaleUp   *scalingRules
	ScaleDown *scalingRules
}

type scalingRules struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *autoscalingv2.ScalingPolicySelect
	Policies                   []scalingPolicy
	Tolerance                  *resource.Quantity
}

type scalingPolicy struct {
	Type          autoscalingv2.HPAScalingPolicyType
	Value         int32
	PeriodSeconds int32
}

func behaviorFromV2(b *autoscalingv2.HorizontalPodAutoscalerBehavior) behavior {
	return behavior{ScaleUp: rulesFromV2(b.ScaleUp), ScaleDown: rulesFromV2(b.ScaleDown)}
}

func rulesFromV2(r *autoscalingv2.HPAScalingRules) *scalingRules {
	if r == nil {
		return nil
	}
	out := &scalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, scalingPolicy(p))
	}
	return out
}

func (b behavior) toV2() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: b.ScaleUp.toV2(), ScaleDown: b.ScaleDown.toV2()}
}

func (r *scalingRules) toV2() *autoscalingv2.HPAScalingRules {
	if r == nil {
		return nil
	}
	out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, autoscalingv2.HPAScalingPolicy(p))
	}
	return out
}

// DefaultScaleUpRules are upstream's scale-up rules for a behavior that
// leaves them out (GenerateHPAScaleUpRules(nil)): no stabilization, and at
// most 4 pods or a doubling every 15 s, whichever is more.
func DefaultScaleUpRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To[int32](0),
		SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// DefaultScaleDownRules are upstream's scale-down rules for a behavior that
// leaves them out (GenerateHPAScaleDownRules(nil)): down to any number every
// 15 s, with the window left to the controller's
// --horizontal-pod-autoscaler-downscale-stabilization.
func DefaultScaleDownRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	}
}
