package podautoscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// Condition reasons and messages, upstream's.
const (
	reasonFailedGetScale      = "FailedGetScale"
	reasonFailedUpdateScale   = "FailedUpdateScale"
	reasonSucceededRescale    = "SucceededRescale"
	reasonReadyForNewScale    = "ReadyForNewScale"
	reasonScaleDownStabilized = "ScaleDownStabilized"
	reasonScaleUpStabilized   = "ScaleUpStabilized"
	reasonScaleDownLimit      = "ScaleDownLimit"
	reasonScalingDisabled     = "ScalingDisabled"
	reasonValidMetricFound    = "ValidMetricFound"
	reasonFailedGetMetric     = "FailedGetResourceMetric"
	reasonInvalidSelector     = "InvalidSelector"
	reasonDesiredWithinRange  = "DesiredWithinRange"
	reasonTooFewReplicas      = "TooFewReplicas"
	reasonTooManyReplicas     = "TooManyReplicas"
	reasonScaleUpLimit        = "ScaleUpLimit"
	reasonInvalidMetricSource = "InvalidMetricSourceType"

	eventSuccessfulRescale = "SuccessfulRescale"
	eventFailedRescale     = "FailedRescale"
	eventFailedGetScale    = "FailedGetScale"
	eventFailedCompute     = "FailedComputeMetricsReplicas"
)

// scaleUpLimitFactor and scaleUpLimitMinimum bound a scale-up without a
// behavior: at most max(2×current, 4) (calculateScaleUpLimit).
const (
	scaleUpLimitFactor  = 2.0
	scaleUpLimitMinimum = 4.0
)

// reconcile is upstream's reconcileAutoscaler for one HPA (a copy).
func (a *Controller) reconcile(ctx context.Context, key string, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	old := hpa.Status.DeepCopy()
	ref := hpa.Spec.ScaleTargetRef
	scale, gr, err := a.getScale(ctx, hpa.Namespace, ref)
	if err != nil {
		a.recorder.Event(hpa, corev1.EventTypeWarning, eventFailedGetScale, err.Error())
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, reasonFailedGetScale, "the HPA controller was unable to get the target's current scale: %v", err)
		a.updateStatusIfChanged(ctx, old, hpa)
		return fmt.Errorf("failed to query scale subresource for %s/%s: %w", ref.Kind, ref.Name, err)
	}
	setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, reasonSucceededRescale, "the HPA controller was able to get the target's current scale")
	current := scale.Spec.Replicas
	a.recordInitialRecommendation(key, current)

	var desired int32
	var rescaleReason string
	var statuses []autoscalingv2.MetricStatus
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	rescale := true
	switch {
	case current == 0 && minReplicas != 0:
		desired, rescale = 0, false
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, reasonScalingDisabled, "scaling is disabled since the replica count of the target is zero")
	case current > hpa.Spec.MaxReplicas:
		rescaleReason, desired = "Current number of replicas above Spec.MaxReplicas", hpa.Spec.MaxReplicas
	case current < minReplicas:
		rescaleReason, desired = "Current number of replicas below Spec.MinReplicas", minReplicas
	default:
		var metricName string
		desired, metricName, statuses, err = a.computeReplicasForMetrics(ctx, hpa, scale)
		if err != nil {
			a.setCurrentReplicasAndMetrics(hpa, current, statuses)
			a.updateStatusIfChanged(ctx, old, hpa)
			return fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s/%s/%s: %w", ref.Kind, hpa.Namespace, ref.Name, err)
		}
		if desired > current {
			rescaleReason = fmt.Sprintf("%s above target", metricName)
		}
		if desired < current {
			rescaleReason = "All metrics below target"
		}
		if hpa.Spec.Behavior == nil {
			desired = a.normalizeDesiredReplicas(hpa, key, current, desired, minReplicas)
		} else {
			desired = a.normalizeDesiredReplicasWithBehaviors(hpa, key, current, desired, minReplicas)
		}
		rescale = desired != current
	}

	if rescale {
		scale.Spec.Replicas = desired
		if _, err := a.updateScale(ctx, hpa.Namespace, gr, scale); err != nil {
			a.recorder.Eventf(hpa, corev1.EventTypeWarning, eventFailedRescale, "New size: %d; reason: %s; error: %v", desired, rescaleReason, err)
			setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, reasonFailedUpdateScale, "the HPA controller was unable to update the target scale: %v", err)
			a.setCurrentReplicasAndMetrics(hpa, current, statuses)
			a.updateStatusIfChanged(ctx, old, hpa)
			return fmt.Errorf("failed to rescale %s: %w", key, err)
		}
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, reasonSucceededRescale, "the HPA controller was able to update the target scale to %d", desired)
		a.recorder.Eventf(hpa, corev1.EventTypeNormal, eventSuccessfulRescale, "New size: %d; reason: %s", desired, rescaleReason)
		a.storeScaleEvent(hpa.Spec.Behavior, key, current, desired)
		a.logger.Info("successful rescale", "hpa", key, "currentReplicas", current, "desiredReplicas", desired, "reason", rescaleReason)
		now := metav1.NewTime(a.now())
		hpa.Status.LastScaleTime = &now
	} else {
		desired = current
	}
	hpa.Status.ObservedGeneration = &hpa.Generation
	a.setStatus(hpa, current, desired, statuses)
	return a.updateStatusIfChanged(ctx, old, hpa)
}

// computeReplicasForMetrics takes the largest proposal of the HPA's
// metrics, as upstream does.
func (a *Controller) computeReplicasForMetrics(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, scale *autoscalingv1.Scale) (int32, string, []autoscalingv2.MetricStatus, error) {
	selector, err := labels.Parse(scale.Status.Selector)
	if err != nil || scale.Status.Selector == "" {
		msg := "the HPA target's scale is missing a selector"
		if err != nil {
			msg = fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		}
		a.recorder.Event(hpa, corev1.EventTypeWarning, reasonInvalidSelector, msg)
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, reasonInvalidSelector, "%s", msg)
		return 0, "", nil, fmt.Errorf("%s", msg)
	}
	statuses := make([]autoscalingv2.MetricStatus, len(hpa.Spec.Metrics))
	var replicas int32
	var metricName string
	var firstErr error
	invalid := 0
	for i, spec := range hpa.Spec.Metrics {
		proposal, name, status, err := a.computeReplicasForMetric(ctx, hpa, spec, scale.Spec.Replicas, selector)
		if err != nil {
			invalid++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		statuses[i] = status
		if replicas == 0 || proposal > replicas {
			replicas, metricName = proposal, name
		}
	}
	if invalid == len(hpa.Spec.Metrics) || (invalid > 0 && replicas < scale.Spec.Replicas) {
		a.recorder.Event(hpa, corev1.EventTypeWarning, eventFailedCompute, firstErr.Error())
		return 0, "", statuses, fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %w", invalid, len(hpa.Spec.Metrics), firstErr)
	}
	setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionTrue, reasonValidMetricFound, "the HPA was able to successfully calculate a replica count from %s", metricName)
	return replicas, metricName, statuses, nil
}

func (a *Controller) computeReplicasForMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, spec autoscalingv2.MetricSpec, current int32, selector labels.Selector) (int32, string, autoscalingv2.MetricStatus, error) {
	if spec.Type != autoscalingv2.ResourceMetricSourceType || spec.Resource == nil {
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, reasonInvalidMetricSource, "the HPA was unable to compute the replica count: unrecognized metric source type %q", spec.Type)
		return 0, "", autoscalingv2.MetricStatus{}, fmt.Errorf("unrecognized metric source type %q: klab's metrics API serves resource metrics only", spec.Type)
	}
	res := spec.Resource.Name
	pods, err := a.podLister.Pods(hpa.Namespace).List(selector)
	if err != nil {
		return 0, "", autoscalingv2.MetricStatus{}, err
	}
	metrics, err := a.resourceMetrics(ctx, hpa.Namespace, res, selector)
	fail := func(err error) (int32, string, autoscalingv2.MetricStatus, error) {
		a.recorder.Event(hpa, corev1.EventTypeWarning, reasonFailedGetMetric, err.Error())
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, reasonFailedGetMetric, "the HPA was unable to compute the replica count: %v", err)
		return 0, "", autoscalingv2.MetricStatus{}, fmt.Errorf("failed to get %s utilization: %w", res, err)
	}
	if err != nil {
		return fail(fmt.Errorf("unable to get metrics for resource %s: %w", res, err))
	}
	target := spec.Resource.Target
	status := autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: res}}
	if target.AverageValue != nil {
		n, usage, err := a.calc.averageValueReplicas(current, target.AverageValue.MilliValue(), res, metrics, pods)
		if err != nil {
			return fail(err)
		}
		status.Resource.Current.AverageValue = resource.NewMilliQuantity(usage, resource.DecimalSI)
		return n, fmt.Sprintf("%s resource", res), status, nil
	}
	if target.AverageUtilization == nil {
		return fail(fmt.Errorf("invalid resource metric source: neither a utilization target nor a value target was set"))
	}
	n, utilization, raw, err := a.calc.utilizationReplicas(current, *target.AverageUtilization, res, metrics, pods)
	if err != nil {
		return fail(err)
	}
	status.Resource.Current.AverageUtilization = &utilization
	status.Resource.Current.AverageValue = resource.NewMilliQuantity(raw, resource.DecimalSI)
	return n, fmt.Sprintf("%s resource utilization (percentage of request)", res), status, nil
}

// resourceMetrics reads the pods' usage from metrics.k8s.io, summed over
// each pod's containers, in milli-units.
func (a *Controller) resourceMetrics(ctx context.Context, ns string, res corev1.ResourceName, selector labels.Selector) (map[string]podMetric, error) {
	data, err := a.client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", ns, "pods").
		Param("labelSelector", selector.String()).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var list metricsv1beta1.PodMetricsList
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("decode pod metrics: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("no metrics returned from resource metrics API")
	}
	out := make(map[string]podMetric, len(list.Items))
	for _, m := range list.Items {
		var sum int64
		complete := true
		for _, c := range m.Containers {
			q, ok := c.Usage[res]
			if !ok {
				complete = false
				break
			}
			sum += q.MilliValue()
		}
		if complete {
			out[m.Name] = podMetric{value: sum, timestamp: m.Timestamp.Time, window: m.Window.Duration}
		}
	}
	return out, nil
}

// normalizeDesiredReplicas is upstream's for an HPA without a behavior:
// the highest recommendation within the downscale stabilization window,
// bounded by minReplicas, maxReplicas and the scale-up limit.
func (a *Controller) normalizeDesiredReplicas(hpa *autoscalingv2.HorizontalPodAutoscaler, key string, current, prenormalized, minReplicas int32) int32 {
	stabilized := a.stabilizeRecommendation(key, prenormalized)
	if stabilized != prenormalized {
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, reasonScaleDownStabilized, "recent recommendations were higher than current one, applying the highest recent recommendation")
	} else {
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, reasonReadyForNewScale, "recommended size matches current size")
	}
	desired, reason, message := convertDesiredReplicasWithRules(current, stabilized, minReplicas, hpa.Spec.MaxReplicas)
	if desired == stabilized {
		setCondition(hpa, autoscalingv2.ScalingLimited, corev1.ConditionFalse, reason, "%s", message)
	} else {
		setCondition(hpa, autoscalingv2.ScalingLimited, corev1.ConditionTrue, reason, "%s", message)
	}
	return desired
}

// recordInitialRecommendation seeds an HPA's history with the current
// size, as upstream does on its first look.
func (a *Controller) recordInitialRecommendation(key string, current int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.recommendations[key] == nil {
		a.recommendations[key] = []timestampedRecommendation{{current, a.now()}}
	}
}

// stabilizeRecommendation returns the highest recommendation within the
// downscale stabilization window (the new one included) and records the
// new one, in the slot of one older than the window if there is one.
func (a *Controller) stabilizeRecommendation(key string, prenormalized int32) int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	cutoff := now.Add(-a.downscaleStabilisationWindow)
	maxRecommendation := prenormalized
	oldSample := -1
	for i, r := range a.recommendations[key] {
		if r.timestamp.Before(cutoff) {
			oldSample = i
		} else if r.replicas > maxRecommendation {
			maxRecommendation = r.replicas
		}
	}
	entry := timestampedRecommendation{prenormalized, now}
	if oldSample >= 0 {
		a.recommendations[key][oldSample] = entry
	} else {
		a.recommendations[key] = append(a.recommendations[key], entry)
	}
	return maxRecommendation
}

// convertDesiredReplicasWithRules bounds desired by minReplicas,
// maxReplicas and the scale-up limit, saying which bound applied.
func convertDesiredReplicasWithRules(current, desired, minReplicas, maxReplicas int32) (int32, string, string) {
	scaleUpLimit := int32(math.Max(scaleUpLimitFactor*float64(current), scaleUpLimitMinimum))
	maximumAllowed, maxReason, maxMessage := scaleUpLimit, reasonScaleUpLimit, "the desired replica count is increasing faster than the maximum scale rate"
	if maxReplicas < scaleUpLimit {
		maximumAllowed, maxReason, maxMessage = maxReplicas, reasonTooManyReplicas, "the desired replica count is more than the maximum replica count"
	}
	if desired < minReplicas {
		return minReplicas, reasonTooFewReplicas, "the desired replica count is less than the minimum replica count"
	}
	if desired > maximumAllowed {
		return maximumAllowed, maxReason, maxMessage
	}
	return desired, reasonDesiredWithinRange, "the desired count is within the acceptable range"
}

func (a *Controller) setCurrentReplicasAndMetrics(hpa *autoscalingv2.HorizontalPodAutoscaler, current int32, statuses []autoscalingv2.MetricStatus) {
	a.setStatus(hpa, current, hpa.Status.DesiredReplicas, statuses)
}

func (a *Controller) setStatus(hpa *autoscalingv2.HorizontalPodAutoscaler, current, desired int32, statuses []autoscalingv2.MetricStatus) {
	hpa.Status.CurrentReplicas = current
	hpa.Status.DesiredReplicas = desired
	var kept []autoscalingv2.MetricStatus
	for _, s := range statuses {
		if s.Type != "" {
			kept = append(kept, s)
		}
	}
	hpa.Status.CurrentMetrics = kept
}

// setCondition sets a condition, keeping its transition time when its
// status does not change.
func setCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for i := range hpa.Status.Conditions {
		c := &hpa.Status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.Now()
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		return
	}
	hpa.Status.Conditions = append(hpa.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
		Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now(),
	})
}

func (a *Controller) updateStatusIfChanged(ctx context.Context, old *autoscalingv2.HorizontalPodAutoscalerStatus, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	if equalStatus(old, &hpa.Status) {
		return nil
	}
	_, err := a.client.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("failed to update status for %s: %w", hpa.Name, err)
	}
	return nil
}

func equalStatus(a, b *autoscalingv2.HorizontalPodAutoscalerStatus) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// --- the scale subresource ---

func (a *Controller) getScale(ctx context.Context, ns string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, schema.GroupResource, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupResource{}, fmt.Errorf("invalid API version in scale target reference: %w", err)
	}
	switch {
	case gv.Group == "apps" && ref.Kind == "Deployment":
		s, err := a.client.AppsV1().Deployments(ns).GetScale(ctx, ref.Name, metav1.GetOptions{})
		return s, schema.GroupResource{Group: "apps", Resource: "deployments"}, err
	case gv.Group == "apps" && ref.Kind == "ReplicaSet":
		s, err := a.client.AppsV1().ReplicaSets(ns).GetScale(ctx, ref.Name, metav1.GetOptions{})
		return s, schema.GroupResource{Group: "apps", Resource: "replicasets"}, err
	case gv.Group == "apps" && ref.Kind == "StatefulSet":
		s, err := a.client.AppsV1().StatefulSets(ns).GetScale(ctx, ref.Name, metav1.GetOptions{})
		return s, schema.GroupResource{Group: "apps", Resource: "statefulsets"}, err
	}
	return nil, schema.GroupResource{}, fmt.Errorf("unable to determine resource for scale target reference: no matches for kind %q in group %q", ref.Kind, gv.Group)
}

func (a *Controller) updateScale(ctx context.Context, ns string, gr schema.GroupResource, scale *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	switch gr.Resource {
	case "deployments":
		return a.client.AppsV1().Deployments(ns).UpdateScale(ctx, scale.Name, scale, metav1.UpdateOptions{})
	case "replicasets":
		return a.client.AppsV1().ReplicaSets(ns).UpdateScale(ctx, scale.Name, scale, metav1.UpdateOptions{})
	case "statefulsets":
		return a.client.AppsV1().StatefulSets(ns).UpdateScale(ctx, scale.Name, scale, metav1.UpdateOptions{})
	}
	return nil, fmt.Errorf("no scale subresource for %s", gr)
}
