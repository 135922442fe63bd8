package deployment

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// getAllReplicaSetsAndSyncRevision returns the new ReplicaSet (created
// if createIfNotExisted and missing) and all old ones. The new one's
// revision becomes one more than the highest old revision, and the
// Deployment takes the new one's revision.
func (dc *Controller) getAllReplicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, createIfNotExisted bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	_, allOld := findOldReplicaSets(d, rsList)
	newRS, err := dc.getNewReplicaSet(ctx, d, rsList, allOld, createIfNotExisted)
	if err != nil {
		return nil, nil, err
	}
	return newRS, allOld, nil
}

// getNewReplicaSet returns the ReplicaSet whose template matches the
// Deployment's, its annotations, revision and minReadySeconds brought up
// to date, or creates it: named <deployment>-<hash of the template and
// collisionCount>, the hash also added to its selector and pod labels
// (pod-template-hash) so that it never selects another revision's pods,
// owned by the Deployment, as large as the strategy allows right now.
//
// A rollback (kubectl rollout undo copies an old ReplicaSet's template
// back into the Deployment) lands here too: the old ReplicaSet matches
// again and is reused, under the next revision number.
func (dc *Controller) getNewReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList, oldRSs []*appsv1.ReplicaSet, createIfNotExisted bool) (*appsv1.ReplicaSet, error) {
	existing := findNewReplicaSet(d, rsList)
	newRevision := strconv.FormatInt(maxRevision(oldRSs)+1, 10)

	if existing != nil {
		rsCopy := existing.DeepCopy()
		annotationsChanged := setNewReplicaSetAnnotations(d, rsCopy, newRevision, true)
		if annotationsChanged || rsCopy.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rsCopy.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			updated, err := dc.client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{})
			if err != nil {
				return nil, err
			}
			// The cache does not show the write yet: later steps of this
			// sync must not write the same change again from the stale
			// copy (upstream does, and gets a conflict and a retry).
			for i := range rsList {
				if rsList[i].UID == updated.UID {
					rsList[i] = updated
				}
			}
			// The Deployment takes the revision on the next sync, when
			// this write has been observed.
			return updated, nil
		}
		needsUpdate := setDeploymentRevision(d, rsCopy.Annotations[RevisionAnnotation])
		// A Deployment given a progress deadline only now starts counting
		// from the first time its new ReplicaSet is seen.
		if hasProgressDeadline(d) && getCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			msg := fmt.Sprintf("Found new replica set %q", rsCopy.Name)
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, FoundNewRSReason, msg, dc.clock.Now()))
			needsUpdate = true
		}
		if needsUpdate {
			if err := dc.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return rsCopy, nil
	}
	if !createIfNotExisted {
		return nil, nil
	}

	template := *d.Spec.Template.DeepCopy()
	hash := controllerutil.ComputeHash(&template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = withLabel(selector.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	newRS := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			// A deterministic name makes the create idempotent: a second
			// attempt finds AlreadyExists instead of a twin.
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
	replicas, err := newRSNewReplicas(d, append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS), newRS)
	if err != nil {
		return nil, err
	}
	*newRS.Spec.Replicas = replicas
	setNewReplicaSetAnnotations(d, newRS, newRevision, false)

	alreadyExists := false
	created, err := dc.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, newRS, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		alreadyExists = true
		// Our own from an earlier sync the cache has not shown yet, or
		// another template with the same hash.
		rs, getErr := dc.rsLister.ReplicaSets(newRS.Namespace).Get(newRS.Name)
		if getErr != nil {
			return nil, getErr
		}
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			created, err = rs, nil
			break
		}
		// A hash collision: count it, so that the next sync hashes
		// differently, and retry through the error.
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		*d.Status.CollisionCount++
		if statusErr := dc.updateStatus(ctx, d); statusErr == nil {
			dc.logger.Info("found a hash collision for deployment, bumping collisionCount to resolve it",
				"deployment", d.Namespace+"/"+d.Name, "collisionCount", *d.Status.CollisionCount)
		}
		return nil, err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", newRS.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, FailedRSCreateReason, msg, dc.clock.Now()))
			// The create error is the one to report.
			_ = dc.updateStatus(ctx, d)
		}
		dc.recorder.Event(d, corev1.EventTypeWarning, FailedRSCreateReason, msg)
		return nil, err
	}
	if !alreadyExists && replicas > 0 {
		dc.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, replicas)
	}
	needsUpdate := setDeploymentRevision(d, newRevision)
	if !alreadyExists && hasProgressDeadline(d) {
		msg := fmt.Sprintf("Created new replica set %q", created.Name)
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewReplicaSetReason, msg, dc.clock.Now()))
		needsUpdate = true
	}
	if needsUpdate {
		err = dc.updateStatus(ctx, d)
	}
	return created, err
}

// withLabel returns a copy of m with key=value.
func withLabel(m map[string]string, key, value string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}
