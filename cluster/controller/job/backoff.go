package job

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Upstream's pod failure backoff: a Job whose pods fail waits 10 s before
// its next pod, doubling with each failure since the last success, up to
// 6 minutes. klab divides both by the cluster's speed.
const (
	DefaultJobPodFailureBackOff = 10 * time.Second
	MaxJobPodFailureBackOff     = 360 * time.Second
)

// backoffRecord is what a Job's backoff depends on: the failures since
// its last success, and when the last of them happened.
type backoffRecord struct {
	key                      string
	failuresAfterLastSuccess int32
	lastFailureTime          *time.Time
}

// backoffStore keeps each Job's record between syncs. A record is only
// stored once the failures it counts are recorded in the Job's status,
// so that a sync that fails halfway does not count them twice.
type backoffStore struct {
	mu      sync.Mutex
	records map[string]backoffRecord
}

func newBackoffStore() *backoffStore {
	return &backoffStore{records: map[string]backoffRecord{}}
}

func (s *backoffStore) update(r backoffRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[r.key] = r
}

func (s *backoffStore) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
}

// newBackoffRecord adds the newly finished pods to the stored record: a
// success resets the count, and only failures after the last success
// count.
func (s *backoffStore) newBackoffRecord(key string, newSucceeded, newFailed []*corev1.Pod) backoffRecord {
	s.mu.Lock()
	r, ok := s.records[key]
	s.mu.Unlock()
	if !ok {
		r = backoffRecord{key: key}
	}
	sortByFinishedTime(newSucceeded)
	sortByFinishedTime(newFailed)
	if len(newSucceeded) == 0 {
		if len(newFailed) == 0 {
			return r
		}
		r.failuresAfterLastSuccess += int32(len(newFailed))
		last := getFinishedTime(newFailed[len(newFailed)-1])
		r.lastFailureTime = &last
		return r
	}
	r.failuresAfterLastSuccess = 0
	r.lastFailureTime = nil
	lastSuccess := getFinishedTime(newSucceeded[len(newSucceeded)-1])
	for i := len(newFailed) - 1; i >= 0; i-- {
		failed := getFinishedTime(newFailed[i])
		if !failed.After(lastSuccess) {
			break
		}
		if r.lastFailureTime == nil {
			r.lastFailureTime = &failed
		}
		r.failuresAfterLastSuccess++
	}
	return r
}

// remainingTime is how long the Job must still wait before its next pod.
func (r backoffRecord) remainingTime(c clock.PassiveClock, initial, maxBackoff time.Duration) time.Duration {
	if r.failuresAfterLastSuccess == 0 || r.lastFailureTime == nil {
		return 0
	}
	backoff := initial
	for i := int32(1); i < r.failuresAfterLastSuccess; i++ {
		backoff *= 2
		if backoff >= maxBackoff {
			backoff = maxBackoff
			break
		}
	}
	elapsed := c.Since(*r.lastFailureTime)
	if backoff < elapsed {
		return 0
	}
	return backoff - elapsed
}

func sortByFinishedTime(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		return getFinishedTime(pods[i]).Before(getFinishedTime(pods[j]))
	})
}

// getFinishedTime is when a pod finished: the last container's
// finishedAt (sidecars included), else when Ready went False, else its
// deletion time less the grace period, else (no kubelet ever reported) its
// creation.
func getFinishedTime(p *corev1.Pod) time.Time {
	if t := containersFinishedAt(p); t != nil {
		return *t
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		return p.DeletionTimestamp.Add(-time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// containersFinishedAt is the latest finishedAt of the pod's containers
// and sidecars, or nil if one of them has not terminated.
func containersFinishedAt(p *corev1.Pod) *time.Time {
	var latest *time.Time
	consider := func(statuses []corev1.ContainerStatus, include func(corev1.ContainerStatus) bool) bool {
		for _, s := range statuses {
			if !include(s) {
				continue
			}
			term := s.State.Terminated
			if term == nil || term.FinishedAt.IsZero() {
				return false
			}
			if latest == nil || latest.Before(term.FinishedAt.Time) {
				t := term.FinishedAt.Time
				latest = &t
			}
		}
		return true
	}
	if !consider(p.Status.ContainerStatuses, func(corev1.ContainerStatus) bool { return true }) {
		return nil
	}
	sidecars := sets.New[string]()
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars.Insert(c.Name)
		}
	}
	if !consider(p.Status.InitContainerStatuses, func(s corev1.ContainerStatus) bool { return sidecars.Has(s.Name) }) {
		return nil
	}
	return latest
}
