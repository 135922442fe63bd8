package podautoscaler

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/timing"
)

// spec.behavior, as upstream's normalizeDesiredReplicasWithBehaviors: the
// recommendation is first stabilised (the lowest of the scale-up window's
// recommendations and the highest of the scale-down window's bound it),
// then limited by the rate policies: each policy proposes the size the
// target may reach from its size at the start of the policy's period (the
// scale events of that period undone), and selectPolicy picks the largest
// change (Max), the smallest (Min) or none (Disabled).
//
// The windows and periods are seconds in the spec, as upstream; they pass
// through the lab's speed like the controller's flags, so at speed 10 the
// default 300 s scale-down window lasts 30 s and a 15 s period 1.5 s.

// timestampedScaleEvent is one scaling the controller made: how many
// replicas it added (scale-up events) or removed (scale-down events), and
// whether it has fallen out of the longest policy period.
type timestampedScaleEvent struct {
	replicaChange int32
	timestamp     time.Time
	outdated      bool
}

// normalizationArg is upstream's NormalizationArg.
type normalizationArg struct {
	key               string
	scaleUpBehavior   *autoscalingv2.HPAScalingRules
	scaleDownBehavior *autoscalingv2.HPAScalingRules
	minReplicas       int32
	maxReplicas       int32
	currentReplicas   int32
	desiredReplicas   int32
}

// seconds turns a spec's seconds into the lab's time.
func (a *Controller) seconds(s int32) time.Duration {
	return a.speed.Scale(time.Duration(s) * time.Second)
}

// normalizeDesiredReplicasWithBehaviors stabilises the recommendation and
// limits it by the behavior's rates, setting AbleToScale and
// ScalingLimited as upstream.
func (a *Controller) normalizeDesiredReplicasWithBehaviors(hpa *autoscalingv2.HorizontalPodAutoscaler, key string, current, prenormalized, minReplicas int32) int32 {
	a.maybeInitScaleDownStabilizationWindow(hpa)
	arg := normalizationArg{
		key:               key,
		scaleUpBehavior:   hpa.Spec.Behavior.ScaleUp,
		scaleDownBehavior: hpa.Spec.Behavior.ScaleDown,
		minReplicas:       minReplicas,
		maxReplicas:       hpa.Spec.MaxReplicas,
		currentReplicas:   current,
		desiredReplicas:   prenormalized,
	}
	stabilized, reason, message := a.stabilizeRecommendationWithBehaviors(arg)
	arg.desiredReplicas = stabilized
	if stabilized != prenormalized {
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, reason, "%s", message)
	} else {
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, reasonReadyForNewScale, "recommended size matches current size")
	}
	desired, reason, message := a.convertDesiredReplicasWithBehaviorRate(arg)
	if desired == stabilized {
		setCondition(hpa, autoscalingv2.ScalingLimited, corev1.ConditionFalse, reason, "%s", message)
	} else {
		setCondition(hpa, autoscalingv2.ScalingLimited, corev1.ConditionTrue, reason, "%s", message)
	}
	return desired
}

// maybeInitScaleDownStabilizationWindow gives a scale-down rule without a
// window the controller's (--horizontal-pod-autoscaler-downscale-
// stabilization, 300 s), as upstream; the API server leaves it unset.
func (a *Controller) maybeInitScaleDownStabilizationWindow(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	b := hpa.Spec.Behavior
	if b == nil {
		return
	}
	if b.ScaleUp == nil {
		b.ScaleUp = defaultScaleUpRules()
	}
	if b.ScaleDown == nil {
		b.ScaleDown = defaultScaleDownRules()
	}
	if b.ScaleUp.StabilizationWindowSeconds == nil {
		b.ScaleUp.StabilizationWindowSeconds = new(int32)
	}
	if b.ScaleUp.SelectPolicy == nil {
		p := autoscalingv2.MaxChangePolicySelect
		b.ScaleUp.SelectPolicy = &p
	}
	if b.ScaleDown.SelectPolicy == nil {
		p := autoscalingv2.MaxChangePolicySelect
		b.ScaleDown.SelectPolicy = &p
	}
	if b.ScaleDown.StabilizationWindowSeconds == nil {
		w := int32(timing.HPADownscaleStabilization / time.Second)
		b.ScaleDown.StabilizationWindowSeconds = &w
	}
}

// defaultScaleUpRules and defaultScaleDownRules are the API's defaults,
// for a behavior that reached the controller without them.
func defaultScaleUpRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
		{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
	}}
}

func defaultScaleDownRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
	}}
}

// stabilizeRecommendationWithBehaviors records the new recommendation
// (reusing a slot older than both windows) and bounds the current size by
// the lowest recommendation within the scale-up window and the highest
// within the scale-down window.
func (a *Controller) stabilizeRecommendationWithBehaviors(arg normalizationArg) (int32, string, string) {
	now := a.now()
	upRecommendation, downRecommendation := arg.desiredReplicas, arg.desiredReplicas
	upCutoff := now.Add(-a.seconds(*arg.scaleUpBehavior.StabilizationWindowSeconds))
	downCutoff := now.Add(-a.seconds(*arg.scaleDownBehavior.StabilizationWindowSeconds))

	a.mu.Lock()
	defer a.mu.Unlock()
	oldSample := -1
	for i, rec := range a.recommendations[arg.key] {
		if rec.timestamp.After(upCutoff) {
			upRecommendation = min(rec.replicas, upRecommendation)
		}
		if rec.timestamp.After(downCutoff) {
			downRecommendation = max(rec.replicas, downRecommendation)
		}
		if rec.timestamp.Before(upCutoff) && rec.timestamp.Before(downCutoff) {
			oldSample = i
		}
	}
	recommendation := arg.currentReplicas
	if recommendation < upRecommendation {
		recommendation = upRecommendation
	}
	if recommendation > downRecommendation {
		recommendation = downRecommendation
	}
	entry := timestampedRecommendation{arg.desiredReplicas, now}
	if oldSample >= 0 {
		a.recommendations[arg.key][oldSample] = entry
	} else {
		a.recommendations[arg.key] = append(a.recommendations[arg.key], entry)
	}
	if arg.desiredReplicas >= arg.currentReplicas {
		return recommendation, reasonScaleUpStabilized, "recent recommendations were lower than current one, applying the lowest recent recommendation"
	}
	return recommendation, reasonScaleDownStabilized, "recent recommendations were higher than current one, applying the highest recent recommendation"
}

// convertDesiredReplicasWithBehaviorRate limits the stabilised
// recommendation by the rate policies and the min and max replicas.
func (a *Controller) convertDesiredReplicasWithBehaviorRate(arg normalizationArg) (int32, string, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	up, down := a.scaleUpEvents[arg.key], a.scaleDownEvents[arg.key]
	switch {
	case arg.desiredReplicas > arg.currentReplicas:
		scaleUpLimit := a.calculateScaleUpLimitWithScalingRules(now, arg.currentReplicas, up, down, arg.scaleUpBehavior)
		if scaleUpLimit < arg.currentReplicas {
			// No further scale-up until the scale-up events age out.
			scaleUpLimit = arg.currentReplicas
		}
		maximumAllowed, reason, message := arg.maxReplicas, reasonTooManyReplicas, "the desired replica count is more than the maximum replica count"
		if maximumAllowed > scaleUpLimit {
			maximumAllowed, reason, message = scaleUpLimit, reasonScaleUpLimit, "the desired replica count is increasing faster than the maximum scale rate"
		}
		if arg.desiredReplicas > maximumAllowed {
			return maximumAllowed, reason, message
		}
	case arg.desiredReplicas < arg.currentReplicas:
		scaleDownLimit := a.calculateScaleDownLimitWithBehaviors(now, arg.currentReplicas, up, down, arg.scaleDownBehavior)
		if scaleDownLimit > arg.currentReplicas {
			// No further scale-down until the scale-down events age out.
			scaleDownLimit = arg.currentReplicas
		}
		minimumAllowed, reason, message := arg.minReplicas, reasonTooFewReplicas, "the desired replica count is less than the minimum replica count"
		if minimumAllowed < scaleDownLimit {
			minimumAllowed, reason, message = scaleDownLimit, reasonScaleDownLimit, "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if arg.desiredReplicas < minimumAllowed {
			return minimumAllowed, reason, message
		}
	}
	return arg.desiredReplicas, reasonDesiredWithinRange, "the desired count is within the acceptable range"
}

// getReplicasChangePerPeriod sums the changes of the events within the
// last period.
func (a *Controller) getReplicasChangePerPeriod(now time.Time, periodSeconds int32, events []timestampedScaleEvent) int32 {
	cutoff := now.Add(-a.seconds(periodSeconds))
	var replicas int32
	for _, e := range events {
		if e.timestamp.After(cutoff) {
			replicas += e.replicaChange
		}
	}
	return replicas
}

// calculateScaleUpLimitWithScalingRules is the most replicas the scale-up
// policies allow now.
func (a *Controller) calculateScaleUpLimitWithScalingRules(now time.Time, current int32, up, down []timestampedScaleEvent, rules *autoscalingv2.HPAScalingRules) int32 {
	var result int32
	var pick func(int32, int32) int32
	switch *rules.SelectPolicy {
	case autoscalingv2.DisabledPolicySelect:
		return current
	case autoscalingv2.MinChangePolicySelect:
		result, pick = math.MaxInt32, minInt32 // the smallest change up is the lowest size
	default:
		result, pick = math.MinInt32, maxInt32
	}
	for _, p := range rules.Policies {
		added := a.getReplicasChangePerPeriod(now, p.PeriodSeconds, up)
		removed := a.getReplicasChangePerPeriod(now, p.PeriodSeconds, down)
		periodStart := current - added + removed
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = periodStart + p.Value
		case autoscalingv2.PercentScalingPolicy:
			// Rounded up, or a small target would never grow.
			proposed = int32(math.Ceil(float64(periodStart) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

// calculateScaleDownLimitWithBehaviors is the fewest replicas the
// scale-down policies allow now.
func (a *Controller) calculateScaleDownLimitWithBehaviors(now time.Time, current int32, up, down []timestampedScaleEvent, rules *autoscalingv2.HPAScalingRules) int32 {
	var result int32
	var pick func(int32, int32) int32
	switch *rules.SelectPolicy {
	case autoscalingv2.DisabledPolicySelect:
		return current
	case autoscalingv2.MinChangePolicySelect:
		result, pick = math.MinInt32, maxInt32 // the smallest change down is the highest size
	default:
		result, pick = math.MaxInt32, minInt32
	}
	for _, p := range rules.Policies {
		added := a.getReplicasChangePerPeriod(now, p.PeriodSeconds, up)
		removed := a.getReplicasChangePerPeriod(now, p.PeriodSeconds, down)
		periodStart := current - added + removed
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = periodStart - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(periodStart) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

// longestPolicyPeriod is the longest period among the rules' policies.
func longestPolicyPeriod(rules *autoscalingv2.HPAScalingRules) int32 {
	var longest int32
	if rules == nil {
		return 0
	}
	for _, p := range rules.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	return longest
}

// markScaleEventsOutdated marks the events older than the longest period.
func (a *Controller) markScaleEventsOutdated(now time.Time, events []timestampedScaleEvent, longestPeriod int32) {
	cutoff := now.Add(-a.seconds(longestPeriod))
	for i := range events {
		if events[i].timestamp.Before(cutoff) {
			events[i].outdated = true
		}
	}
}

// storeScaleEvent records a scaling the controller made, reusing an
// outdated slot, as upstream; without a behavior nothing is kept.
func (a *Controller) storeScaleEvent(behavior *autoscalingv2.HorizontalPodAutoscalerBehavior, key string, prev, next int32) {
	if behavior == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	events, rules, change := a.scaleDownEvents, behavior.ScaleDown, prev-next
	if next > prev {
		events, rules, change = a.scaleUpEvents, behavior.ScaleUp, next-prev
	}
	list := events[key]
	a.markScaleEventsOutdated(now, list, longestPolicyPeriod(rules))
	entry := timestampedScaleEvent{replicaChange: change, timestamp: now}
	oldSample := -1
	for i := range list {
		if list[i].outdated {
			oldSample = i
		}
	}
	if oldSample >= 0 {
		list[oldSample] = entry
		return
	}
	events[key] = append(list, entry)
}

func minInt32(a, b int32) int32 { return min(a, b) }
func maxInt32(a, b int32) int32 { return max(a, b) }
