package controllerutil

import (
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// podPhaseToOrdinal orders phases from the cheapest pod to lose to the
// dearest: one that never started, one whose node went silent, one that
// runs.
var podPhaseToOrdinal = map[corev1.PodPhase]int{
	corev1.PodPending: 0,
	corev1.PodUnknown: 1,
	corev1.PodRunning: 2,
}

// ActivePods sorts pods so that the ones to delete first come first, as
// upstream's ActivePods (used by the Job controller): unassigned before
// assigned, Pending before Unknown before Running, not ready before ready,
// ready for less time before more, more container restarts before fewer,
// newer before older.
type ActivePods []*corev1.Pod

func (s ActivePods) Len() int      { return len(s) }
func (s ActivePods) Swap(i, j int) { s[i], s[j] = s[j], s[i] }

// Less reports whether pod i should be deleted before pod j.
func (s ActivePods) Less(i, j int) bool {
	if less, decided := compareUntilReady(s[i], s[j]); decided {
		return less
	}
	if IsPodReady(s[i]) && IsPodReady(s[j]) {
		ti, tj := podReadyTime(s[i]), podReadyTime(s[j])
		if !ti.Equal(tj) {
			return afterOrZero(ti, tj)
		}
	}
	if less, decided := compareMaxContainerRestarts(s[i], s[j]); decided {
		return less
	}
	if !s[i].CreationTimestamp.Equal(&s[j].CreationTimestamp) {
		return afterOrZero(&s[i].CreationTimestamp, &s[j].CreationTimestamp)
	}
	return false
}

// ActivePodsWithRanks is the ReplicaSet controller's scale-down order
// (upstream's ActivePodsWithRanks). Beyond ActivePods it honours the
// controller.kubernetes.io/pod-deletion-cost annotation, prefers pods
// doubled up on a node (Rank: how many related pods share the node), and
// compares times in logarithmic buckets relative to Now, so that pods of
// about the same age are picked at random (by UID) rather than always the
// newest.
type ActivePodsWithRanks struct {
	Pods []*corev1.Pod
	// Rank is, per pod, how many active related pods run on its node.
	Rank []int
	// Now is the reference for the logarithmic buckets; zero disables them.
	Now metav1.Time
}

func (s ActivePodsWithRanks) Len() int { return len(s.Pods) }

func (s ActivePodsWithRanks) Swap(i, j int) {
	s.Pods[i], s.Pods[j] = s.Pods[j], s.Pods[i]
	s.Rank[i], s.Rank[j] = s.Rank[j], s.Rank[i]
}

// Less reports whether pod i should be deleted before pod j.
func (s ActivePodsWithRanks) Less(i, j int) bool {
	pi, pj := s.Pods[i], s.Pods[j]
	if less, decided := compareUntilReady(pi, pj); decided {
		return less
	}
	ci, cj := deletionCost(pi), deletionCost(pj)
	if ci != cj {
		return ci < cj
	}
	if s.Rank[i] != s.Rank[j] {
		return s.Rank[i] > s.Rank[j]
	}
	if IsPodReady(pi) && IsPodReady(pj) {
		ti, tj := podReadyTime(pi), podReadyTime(pj)
		if !ti.Equal(tj) {
			return s.newerFirst(ti, tj, pi, pj)
		}
	}
	if less, decided := compareMaxContainerRestarts(pi, pj); decided {
		return less
	}
	if !pi.CreationTimestamp.Equal(&pj.CreationTimestamp) {
		return s.newerFirst(&pi.CreationTimestamp, &pj.CreationTimestamp, pi, pj)
	}
	return false
}

// newerFirst orders two times newest first, in logarithmic buckets of
// their age; within a bucket the UID decides.
func (s ActivePodsWithRanks) newerFirst(ti, tj *metav1.Time, pi, pj *corev1.Pod) bool {
	if s.Now.IsZero() || ti.IsZero() || tj.IsZero() {
		return afterOrZero(ti, tj)
	}
	if diff := logarithmicRankDiff(*ti, *tj, s.Now); diff != 0 {
		return diff < 0
	}
	return pi.UID < pj.UID
}

// compareUntilReady applies the first three rules both orders share:
// unassigned < assigned, Pending < Unknown < Running, not ready < ready.
func compareUntilReady(pi, pj *corev1.Pod) (less, decided bool) {
	if pi.Spec.NodeName != pj.Spec.NodeName && (pi.Spec.NodeName == "" || pj.Spec.NodeName == "") {
		return pi.Spec.NodeName == "", true
	}
	if oi, oj := podPhaseToOrdinal[pi.Status.Phase], podPhaseToOrdinal[pj.Status.Phase]; oi != oj {
		return oi < oj, true
	}
	if ri, rj := IsPodReady(pi), IsPodReady(pj); ri != rj {
		return !ri, true
	}
	return false, false
}

// compareMaxContainerRestarts puts the pod whose containers restarted most
// first; sidecars (restartable init containers) break a tie.
func compareMaxContainerRestarts(pi, pj *corev1.Pod) (less, decided bool) {
	regularI, sidecarI := maxContainerRestarts(pi)
	regularJ, sidecarJ := maxContainerRestarts(pj)
	if regularI != regularJ {
		return regularI > regularJ, true
	}
	if sidecarI != sidecarJ {
		return sidecarI > sidecarJ, true
	}
	return false, false
}

func maxContainerRestarts(pod *corev1.Pod) (regular, sidecar int32) {
	for _, c := range pod.Status.ContainerStatuses {
		regular = max(regular, c.RestartCount)
	}
	sidecars := sets.New[string]()
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars.Insert(c.Name)
		}
	}
	for _, c := range pod.Status.InitContainerStatuses {
		if sidecars.Has(c.Name) {
			sidecar = max(sidecar, c.RestartCount)
		}
	}
	return regular, sidecar
}

// afterOrZero reports whether t1 is after t2, a zero time counting as the
// latest of all.
func afterOrZero(t1, t2 *metav1.Time) bool {
	if t1.IsZero() || t2.IsZero() {
		return t1.IsZero()
	}
	return t1.After(t2.Time)
}

// logarithmicRankDiff compares the base-2 logarithms of two ages at now.
func logarithmicRankDiff(t1, t2, now metav1.Time) int64 {
	rank := func(t metav1.Time) int64 {
		if d := now.Sub(t.Time); d > 0 {
			return int64(math.Log2(float64(d)))
		}
		return -1
	}
	return rank(t1) - rank(t2)
}

// deletionCost reads controller.kubernetes.io/pod-deletion-cost; a missing
// or invalid value costs 0.
func deletionCost(pod *corev1.Pod) int32 {
	value, ok := pod.Annotations[corev1.PodDeletionCost]
	if !ok {
		return 0
	}
	cost, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		return 0
	}
	return int32(cost)
}
