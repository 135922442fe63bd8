package endpointsliceutil

import (
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"

	corev1 "k8s.io/api/core/v1"
)

// TriggerTimeTracker computes the value of the
// endpoints.kubernetes.io/last-change-trigger-time annotation: the time of
// the earliest change (a pod's readiness flip, the Service's creation) that
// the next write of a Service's endpoints reflects. Latency tools read it to
// measure how long a pod change took to reach the endpoints. It remembers,
// per Service, the trigger times it saw at the previous sync.
type TriggerTimeTracker struct {
	mu     sync.Mutex
	states map[string]triggerState // by namespace/name
}

type triggerState struct {
	service time.Time
	pods    map[string]time.Time // by pod name
}

// NewTriggerTimeTracker returns an empty tracker.
func NewTriggerTimeTracker() *TriggerTimeTracker {
	return &TriggerTimeTracker{states: map[string]triggerState{}}
}

// ComputeEndpointLastChangeTriggerTime returns the trigger time for the
// endpoints about to be written for service from pods, and records what it
// saw. A Service seen for the first time triggers at its creation; after
// that, the earliest pod Ready transition (or Service creation) newer than
// at the previous sync counts. A zero time means nothing changed, and the
// annotation is removed. Calls for one Service must not run concurrently
// (the workqueue guarantees that).
func (t *TriggerTimeTracker) ComputeEndpointLastChangeTriggerTime(namespace string, service *corev1.Service, pods []*corev1.Pod) time.Time {
	key := namespace + "/" + service.Name
	t.mu.Lock()
	prev, known := t.states[key]
	t.mu.Unlock()

	var earliest time.Time
	consider := func(ts time.Time) {
		if earliest.IsZero() || ts.Before(earliest) {
			earliest = ts
		}
	}
	next := triggerState{service: service.CreationTimestamp.Time, pods: make(map[string]time.Time, len(pods))}
	for _, pod := range pods {
		ready := controllerutil.PodReadyCondition(pod)
		if ready == nil || ready.LastTransitionTime.IsZero() {
			continue
		}
		ts := ready.LastTransitionTime.Time
		next.pods[pod.Name] = ts
		if ts.After(prev.pods[pod.Name]) {
			consider(ts)
		}
	}
	if next.service.After(prev.service) {
		consider(next.service)
	}

	t.mu.Lock()
	t.states[key] = next
	t.mu.Unlock()
	if !known {
		return service.CreationTimestamp.Time
	}
	return earliest
}

// DeleteService forgets a deleted Service.
func (t *TriggerTimeTracker) DeleteService(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, namespace+"/"+name)
}
