package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// statusManager writes pod statuses to the API server, and only when they
// changed (upstream's pkg/kubelet/status). It remembers the newest pod it
// got back from each write, because the informer's copy may not have
// caught up with it yet: diffing against a stale copy would write the same
// status twice.
type statusManager struct {
	client kubernetes.Interface
	clock  clock.Clock

	mu     sync.Mutex
	latest map[types.UID]*v1.Pod
}

func newStatusManager(client kubernetes.Interface, clk clock.Clock) *statusManager {
	return &statusManager{client: client, clock: clk, latest: map[types.UID]*v1.Pod{}}
}

// base returns the newer of the informer's pod and the one the last write
// returned.
func (m *statusManager) base(pod *v1.Pod) *v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	mine := m.latest[pod.UID]
	if mine == nil || newer(pod, mine) {
		return pod
	}
	return mine
}

// newer compares resource versions (etcd revisions in klab, as in
// upstream, though clients are told to treat them as opaque: this is the
// kubelet's own cache, not a client contract). Unreadable versions count
// as newer, so the informer's copy wins.
func newer(a, b *v1.Pod) bool {
	ra, errA := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, errB := strconv.ParseUint(b.ResourceVersion, 10, 64)
	if errA != nil || errB != nil {
		return true
	}
	return ra > rb
}

// forget drops what the manager remembers of a pod.
func (m *statusManager) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.latest, uid)
}

// SetPodStatus merges status into what the API holds and writes it if
// that changes anything. It reports whether it wrote.
func (m *statusManager) SetPodStatus(ctx context.Context, pod *v1.Pod, status v1.PodStatus) (bool, error) {
	base := m.base(pod)
	merged := mergePodStatus(base.Status, status, m.clock.Now())
	if statusEqual(base.Status, merged) {
		return false, nil
	}
	patch, err := statusPatch(base.UID, base.Status, merged)
	if err != nil {
		return false, err
	}
	updated, err := m.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return false, fmt.Errorf("patch status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if updated.UID == pod.UID {
		m.mu.Lock()
		m.latest[pod.UID] = updated
		m.mu.Unlock()
	}
	return true, nil
}

// mergePodStatus keeps what the kubelet does not own or must not change:
// conditions of other owners, the start time, the QoS class, the last
// transition time of a condition whose status is unchanged, and a
// terminal phase once reached.
func mergePodStatus(old, status v1.PodStatus, now time.Time) v1.PodStatus {
	s := *status.DeepCopy()
	if old.StartTime != nil {
		s.StartTime = old.StartTime.DeepCopy()
	} else if s.Phase != v1.PodFailed || s.Reason == "" { // rejected pods never started
		t := apiTime(now)
		s.StartTime = &t
	}
	if s.QOSClass == "" {
		s.QOSClass = old.QOSClass
	}
	s.NominatedNodeName = old.NominatedNodeName
	if len(s.PodIPs) == 0 && len(old.PodIPs) > 0 {
		// A stopped sandbox gives no IP; the pod keeps the one it had.
		s.PodIP, s.PodIPs = old.PodIP, slices.Clone(old.PodIPs)
	}
	if isTerminal(old.Phase) && !isTerminal(s.Phase) {
		s.Phase = old.Phase
	}
	var conditions []v1.PodCondition
	for _, c := range s.Conditions {
		c.LastTransitionTime = apiTime(now)
		for _, o := range old.Conditions {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		conditions = append(conditions, c)
	}
	for _, c := range old.Conditions {
		if !slices.Contains(kubeletConditions, c.Type) && !slices.ContainsFunc(s.Conditions, func(n v1.PodCondition) bool { return n.Type == c.Type }) {
			conditions = append(conditions, c)
		}
	}
	s.Conditions = conditions
	normalizeTimes(&s)
	return s
}

func isTerminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// normalizeTimes truncates the container times to the second the API
// keeps, so a status computed again compares equal to the stored one.
func normalizeTimes(s *v1.PodStatus) {
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for i := range list {
			for _, st := range []*v1.ContainerState{&list[i].State, &list[i].LastTerminationState} {
				if st.Running != nil {
					st.Running.StartedAt = apiTime(st.Running.StartedAt.Time)
				}
				if st.Terminated != nil {
					st.Terminated.StartedAt = apiTime(st.Terminated.StartedAt.Time)
					st.Terminated.FinishedAt = apiTime(st.Terminated.FinishedAt.Time)
				}
			}
		}
	}
}

// statusEqual compares statuses as the API round-trips them.
func statusEqual(a, b v1.PodStatus) bool {
	return apiequality.Semantic.DeepEqual(roundTrip(a), roundTrip(b))
}

func roundTrip(s v1.PodStatus) v1.PodStatus {
	data, err := json.Marshal(s)
	if err != nil {
		return s
	}
	var out v1.PodStatus
	if json.Unmarshal(data, &out) != nil {
		return s
	}
	return out
}

// statusPatch is the strategic merge patch from old to new, with the pod's
// UID so that it cannot land on a pod recreated under the same name (as
// upstream's statusutil.PatchPodStatus).
func statusPatch(uid types.UID, old, new v1.PodStatus) ([]byte, error) {
	oldData, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: old})
	if err != nil {
		return nil, fmt.Errorf("encode old status: %w", err)
	}
	newData, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: new})
	if err != nil {
		return nil, fmt.Errorf("encode new status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("status patch: %w", err)
	}
	return addUIDPrecondition(patch, uid)
}

// addUIDPrecondition puts metadata.uid into the patch (the two-way diff
// leaves it out as unchanged).
func addUIDPrecondition(patch []byte, uid types.UID) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, fmt.Errorf("status patch: %w", err)
	}
	m["metadata"] = map[string]any{"uid": string(uid)}
	return json.Marshal(m)
}
