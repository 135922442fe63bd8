package deployment

import (
	"fmt"
	"math"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

// resolveFenceposts turns maxSurge and maxUnavailable into pod counts for
// desired replicas: a surge percentage rounds up, an unavailability
// percentage rounds down. Validation forbids both being zero, but
// rounding can make them so; then one pod may be unavailable, as surging
// might be impossible (quota).
func resolveFenceposts(surge, unavailable *intstr.IntOrString, desired int32) (int32, int32, error) {
	s, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(surge, intstr.FromInt32(0)), int(desired), true)
	if err != nil {
		return 0, 0, err
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(unavailable, intstr.FromInt32(0)), int(desired), false)
	if err != nil {
		return 0, 0, err
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u), nil
}

// maxSurge is how many pods a rolling update may run above spec.replicas.
func maxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || d.Spec.Strategy.RollingUpdate == nil {
		return 0
	}
	s, _, _ := resolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, *d.Spec.Replicas)
	return s
}

// maxUnavailable is how many of spec.replicas a rolling update may have
// unavailable, never more than spec.replicas.
func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || d.Spec.Strategy.RollingUpdate == nil || *d.Spec.Replicas == 0 {
		return 0
	}
	_, u, _ := resolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, *d.Spec.Replicas)
	return min(u, *d.Spec.Replicas)
}

// newRSNewReplicas is the size the new ReplicaSet may grow to now: under
// RollingUpdate as far as maxSurge allows over all ReplicaSets, never
// beyond spec.replicas; under Recreate spec.replicas at once (old pods are
// gone by then).
func newRSNewReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	switch d.Spec.Strategy.Type {
	case appsv1.RollingUpdateDeploymentStrategyType:
		surge, err := intstr.GetScaledValueFromIntOrPercent(d.Spec.Strategy.RollingUpdate.MaxSurge, int(*d.Spec.Replicas), true)
		if err != nil {
			return 0, err
		}
		current := replicaCount(all)
		maxTotal := *d.Spec.Replicas + int32(surge)
		if current >= maxTotal {
			return *newRS.Spec.Replicas, nil
		}
		up := min(maxTotal-current, *d.Spec.Replicas-*newRS.Spec.Replicas)
		return *newRS.Spec.Replicas + up, nil
	case appsv1.RecreateDeploymentStrategyType:
		return *d.Spec.Replicas, nil
	default:
		return 0, fmt.Errorf("deployment type %v isn't supported", d.Spec.Strategy.Type)
	}
}

// replicaSetProportion is how many of the toAdd replicas (added is what
// earlier, larger ReplicaSets took) this ReplicaSet gets when a
// Deployment is scaled in the middle of a rollout: its share of the new
// total, measured against the max-replicas it was last scaled for.
func replicaSetProportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || *rs.Spec.Replicas == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := replicaSetFraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		// Never add more than is left to add.
		return min(fraction, allowed)
	}
	// Never remove more than is left to remove.
	return max(fraction, allowed)
}

func replicaSetFraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if *d.Spec.Replicas == 0 {
		return -*rs.Spec.Replicas
	}
	deploymentMax := *d.Spec.Replicas + maxSurge(d)
	annotated, ok := intAnnotation(rs, MaxReplicasAnnotation)
	if !ok || annotated == 0 {
		// Scaled by hand or by an old controller: the Deployment's current
		// size is the best guess; the min/max in the caller keeps the
		// result within bounds.
		annotated = d.Status.Replicas
	}
	size := float64(*rs.Spec.Replicas*deploymentMax) / float64(annotated)
	return int32(math.Round(size)) - *rs.Spec.Replicas
}

// replicaCount sums spec.replicas.
func replicaCount(sets []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += *rs.Spec.Replicas
		}
	}
	return n
}

// sumStatus sums one status counter over the ReplicaSets.
func sumStatus(sets []*appsv1.ReplicaSet, field func(*appsv1.ReplicaSetStatus) int32) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += field(&rs.Status)
		}
	}
	return n
}

func actualReplicas(s *appsv1.ReplicaSetStatus) int32    { return s.Replicas }
func readyReplicas(s *appsv1.ReplicaSetStatus) int32     { return s.ReadyReplicas }
func availableReplicas(s *appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas }
func terminatingReplicas(s *appsv1.ReplicaSetStatus) int32 {
	if s.TerminatingReplicas == nil {
		return 0
	}
	return *s.TerminatingReplicas
}

// filterActiveReplicaSets returns the ReplicaSets that want pods.
func filterActiveReplicaSets(sets []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range sets {
		if rs != nil && *rs.Spec.Replicas > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// findActiveOrLatest returns the only ReplicaSet that wants pods, or the
// newest one if none does; nil when several do.
func findActiveOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	sort.Sort(sort.Reverse(replicaSetsByCreationTimestamp(oldRSs)))
	active := filterActiveReplicaSets(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return oldRSs[0]
	case 1:
		return active[0]
	default:
		return nil
	}
}

// isSaturated reports whether the new ReplicaSet runs all of spec.replicas,
// was scaled for this size, and has them all available.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := intAnnotation(rs, DesiredReplicasAnnotation)
	return ok && *rs.Spec.Replicas == *d.Spec.Replicas && desired == *d.Spec.Replicas &&
		rs.Status.AvailableReplicas == *d.Spec.Replicas
}

// replicaSetsByCreationTimestamp sorts oldest first, by name on a tie.
type replicaSetsByCreationTimestamp []*appsv1.ReplicaSet

func (o replicaSetsByCreationTimestamp) Len() int      { return len(o) }
func (o replicaSetsByCreationTimestamp) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o replicaSetsByCreationTimestamp) Less(i, j int) bool {
	if o[i].CreationTimestamp.Equal(&o[j].CreationTimestamp) {
		return o[i].Name < o[j].Name
	}
	return o[i].CreationTimestamp.Before(&o[j].CreationTimestamp)
}

// replicaSetsBySizeOlder sorts largest first, older first on a tie: the
// order in which proportional scaling takes replicas away.
type replicaSetsBySizeOlder []*appsv1.ReplicaSet

func (o replicaSetsBySizeOlder) Len() int      { return len(o) }
func (o replicaSetsBySizeOlder) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o replicaSetsBySizeOlder) Less(i, j int) bool {
	if *o[i].Spec.Replicas == *o[j].Spec.Replicas {
		return replicaSetsByCreationTimestamp(o).Less(i, j)
	}
	return *o[i].Spec.Replicas > *o[j].Spec.Replicas
}

// replicaSetsBySizeNewer sorts largest first, newer first on a tie: the
// order in which proportional scaling hands out replicas.
type replicaSetsBySizeNewer []*appsv1.ReplicaSet

func (o replicaSetsBySizeNewer) Len() int      { return len(o) }
func (o replicaSetsBySizeNewer) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o replicaSetsBySizeNewer) Less(i, j int) bool {
	if *o[i].Spec.Replicas == *o[j].Spec.Replicas {
		return replicaSetsByCreationTimestamp(o).Less(j, i)
	}
	return *o[i].Spec.Replicas > *o[j].Spec.Replicas
}

// replicaSetsByRevision sorts lowest revision first, older first on a tie:
// the order in which history is cleaned up.
type replicaSetsByRevision []*appsv1.ReplicaSet

func (o replicaSetsByRevision) Len() int      { return len(o) }
func (o replicaSetsByRevision) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o replicaSetsByRevision) Less(i, j int) bool {
	ri, _ := revision(o[i])
	rj, _ := revision(o[j])
	if ri == rj {
		return replicaSetsByCreationTimestamp(o).Less(i, j)
	}
	return ri < rj
}
