package podautoscaler

import (
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The replica calculation of upstream's replica_calculator.go, for
// resource metrics: group the target's pods (ready with a metric, unready,
// missing a metric, ignored), take the usage ratio over the ready ones,
// do nothing inside the tolerance, and otherwise recompute the ratio with
// the conservative assumptions upstream makes (a missing pod uses its
// whole request on a scale-down and nothing on a scale-up; an unready pod
// uses nothing on a scale-up), refusing to move against the first
// ratio's direction.

// defaultTolerance is --horizontal-pod-autoscaler-tolerance: a ratio
// within 10% of 1 changes nothing.
const defaultTolerance = 0.1

// podMetric is one pod's usage: milli-units (millicores or milli-bytes).
type podMetric struct {
	timestamp time.Time
	window    time.Duration
	value     int64
}

// replicaCalculator computes desired replicas from pods and their usage.
type replicaCalculator struct {
	tolerance float64
	// cpuInitializationPeriod and delayOfInitialReadinessStatus are
	// upstream's flags of the same names (5 min, 30 s), scaled by the
	// lab's speed.
	cpuInitializationPeriod       time.Duration
	delayOfInitialReadinessStatus time.Duration
	now                           func() time.Time
}

var (
	errNoPods       = errors.New("no pods returned by selector while calculating replica count")
	errNoPodMetrics = errors.New("did not receive metrics for targeted pods (pods might be unready)")
)

// utilizationReplicas is GetResourceReplicas: the replica count that
// brings the pods' average utilization (usage as a percentage of request)
// to targetUtilization. It also returns the current utilization and the
// raw average usage.
func (c *replicaCalculator) utilizationReplicas(current int32, targetUtilization int32, res corev1.ResourceName, metrics map[string]podMetric, pods []*corev1.Pod) (int32, int32, int64, error) {
	if len(pods) == 0 {
		return 0, 0, 0, errNoPods
	}
	metrics = copyMetrics(metrics)
	readyCount, unready, missing, ignored := c.groupPods(pods, metrics, res)
	removeMetrics(metrics, ignored)
	removeMetrics(metrics, unready)
	if len(metrics) == 0 {
		return 0, 0, 0, errNoPodMetrics
	}
	requests, err := podRequests(pods, res)
	if err != nil {
		return 0, 0, 0, err
	}
	ratio, utilization, raw, err := utilizationRatio(metrics, requests, targetUtilization)
	if err != nil {
		return 0, 0, 0, err
	}
	fallback := func(pod string) int64 { return requests[pod] * int64(max(100, targetUtilization)) / 100 }
	n, err := c.decide(current, ratio, readyCount, unready, missing, metrics, fallback, func(m map[string]podMetric) (float64, error) {
		r, _, _, err := utilizationRatio(m, requests, targetUtilization)
		return r, err
	})
	return n, utilization, raw, err
}

// averageValueReplicas is GetRawResourceReplicas: the replica count that
// brings the pods' average usage to targetUsage (milli-units).
func (c *replicaCalculator) averageValueReplicas(current int32, targetUsage int64, res corev1.ResourceName, metrics map[string]podMetric, pods []*corev1.Pod) (int32, int64, error) {
	if len(pods) == 0 {
		return 0, 0, errNoPods
	}
	if targetUsage <= 0 {
		return 0, 0, fmt.Errorf("invalid target average value %dm for %s", targetUsage, res)
	}
	metrics = copyMetrics(metrics)
	readyCount, unready, missing, ignored := c.groupPods(pods, metrics, res)
	removeMetrics(metrics, ignored)
	removeMetrics(metrics, unready)
	if len(metrics) == 0 {
		return 0, 0, errNoPodMetrics
	}
	ratio, usage := usageRatio(metrics, targetUsage)
	n, err := c.decide(current, ratio, readyCount, unready, missing, metrics, func(string) int64 { return targetUsage },
		func(m map[string]podMetric) (float64, error) {
			r, _ := usageRatio(m, targetUsage)
			return r, nil
		})
	return n, usage, err
}

// decide is the part both calculations share, after the first ratio.
func (c *replicaCalculator) decide(current int32, ratio float64, readyCount int, unready, missing map[string]bool, metrics map[string]podMetric,
	fallback func(pod string) int64, recompute func(map[string]podMetric) (float64, error)) (int32, error) {
	scaleUpWithUnready := len(unready) > 0 && ratio > 1.0
	if !scaleUpWithUnready && len(missing) == 0 {
		if math.Abs(1.0-ratio) <= c.tolerance {
			return current, nil
		}
		return int32(math.Ceil(ratio * float64(readyCount))), nil
	}
	if len(missing) > 0 {
		for pod := range missing {
			switch {
			case ratio < 1.0:
				metrics[pod] = podMetric{value: fallback(pod)}
			case ratio > 1.0:
				metrics[pod] = podMetric{value: 0}
			}
		}
	}
	if scaleUpWithUnready {
		for pod := range unready {
			metrics[pod] = podMetric{value: 0}
		}
	}
	newRatio, err := recompute(metrics)
	if err != nil {
		return 0, err
	}
	if math.Abs(1.0-newRatio) <= c.tolerance || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return current, nil
	}
	n := int32(math.Ceil(newRatio * float64(len(metrics))))
	if (newRatio < 1.0 && n > current) || (newRatio > 1.0 && n < current) {
		return current, nil
	}
	return n, nil
}

// groupPods sorts the pods as upstream's groupPods: deleted and failed
// pods are ignored; pending pods, and for CPU pods still starting whose
// readiness or metric cannot be trusted yet, are unready; pods without a
// metric are missing; the rest are ready and counted.
func (c *replicaCalculator) groupPods(pods []*corev1.Pod, metrics map[string]podMetric, res corev1.ResourceName) (readyCount int, unready, missing, ignored map[string]bool) {
	unready, missing, ignored = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed {
			ignored[pod.Name] = true
			continue
		}
		if pod.Status.Phase == corev1.PodPending {
			unready[pod.Name] = true
			continue
		}
		metric, found := metrics[pod.Name]
		if !found {
			missing[pod.Name] = true
			continue
		}
		if res == corev1.ResourceCPU {
			// A pod without a Ready condition or a start time is unready;
			// otherwise what upstream's groupPods decides from the
			// condition's status and last transition.
			cond := readyCondition(pod)
			var isUnready bool
			if cond == nil || pod.Status.StartTime == nil {
				isUnready = true
			} else if start := pod.Status.StartTime.Time; start.Add(c.cpuInitializationPeriod).After(c.now()) {
				// Still initialising: the metric must come from after
				// the last readiness transition, over a full window.
				isUnready = cond.Status == corev1.ConditionFalse || metric.timestamp.Before(cond.LastTransitionTime.Add(metric.window))
			} else {
				// Past it: unready only if it is unready now and never
				// became ready after its initial readiness delay.
				isUnready = cond.Status == corev1.ConditionFalse && start.Add(c.delayOfInitialReadinessStatus).After(cond.LastTransitionTime.Time)
			}
			if isUnready {
				unready[pod.Name] = true
				continue
			}
		}
		readyCount++
	}
	return readyCount, unready, missing, ignored
}

// readyCondition returns the pod's Ready condition, nil when it has none.
func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// podRequests sums each pod's containers' requests (milli-units); a
// container without one is an error, as upstream's.
func podRequests(pods []*corev1.Pod, res corev1.ResourceName) (map[string]int64, error) {
	requests := make(map[string]int64, len(pods))
	for _, pod := range pods {
		var sum int64
		for _, c := range pod.Spec.Containers {
			req, ok := c.Resources.Requests[res]
			if !ok {
				return nil, fmt.Errorf("missing request for %s in container %s of Pod %s", res, c.Name, pod.Name)
			}
			sum += req.MilliValue()
		}
		requests[pod.Name] = sum
	}
	return requests, nil
}

// utilizationRatio is GetResourceUtilizationRatio: the pods' usage as a
// percentage of their requests, and its ratio to the target.
func utilizationRatio(metrics map[string]podMetric, requests map[string]int64, target int32) (ratio float64, utilization int32, raw int64, err error) {
	var usage, request int64
	n := int64(0)
	for pod, m := range metrics {
		req, ok := requests[pod]
		if !ok {
			continue // a pod that appeared after the metrics were read
		}
		usage += m.value
		request += req
		n++
	}
	if request == 0 {
		return 0, 0, 0, errors.New("no metrics returned matched known pods")
	}
	utilization = int32(usage * 100 / request)
	return float64(utilization) / float64(target), utilization, usage / n, nil
}

// usageRatio is GetMetricUsageRatio: the average usage and its ratio to
// the target.
func usageRatio(metrics map[string]podMetric, target int64) (float64, int64) {
	var sum int64
	for _, m := range metrics {
		sum += m.value
	}
	avg := sum / int64(len(metrics))
	return float64(avg) / float64(target), avg
}

func copyMetrics(m map[string]podMetric) map[string]podMetric {
	out := make(map[string]podMetric, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func removeMetrics(m map[string]podMetric, pods map[string]bool) {
	for pod := range pods {
		delete(m, pod)
	}
}
