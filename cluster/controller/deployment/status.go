package deployment

import (
	"context"
	"maps"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// calculateStatus adds up the ReplicaSets: replicas, ready, available and
// terminating over all of them, updated over the new one; unavailable is
// what spec.replicas of all ReplicaSets still lacks in available pods.
// Available holds while at least spec.replicas - maxUnavailable pods are
// available.
func calculateStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	available := sumStatus(allRSs, availableReplicas)
	// Negative while scaling down with more available than wanted.
	unavailable := max(replicaCount(allRSs)-available, 0)
	status := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            sumStatus(allRSs, actualReplicas),
		UpdatedReplicas:     sumStatus([]*appsv1.ReplicaSet{newRS}, actualReplicas),
		ReadyReplicas:       sumStatus(allRSs, readyReplicas),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		TerminatingReplicas: ptr.To(sumStatus(allRSs, terminatingReplicas)),
		CollisionCount:      d.Status.CollisionCount,
		// A copy, so that setting conditions never touches d's.
		Conditions: append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	if available >= *d.Spec.Replicas-maxUnavailable(d) {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, MinimumReplicasAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, MinimumReplicasUnavailable, "Deployment does not have minimum availability.", now))
	}
	return status
}

// syncDeploymentStatus writes the calculated status if it changed.
func (dc *Controller) syncDeploymentStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	status := calculateStatus(allRSs, newRS, d, dc.clock.Now())
	if reflect.DeepEqual(d.Status, status) {
		return nil
	}
	d.Status = status
	return dc.updateStatus(ctx, d)
}

// updateStatus writes d's status and, as upstream's status endpoint for
// Deployments keeps metadata changes but labels, its annotations: this is
// how the revision annotation reaches the Deployment. klab's API server
// keeps only the status on /status, so when an annotation did not stick
// a write of the main resource carries it. Either way d takes the new
// resourceVersion, so that a later write of the same sync does not
// conflict.
func (dc *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	client := dc.client.AppsV1().Deployments(d.Namespace)
	updated, err := client.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	if !maps.Equal(updated.Annotations, d.Annotations) {
		updated.Annotations = maps.Clone(d.Annotations)
		if updated, err = client.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	d.ResourceVersion = updated.ResourceVersion
	return nil
}
