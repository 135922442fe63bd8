package podautoscaler

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/klab-dev/klab/cluster/timing"
)

// The cases are upstream's horizontal_test.go behavior tests
// (TestConvertDesiredReplicasWithBehaviorRate, TestStoreScaleEvents,
// TestNormalizeDesiredReplicasWithBehavior), written as tables from their
// inputs and expected outputs against a fixed clock.

var behaviorNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testController(speed timing.Speed) *Controller {
	return &Controller{
		now:                          func() time.Time { return behaviorNow },
		speed:                        speed,
		downscaleStabilisationWindow: speed.Scale(timing.HPADownscaleStabilization),
		recommendations:              map[string][]timestampedRecommendation{},
		scaleUpEvents:                map[string][]timestampedScaleEvent{},
		scaleDownEvents:              map[string][]timestampedScaleEvent{},
	}
}

// scalingRules is upstream's generateScalingRules: a Pods policy and a
// Percent policy (each left out when its value is 0), selectPolicy Max.
func scalingRules(pods, podsPeriod, percent, percentPeriod, window int32) *autoscalingv2.HPAScalingRules {
	policy := autoscalingv2.MaxChangePolicySelect
	r := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &policy}
	if pods != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: pods, PeriodSeconds: podsPeriod})
	}
	if percent != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: percent, PeriodSeconds: percentPeriod})
	}
	return r
}

// eventsUniform is upstream's generateEventsUniformDistribution: the
// events spread over the last period, each in the middle of its segment.
func eventsUniform(changes []int32, periodSeconds int) []timestampedScaleEvent {
	events := make([]timestampedScaleEvent, len(changes))
	segment := float64(periodSeconds) / float64(len(changes))
	for i, c := range changes {
		ago := time.Duration(float64(periodSeconds) - segment*float64(i+1) + segment/2)
		events[i] = timestampedScaleEvent{replicaChange: c, timestamp: behaviorNow.Add(-time.Second * ago)}
	}
	return events
}

// withDefaults fills rules as the API server's defaulting does
// (GenerateHPAScaleUpRules / GenerateHPAScaleDownRules).
func withDefaults(r *autoscalingv2.HPAScalingRules, up bool) *autoscalingv2.HPAScalingRules {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{}}}
	if up {
		hpa.Spec.Behavior.ScaleUp = r
	} else {
		hpa.Spec.Behavior.ScaleDown = r
	}
	testController(1).maybeInitScaleDownStabilizationWindow(hpa)
	if up {
		return hpa.Spec.Behavior.ScaleUp
	}
	return hpa.Spec.Behavior.ScaleDown
}

func TestConvertDesiredReplicasWithBehaviorRate(t *testing.T) {
	tests := []struct {
		name                           string
		scaleUpEvents, scaleDownEvents []timestampedScaleEvent
		minReplicas, maxReplicas       int32
		scaleUpRules, scaleDownRules   *autoscalingv2.HPAScalingRules
		current, prenormalized         int32
		want                           int32
		wantReason                     string
	}{
		{name: "scaleUp with default behavior", minReplicas: 1, maxReplicas: 1000, current: 10, prenormalized: 50, want: 20, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with default behavior, from 1", minReplicas: 1, maxReplicas: 1000, current: 1, prenormalized: 50, want: 5, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with maxReplicas limitation", minReplicas: 1, maxReplicas: 12, current: 10, prenormalized: 50, want: 12, wantReason: "TooManyReplicas"},
		{name: "scaleDown with default behavior", minReplicas: 1, maxReplicas: 1000, current: 10, prenormalized: 2, want: 2, wantReason: "DesiredWithinRange"},
		{name: "scaleUp with disabled policy", minReplicas: 1, maxReplicas: 1000, current: 10, prenormalized: 50, want: 10, wantReason: "ScaleUpLimit",
			scaleUpRules: func() *autoscalingv2.HPAScalingRules {
				r := scalingRules(30, 60, 0, 0, 0)
				p := autoscalingv2.DisabledPolicySelect
				r.SelectPolicy = &p
				return r
			}()},
		{name: "scaleUp with Min policy picks the smaller change", minReplicas: 1, maxReplicas: 1000, current: 10, prenormalized: 50, want: 15, wantReason: "ScaleUpLimit",
			scaleUpRules: func() *autoscalingv2.HPAScalingRules {
				r := scalingRules(5, 60, 100, 60, 0)
				p := autoscalingv2.MinChangePolicySelect
				r.SelectPolicy = &p
				return r
			}()},
		{name: "scaleUp with large pod policy", minReplicas: 1, maxReplicas: 1000, scaleUpRules: scalingRules(10000, 60, 0, 0, 0), current: 10, prenormalized: 50, want: 50, wantReason: "DesiredWithinRange"},
		{name: "scaleUp with pod policy limitation", minReplicas: 1, maxReplicas: 1000, scaleUpRules: scalingRules(30, 60, 0, 0, 0), current: 10, prenormalized: 50, want: 40, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with percent policy limitation", minReplicas: 1, maxReplicas: 1000, scaleUpRules: scalingRules(0, 0, 200, 60, 0), current: 10, prenormalized: 50, want: 30, wantReason: "ScaleUpLimit"},
		{name: "scaleDown with percent policy larger than pod policy", minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(20, 60, 1, 60, 300), current: 100, prenormalized: 2, want: 80, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with pod policy larger than percent policy", minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(2, 60, 1, 60, 300), current: 100, prenormalized: 2, want: 98, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy", minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(100, 60, 0, 0, 300), current: 10, prenormalized: 0, want: 1, wantReason: "TooFewReplicas"},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy", minReplicas: 5, maxReplicas: 1000, scaleDownRules: scalingRules(0, 0, 100, 60, 300), current: 10, prenormalized: 2, want: 5, wantReason: "TooFewReplicas"},
		{name: "scaleDown with pod policy limitation", minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(5, 60, 0, 0, 300), current: 10, prenormalized: 2, want: 5, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with percent policy limitation", minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(0, 0, 50, 60, 300), current: 10, prenormalized: 5, want: 5, wantReason: "DesiredWithinRange"},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy and events", scaleUpEvents: eventsUniform([]int32{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 200, scaleUpRules: scalingRules(300, 60, 0, 0, 0), current: 100, prenormalized: 500, want: 200, wantReason: "TooManyReplicas"},
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy and events", scaleUpEvents: eventsUniform([]int32{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 200, scaleUpRules: scalingRules(0, 0, 10000, 60, 0), current: 100, prenormalized: 500, want: 200, wantReason: "TooManyReplicas"},
		{name: "scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent scale up events", scaleUpEvents: eventsUniform([]int32{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: scalingRules(5, 120, 0, 0, 0), current: 100, prenormalized: 500, want: 100, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with pod policy and previous scale up events", scaleUpEvents: eventsUniform([]int32{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: scalingRules(150, 120, 0, 0, 0), current: 100, prenormalized: 500, want: 235, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with percent policy and previous scale up events", scaleUpEvents: eventsUniform([]int32{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: scalingRules(0, 0, 200, 120, 0), current: 100, prenormalized: 500, want: 255, wantReason: "ScaleUpLimit"},
		{name: "scaleDown with default policy and previous events", scaleDownEvents: eventsUniform([]int32{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, current: 10, prenormalized: 5, want: 5, wantReason: "DesiredWithinRange"},
		{name: "scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events", scaleDownEvents: eventsUniform([]int32{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(115, 120, 0, 0, 300), current: 100, prenormalized: 0, want: 1, wantReason: "TooFewReplicas"},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy and previous events", scaleDownEvents: eventsUniform([]int32{1, 5, 9}, 120),
			minReplicas: 5, maxReplicas: 1000, scaleDownRules: scalingRules(130, 120, 0, 0, 300), current: 100, prenormalized: 0, want: 5, wantReason: "TooFewReplicas"},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy and previous events", scaleDownEvents: eventsUniform([]int32{1, 5, 9}, 120),
			minReplicas: 5, maxReplicas: 1000, scaleDownRules: scalingRules(0, 0, 100, 120, 300), current: 100, prenormalized: 2, want: 5, wantReason: "TooFewReplicas"},
		{name: "scaleDown with pod policy limitation and previous events", scaleDownEvents: eventsUniform([]int32{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(5, 120, 0, 0, 300), current: 100, prenormalized: 2, want: 100, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with percent policy limitation and previous events", scaleDownEvents: eventsUniform([]int32{2, 4, 6}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(0, 0, 50, 120, 300), current: 100, prenormalized: 0, want: 56, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with previous events preventing further scale down", scaleDownEvents: eventsUniform([]int32{10, 10, 10}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(0, 0, 10, 120, 300), current: 100, prenormalized: 0, want: 100, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with with previous events still allowing more scale down", scaleDownEvents: eventsUniform([]int32{10, 10, 10}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(0, 0, 1000, 120, 300), current: 10, prenormalized: 5, want: 5, wantReason: "DesiredWithinRange"},
		{name: "check 'outdated' flag for events for one behavior for up", scaleUpEvents: eventsUniform([]int32{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: scalingRules(1000, 60, 0, 0, 0), current: 100, prenormalized: 200, want: 200, wantReason: "DesiredWithinRange"},
		{name: "check that events were not marked 'outdated' for two different policies in the behavior for up", scaleUpEvents: eventsUniform([]int32{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: scalingRules(1000, 120, 100, 60, 0), current: 100, prenormalized: 200, want: 200, wantReason: "DesiredWithinRange"},
		{name: "check that events were marked 'outdated' for two different policies in the behavior for up", scaleUpEvents: eventsUniform([]int32{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: scalingRules(1000, 30, 100, 60, 0), current: 100, prenormalized: 200, want: 200, wantReason: "DesiredWithinRange"},
		{name: "check 'outdated' flag for events for one behavior for down", scaleDownEvents: eventsUniform([]int32{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(1000, 60, 0, 0, 300), current: 100, prenormalized: 5, want: 5, wantReason: "DesiredWithinRange"},
		{name: "check that events were not marked 'outdated' for two different policies in the behavior for down", scaleDownEvents: eventsUniform([]int32{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(1000, 120, 100, 60, 300), current: 100, prenormalized: 5, want: 5, wantReason: "DesiredWithinRange"},
		{name: "check that events were marked 'outdated' for two different policies in the behavior for down", scaleDownEvents: eventsUniform([]int32{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: scalingRules(1000, 30, 100, 60, 300), current: 100, prenormalized: 5, want: 5, wantReason: "DesiredWithinRange"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := testController(1)
			a.scaleUpEvents["key"] = tc.scaleUpEvents
			a.scaleDownEvents["key"] = tc.scaleDownEvents
			got, reason, _ := a.convertDesiredReplicasWithBehaviorRate(normalizationArg{
				key: "key", scaleUpBehavior: withDefaults(tc.scaleUpRules, true), scaleDownBehavior: withDefaults(tc.scaleDownRules, false),
				minReplicas: tc.minReplicas, maxReplicas: tc.maxReplicas, currentReplicas: tc.current, desiredReplicas: tc.prenormalized,
			})
			if got != tc.want || reason != tc.wantReason {
				t.Errorf("got %d (%s), want %d (%s)", got, reason, tc.want, tc.wantReason)
			}
		})
	}
}

func TestStoreScaleEvents(t *testing.T) {
	ago := func(s int) time.Time { return behaviorNow.Add(-time.Duration(s) * time.Second) }
	type ev struct {
		change   int32
		outdated bool
	}
	tests := []struct {
		name       string
		change     int32
		prev       []timestampedScaleEvent
		want       []ev
		rules      *autoscalingv2.HPAScalingRules
		wantChange int32 // in the last 60 s, before storing
	}{
		{name: "empty entries with default behavior", change: 5, prev: []timestampedScaleEvent{}, want: []ev{}},
		{name: "empty entries with two-policy-behavior", change: 5, prev: []timestampedScaleEvent{}, want: []ev{{5, false}}, rules: scalingRules(10, 60, 100, 60, 0)},
		{name: "one outdated entry to be kept untouched without behavior", change: 5,
			prev: []timestampedScaleEvent{{7, ago(61), false}}, want: []ev{{7, false}}},
		{name: "one outdated entry to be replaced with behavior", change: 5,
			prev: []timestampedScaleEvent{{7, ago(61), false}}, want: []ev{{5, false}}, rules: scalingRules(10, 60, 100, 60, 0)},
		{name: "one actual entry to be not touched with behavior", change: 5,
			prev: []timestampedScaleEvent{{7, ago(58), false}}, want: []ev{{7, false}, {5, false}}, rules: scalingRules(10, 60, 100, 60, 0), wantChange: 7},
		{name: "two entries, one of them to be replaced", change: 5,
			prev: []timestampedScaleEvent{{7, ago(61), false}, {6, ago(59), false}}, want: []ev{{5, false}, {6, false}}, rules: scalingRules(10, 60, 0, 0, 0), wantChange: 6},
		{name: "replace one entry, use policies with different periods", change: 5,
			prev: []timestampedScaleEvent{{8, ago(29), false}, {6, ago(59), false}, {7, ago(61), false}, {9, ago(61), false}},
			want: []ev{{8, false}, {6, false}, {7, true}, {5, false}}, rules: scalingRules(10, 60, 100, 30, 0), wantChange: 14},
		{name: "two entries, both actual", change: 5,
			prev: []timestampedScaleEvent{{7, ago(58), false}, {6, ago(59), false}},
			want: []ev{{7, false}, {6, false}, {5, false}}, rules: scalingRules(10, 120, 100, 30, 0), wantChange: 13},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, up := range []bool{true, false} {
				a := testController(1)
				var behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
				events, next := a.scaleDownEvents, int32(10)-tc.change
				if up {
					events, next = a.scaleUpEvents, 10+tc.change
				}
				if tc.rules != nil {
					behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: tc.rules, ScaleDown: tc.rules}
				}
				events["key"] = append([]timestampedScaleEvent{}, tc.prev...)
				if got := a.getReplicasChangePerPeriod(behaviorNow, 60, events["key"]); got != tc.wantChange {
					t.Errorf("up=%v: change in the last 60 s = %d, want %d", up, got, tc.wantChange)
				}
				a.storeScaleEvent(behavior, "key", 10, next)
				got := events["key"]
				if len(got) != len(tc.want) {
					t.Fatalf("up=%v: %d events, want %d", up, len(got), len(tc.want))
				}
				for i, e := range got {
					if e.replicaChange != tc.want[i].change || e.outdated != tc.want[i].outdated {
						t.Errorf("up=%v: event %d = {%d %v}, want %v", up, i, e.replicaChange, e.outdated, tc.want[i])
					}
				}
			}
		})
	}
}

func TestStabilizeRecommendationWithBehaviors(t *testing.T) {
	ago := func(d time.Duration) time.Time { return behaviorNow.Add(-d) }
	tests := []struct {
		name                   string
		recommendations        []timestampedRecommendation
		current, prenormalized int32
		want                   int32
		wantStored             []int32
		upWindow, downWindow   int32
	}{
		{name: "empty recommendations for scaling down", recommendations: []timestampedRecommendation{}, current: 100, prenormalized: 5, want: 5, wantStored: []int32{5}},
		{name: "simple scale down stabilization", recommendations: []timestampedRecommendation{{4, ago(2 * time.Minute)}, {5, ago(time.Minute)}},
			current: 100, prenormalized: 3, want: 5, wantStored: []int32{4, 5, 3}, downWindow: 180},
		{name: "simple scale up stabilization", recommendations: []timestampedRecommendation{{4, ago(2 * time.Minute)}, {5, ago(time.Minute)}},
			current: 1, prenormalized: 7, want: 4, wantStored: []int32{4, 5, 7}, upWindow: 300},
		{name: "no scale down stabilization", recommendations: []timestampedRecommendation{{1, ago(2 * time.Minute)}, {2, ago(time.Minute)}},
			current: 100, prenormalized: 3, want: 3, wantStored: []int32{1, 2, 3}, upWindow: 300},
		{name: "no scale up stabilization", recommendations: []timestampedRecommendation{{4, ago(2 * time.Minute)}, {5, ago(time.Minute)}},
			current: 1, prenormalized: 3, want: 3, wantStored: []int32{4, 5, 3}, downWindow: 300},
		{name: "no scale down stabilization, reuse recommendation element", recommendations: []timestampedRecommendation{{10, ago(10 * time.Minute)}, {9, ago(9 * time.Minute)}},
			current: 100, prenormalized: 3, want: 3, wantStored: []int32{10, 3}},
		{name: "no scale up stabilization, reuse recommendation element", recommendations: []timestampedRecommendation{{10, ago(10 * time.Minute)}, {9, ago(9 * time.Minute)}},
			current: 1, prenormalized: 100, want: 100, wantStored: []int32{10, 100}},
		{name: "scale down stabilization, reuse one of obsolete recommendation element",
			recommendations: []timestampedRecommendation{{10, ago(10 * time.Minute)}, {4, ago(time.Minute)}, {5, ago(2 * time.Minute)}, {9, ago(9 * time.Minute)}},
			current:         100, prenormalized: 3, want: 5, wantStored: []int32{10, 4, 5, 3}, downWindow: 180},
		{name: "scale up stabilization, reuse one of obsolete recommendation element",
			recommendations: []timestampedRecommendation{{10, ago(100 * time.Minute)}, {6, ago(time.Minute)}, {5, ago(2 * time.Minute)}, {9, ago(3 * time.Minute)}},
			current:         1, prenormalized: 100, want: 5, wantStored: []int32{100, 6, 5, 9}, upWindow: 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := testController(1)
			a.recommendations["key"] = tc.recommendations
			got, _, _ := a.stabilizeRecommendationWithBehaviors(normalizationArg{key: "key", currentReplicas: tc.current, desiredReplicas: tc.prenormalized,
				scaleUpBehavior:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &tc.upWindow},
				scaleDownBehavior: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &tc.downWindow}})
			if got != tc.want {
				t.Errorf("stabilized = %d, want %d", got, tc.want)
			}
			var stored []int32
			for _, r := range a.recommendations["key"] {
				stored = append(stored, r.replicas)
			}
			if len(stored) != len(tc.wantStored) {
				t.Fatalf("stored %v, want %v", stored, tc.wantStored)
			}
			for i := range stored {
				if stored[i] != tc.wantStored[i] {
					t.Fatalf("stored %v, want %v", stored, tc.wantStored)
				}
			}
		})
	}
}

// TestBehaviorAtLabSpeed: the windows and periods pass through the lab's
// speed. At speed 10 a 60 s Pods policy period lasts 6 s, so a scale-up
// 10 s ago no longer counts and one 5 s ago does; the default 300 s
// scale-down window lasts 30 s.
func TestBehaviorAtLabSpeed(t *testing.T) {
	a := testController(10)
	a.scaleUpEvents["key"] = []timestampedScaleEvent{{replicaChange: 3, timestamp: behaviorNow.Add(-10 * time.Second)}}
	arg := normalizationArg{key: "key", scaleUpBehavior: withDefaults(scalingRules(2, 60, 0, 0, 0), true), scaleDownBehavior: withDefaults(nil, false),
		minReplicas: 1, maxReplicas: 100, currentReplicas: 10, desiredReplicas: 50}
	if got, _, _ := a.convertDesiredReplicasWithBehaviorRate(arg); got != 12 {
		t.Errorf("with the event outside the scaled period: %d, want 12", got)
	}
	a.scaleUpEvents["key"][0].timestamp = behaviorNow.Add(-5 * time.Second)
	if got, _, _ := a.convertDesiredReplicasWithBehaviorRate(arg); got != 10 {
		t.Errorf("with the event inside the scaled period: %d, want 10 (7+2 < current)", got)
	}

	hpa := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 10,
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{}}}
	a.recommendations["key"] = []timestampedRecommendation{{8, behaviorNow.Add(-20 * time.Second)}}
	if got := a.normalizeDesiredReplicasWithBehaviors(hpa, "key", 8, 2, 1); got != 8 {
		t.Errorf("a recommendation 20 s ago is within the 30 s scaled window: got %d, want 8", got)
	}
	if w := *hpa.Spec.Behavior.ScaleDown.StabilizationWindowSeconds; w != 300 {
		t.Errorf("scale-down window filled as %d s, want upstream's 300 (scaled only when applied)", w)
	}
	a.recommendations["key"] = []timestampedRecommendation{{8, behaviorNow.Add(-40 * time.Second)}}
	if got := a.normalizeDesiredReplicasWithBehaviors(hpa, "key", 8, 2, 1); got != 2 {
		t.Errorf("a recommendation 40 s ago is outside the 30 s scaled window: got %d, want 2", got)
	}
}
