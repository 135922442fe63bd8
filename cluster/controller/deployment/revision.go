package deployment

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// The annotations the controller keeps on a Deployment and its
// ReplicaSets, under upstream's keys (kubectl rollout reads them).
const (
	// RevisionAnnotation numbers the rollouts: each new or reused
	// ReplicaSet gets the next number, and the Deployment copies its new
	// ReplicaSet's.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists the earlier revisions of a
	// ReplicaSet that a rollback brought back.
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the Deployment's spec.replicas when the
	// ReplicaSet was last scaled; a difference means the Deployment itself
	// was scaled.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is spec.replicas + maxSurge at that time, the
	// base of proportional scaling.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
	// maxRevisionHistoryLength bounds RevisionHistoryAnnotation, in
	// characters.
	maxRevisionHistoryLength = 2000
)

// deprecatedRollbackTo is the extensions/v1beta1 rollback annotation; it
// is never copied to ReplicaSets.
const deprecatedRollbackTo = "deprecated.deployment.rollback.to"

// annotationsToSkip are the Deployment annotations not copied to its new
// ReplicaSet: the controller's own, and kubectl apply's record of the
// Deployment.
var annotationsToSkip = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true,
	RevisionAnnotation:                 true,
	RevisionHistoryAnnotation:          true,
	DesiredReplicasAnnotation:          true,
	MaxReplicasAnnotation:              true,
	deprecatedRollbackTo:               true,
}

// revision returns the ReplicaSet's revision number, 0 if it has none.
func revision(rs *appsv1.ReplicaSet) (int64, error) {
	v, ok := rs.Annotations[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// maxRevision is the highest revision among sets; unreadable ones count 0.
func maxRevision(sets []*appsv1.ReplicaSet) int64 {
	var highest int64
	for _, rs := range sets {
		if v, err := revision(rs); err == nil && v > highest {
			highest = v
		}
	}
	return highest
}

// equalIgnoreHash reports whether two pod templates are the same but for
// the pod-template-hash label a ReplicaSet's copy carries. This is how
// the Deployment finds its new ReplicaSet, and how a rollback finds an old
// one to reuse.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return apiequality.Semantic.DeepEqual(a, b)
}

// findNewReplicaSet returns the oldest ReplicaSet whose template matches
// the Deployment's, or nil.
func findNewReplicaSet(d *appsv1.Deployment, sets []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sorted := append([]*appsv1.ReplicaSet(nil), sets...)
	sort.Sort(replicaSetsByCreationTimestamp(sorted))
	for _, rs := range sorted {
		// Of several equal templates (possible only before hashes named
		// ReplicaSets), the oldest wins.
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// findOldReplicaSets returns the ReplicaSets other than the new one: those
// with pods wanted, and all of them.
func findOldReplicaSets(d *appsv1.Deployment, sets []*appsv1.ReplicaSet) (withPods, all []*appsv1.ReplicaSet) {
	newRS := findNewReplicaSet(d, sets)
	for _, rs := range sets {
		if newRS != nil && rs.UID == newRS.UID {
			continue
		}
		all = append(all, rs)
		if *rs.Spec.Replicas != 0 {
			withPods = append(withPods, rs)
		}
	}
	return withPods, all
}

// setNewReplicaSetAnnotations brings the new ReplicaSet's annotations up
// to date: the Deployment's own (minus annotationsToSkip), the revision
// newRevision if it is higher than the one it has (keeping the old number
// in the revision history, as a rollback does), and, for a ReplicaSet
// about to be created, the replica annotations. It reports whether
// anything changed.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool) bool {
	changed := copyDeploymentAnnotations(d, rs)
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	oldRevision, had := rs.Annotations[RevisionAnnotation]
	oldValue, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false
		}
		oldValue = 0
	}
	newValue, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	// The new ReplicaSet's revision only grows: if old ReplicaSets were
	// deleted since it got its number, newRevision may be lower.
	if oldValue < newValue {
		rs.Annotations[RevisionAnnotation] = newRevision
		changed = true
		if had {
			appendRevisionHistory(rs, oldRevision)
		}
	}
	if !exists && setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)) {
		changed = true
	}
	return changed
}

// appendRevisionHistory adds old to the revision history, dropping the
// oldest entries to stay within maxRevisionHistoryLength.
func appendRevisionHistory(rs *appsv1.ReplicaSet, old string) {
	history := rs.Annotations[RevisionHistoryAnnotation]
	if history == "" {
		rs.Annotations[RevisionHistoryAnnotation] = old
		return
	}
	entries := strings.Split(history, ",")
	total := len(history) + len(old) + 1
	start := 0
	for total > maxRevisionHistoryLength && start < len(entries) {
		total -= len(entries[start]) + 1
		start++
	}
	if total <= maxRevisionHistoryLength {
		rs.Annotations[RevisionHistoryAnnotation] = strings.Join(append(entries[start:], old), ",")
	}
}

// copyDeploymentAnnotations copies the Deployment's annotations to the
// ReplicaSet, except annotationsToSkip. The revision in particular is not
// copied: the Deployment takes it from its new ReplicaSet, never the other
// way round, since the Deployment's copy may be stale.
func copyDeploymentAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range d.Annotations {
		if annotationsToSkip[k] {
			continue
		}
		if cur, ok := rs.Annotations[k]; ok && cur == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// setDeploymentRevision sets the Deployment's revision annotation and
// reports whether it changed.
func setDeploymentRevision(d *appsv1.Deployment, rev string) bool {
	if d.Annotations[RevisionAnnotation] == rev {
		return false
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RevisionAnnotation] = rev
	return true
}

// setReplicasAnnotations records desired and max replicas on the
// ReplicaSet and reports whether they changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range map[string]string{
		DesiredReplicasAnnotation: fmt.Sprint(desired),
		MaxReplicasAnnotation:     fmt.Sprint(maxReplicas),
	} {
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

// replicasAnnotationsNeedUpdate reports whether setReplicasAnnotations
// would change anything.
func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != fmt.Sprint(desired) ||
		rs.Annotations[MaxReplicasAnnotation] != fmt.Sprint(maxReplicas)
}

// intAnnotation reads an int32 annotation of the ReplicaSet.
func intAnnotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}
