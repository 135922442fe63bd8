package statefulset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/controller/internal/history"
)

// A StatefulSet's history, as upstream's: each distinct template is one
// ControllerRevision, named <set>-<hash of its data>, holding
// history.TemplatePatch of the set. Two revisions matter at any time: the
// current one, which status.currentRevision names and the Pods below the
// partition keep, and the update one, the set's template now
// (status.updateRevision). Each Pod names its revision in its
// controller-revision-hash label; a rolling update is over when every Pod
// names the update revision, which then becomes the current one.

// podRevisionLabel is the label naming a Pod's revision (the revision's
// full name, unlike a DaemonSet pod's bare hash).
const podRevisionLabel = appsv1.StatefulSetRevisionLabel

// listRevisions claims the set's revisions: the ones its ControllerRef
// names, plus matching orphans it adopts (upstream's adoptOrphanRevisions);
// owned revisions that stopped matching are released.
func (ssc *Controller) listRevisions(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	revisions, err := ssc.revisions.Lister.ControllerRevisions(set.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	m := controllerutil.NewControllerRevisionControllerRefManager(ssc.client, set, selector, controllerKind, ssc.canAdopt(set))
	return m.ClaimControllerRevisions(ctx, revisions)
}

// canAdopt is asked before the set adopts its first orphan (a Pod or a
// ControllerRevision): a fresh read, because the cache may not show yet
// that the set was deleted or made again under its name.
func (ssc *Controller) canAdopt(set *appsv1.StatefulSet) func(context.Context) error {
	return controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := ssc.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if fresh.UID != set.UID {
			return nil, fmt.Errorf("original StatefulSet %v/%v is gone: got uid %v, wanted %v", set.Namespace, set.Name, fresh.UID, set.UID)
		}
		return fresh, nil
	})
}

// newRevision is the revision of the set's template now, numbered
// revision: the template patch, the template's labels and the set's
// annotations.
func newRevision(set *appsv1.StatefulSet, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	patch, err := history.TemplatePatch(set)
	if err != nil {
		return nil, err
	}
	cr := history.New(set, controllerKind, set.Spec.Template.Labels, patch, revision, collisionCount)
	cr.Annotations = maps.Clone(set.Annotations)
	return cr, nil
}

// applyRevision returns a copy of set with the template that revision
// holds: the set a Pod of that revision is made from.
func applyRevision(set *appsv1.StatefulSet, revision *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	original, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	patched, err := strategicpatch.StrategicMergePatch(original, revision.Data.Raw, &appsv1.StatefulSet{})
	if err != nil {
		return nil, fmt.Errorf("apply revision %s to StatefulSet %s/%s: %w", revision.Name, set.Namespace, set.Name, err)
	}
	out := &appsv1.StatefulSet{}
	if err := json.Unmarshal(patched, out); err != nil {
		return nil, err
	}
	return out, nil
}

// getStatefulSetRevisions returns the current and update revisions and the
// collision count to record, storing the update revision if the template
// is new. revisions must be sorted. A template equal to the newest
// revision's is that revision; equal to an older one's (a rollback), the
// older one is renumbered to become the newest, so each template stays in
// the history once.
func (ssc *Controller) getStatefulSetRevisions(ctx context.Context, set *appsv1.StatefulSet, revisions []*appsv1.ControllerRevision) (current, update *appsv1.ControllerRevision, collisionCount int32, err error) {
	if set.Status.CollisionCount != nil {
		collisionCount = *set.Status.CollisionCount
	}
	update, err = newRevision(set, history.Next(revisions), &collisionCount)
	if err != nil {
		return nil, nil, collisionCount, err
	}
	equal := history.FindEqual(revisions, update)
	switch {
	case len(equal) > 0 && history.Equal(revisions[len(revisions)-1], equal[len(equal)-1]):
		update = revisions[len(revisions)-1]
	case len(equal) > 0:
		update, err = ssc.revisions.Renumber(ctx, equal[len(equal)-1], update.Revision)
	default:
		update, err = ssc.revisions.Create(ctx, set, update, &collisionCount)
	}
	if err != nil {
		return nil, nil, collisionCount, err
	}
	for _, cr := range revisions {
		if cr.Name == set.Status.CurrentRevision {
			current = cr
			break
		}
	}
	if current == nil {
		// A new set, or its current revision is gone: start the history
		// at the update revision.
		current = update
	}
	return current, update, collisionCount, nil
}

// truncateHistory deletes the oldest revisions beyond
// spec.revisionHistoryLimit that are neither current, nor the update
// revision, nor run by any Pod.
func (ssc *Controller) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revisions []*appsv1.ControllerRevision, current, update *appsv1.ControllerRevision) error {
	live := map[string]bool{current.Name: true, update.Name: true}
	for _, pod := range pods {
		live[pod.Labels[podRevisionLabel]] = true
	}
	var old []*appsv1.ControllerRevision
	for _, cr := range revisions {
		if !live[cr.Name] {
			old = append(old, cr)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	if len(old) <= limit {
		return nil
	}
	for _, cr := range old[:len(old)-limit] {
		if err := ssc.revisions.Delete(ctx, cr); err != nil {
			return err
		}
	}
	return nil
}
