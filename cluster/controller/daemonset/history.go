package daemonset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/controller/internal/history"
)

// A DaemonSet's history is one ControllerRevision per distinct template it
// has had, as upstream's: named <daemonset>-<hash> after the template's
// ComputeHash, labelled controller-revision-hash=<hash> (the label its
// pods carry, which is how a rolling update tells new pods from old),
// holding history.TemplatePatch of the DaemonSet and numbered in the
// order the templates were current. `kubectl rollout history` lists them,
// and `kubectl rollout undo` patches the DaemonSet with one's data.

// constructHistory returns the DaemonSet's current revision, creating it
// for a new template or renumbering it for a template that comes back
// (a rollback), and the old revisions.
func (dsc *Controller) constructHistory(ctx context.Context, ds *appsv1.DaemonSet) (cur *appsv1.ControllerRevision, old []*appsv1.ControllerRevision, err error) {
	revisions, err := dsc.controlledHistories(ctx, ds)
	if err != nil {
		return nil, nil, err
	}
	patch, err := history.TemplatePatch(ds)
	if err != nil {
		return nil, nil, err
	}
	var current []*appsv1.ControllerRevision
	for _, cr := range revisions {
		// A revision made before the label was used gets its name as
		// hash: no need to compute one, nor to fear a collision.
		if _, ok := cr.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; !ok {
			toUpdate := cr.DeepCopy()
			if toUpdate.Labels == nil {
				toUpdate.Labels = map[string]string{}
			}
			toUpdate.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = toUpdate.Name
			if cr, err = dsc.client.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, toUpdate, metav1.UpdateOptions{}); err != nil {
				return nil, nil, err
			}
		}
		if bytes.Equal(cr.Data.Raw, patch) {
			current = append(current, cr)
		} else {
			old = append(old, cr)
		}
	}
	next := maxRevision(old) + 1
	if len(current) == 0 {
		cur, err = dsc.snapshot(ctx, ds, patch, next)
		return cur, old, err
	}
	if cur, err = dsc.dedupCurHistories(ctx, ds, current); err != nil {
		return nil, nil, err
	}
	if cur.Revision < next {
		toUpdate := cur.DeepCopy()
		toUpdate.Revision = next
		if cur, err = dsc.client.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, toUpdate, metav1.UpdateOptions{}); err != nil {
			return nil, nil, err
		}
	}
	return cur, old, nil
}

// snapshot stores the DaemonSet's template as revision number revision. A
// name taken by another template is a hash collision: the DaemonSet's
// collisionCount is raised (once, from a fresh read) so that the next sync
// hashes to another name.
func (dsc *Controller) snapshot(ctx context.Context, ds *appsv1.DaemonSet, patch []byte, revision int64) (*appsv1.ControllerRevision, error) {
	hash := controllerutil.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            history.Name(ds.Name, hash),
			Namespace:       ds.Namespace,
			Labels:          withLabel(ds.Spec.Template.Labels, appsv1.DefaultDaemonSetUniqueLabelKey, hash),
			Annotations:     maps.Clone(ds.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: revision,
	}
	created, err := dsc.client.AppsV1().ControllerRevisions(ds.Namespace).Create(ctx, cr, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return created, err
	}
	createErr := err
	existing, err := dsc.client.AppsV1().ControllerRevisions(ds.Namespace).Get(ctx, cr.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if bytes.Equal(existing.Data.Raw, patch) {
		return existing, nil // an earlier sync made it
	}
	fresh, err := dsc.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(fresh.Status.CollisionCount, ds.Status.CollisionCount) {
		return nil, fmt.Errorf("found a stale collision count (%d, expected %d) of DaemonSet %q while processing; will retry until it is updated",
			deref(ds.Status.CollisionCount), deref(fresh.Status.CollisionCount), ds.Name)
	}
	fresh.Status.CollisionCount = ptr.To(deref(fresh.Status.CollisionCount) + 1)
	if _, err := dsc.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	dsc.logger.Info("Found a hash collision for DaemonSet - bumping collisionCount to resolve it", "daemonset", ds.Namespace+"/"+ds.Name, "collisionCount", *fresh.Status.CollisionCount)
	return nil, createErr
}

// dedupCurHistories keeps the highest-numbered of several revisions of
// the current template, relabelling the pods of the others to it before
// deleting them.
func (dsc *Controller) dedupCurHistories(ctx context.Context, ds *appsv1.DaemonSet, current []*appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if len(current) == 1 {
		return current[0], nil
	}
	keep := current[0]
	for _, cr := range current[1:] {
		if cr.Revision >= keep.Revision {
			keep = cr
		}
	}
	keepHash := keep.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	for _, cr := range current {
		if cr.Name == keep.Name {
			continue
		}
		pods, err := dsc.getDaemonPods(ctx, ds)
		if err != nil {
			return nil, err
		}
		for _, pod := range pods {
			if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == keepHash {
				continue
			}
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: keepHash}}})
			if err != nil {
				return nil, err
			}
			if err := dsc.podControl.PatchPod(ctx, ds.Namespace, pod.Name, patch); err != nil {
				return nil, err
			}
		}
		if err := dsc.client.AppsV1().ControllerRevisions(ds.Namespace).Delete(ctx, cr.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return keep, nil
}

// controlledHistories claims the DaemonSet's revisions: matching orphans
// are adopted, owned revisions that stopped matching are released.
func (dsc *Controller) controlledHistories(ctx context.Context, ds *appsv1.DaemonSet) ([]*appsv1.ControllerRevision, error) {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, err
	}
	// All of them: owned ones that stopped matching must be released.
	revisions, err := dsc.historyLister.ControllerRevisions(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	canAdopt := controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := dsc.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if fresh.UID != ds.UID {
			return nil, fmt.Errorf("original DaemonSet %v/%v is gone: got uid %v, wanted %v", ds.Namespace, ds.Name, fresh.UID, ds.UID)
		}
		return fresh, nil
	})
	m := controllerutil.NewControllerRevisionControllerRefManager(dsc.client, ds, selector, controllerKind, canAdopt)
	return m.ClaimControllerRevisions(ctx, revisions)
}

// cleanupHistory deletes the oldest old revisions beyond
// spec.revisionHistoryLimit, except those some pod still runs.
func (dsc *Controller) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision) error {
	toKill := len(old) - int(deref(ds.Spec.RevisionHistoryLimit))
	if toKill <= 0 {
		return nil
	}
	byNode, err := dsc.getNodesToDaemonPods(ctx, ds)
	if err != nil {
		return fmt.Errorf("couldn't get node to daemon pod mapping for daemon set %q: %w", ds.Name, err)
	}
	live := map[string]bool{}
	for _, pods := range byNode {
		for _, pod := range pods {
			if hash := pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; hash != "" {
				live[hash] = true
			}
		}
	}
	history.Sort(old)
	for _, cr := range old {
		if toKill <= 0 {
			break
		}
		if live[cr.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			continue
		}
		if err := dsc.client.AppsV1().ControllerRevisions(ds.Namespace).Delete(ctx, cr.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		toKill--
	}
	return nil
}

func maxRevision(revisions []*appsv1.ControllerRevision) int64 {
	var m int64
	for _, cr := range revisions {
		m = max(m, cr.Revision)
	}
	return m
}

func withLabel(labels map[string]string, key, value string) map[string]string {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// The history handlers wake the DaemonSet that owns a revision, or, for
// an orphan, the ones that could adopt it.

func (dsc *Controller) addHistory(obj any) {
	cr := obj.(*appsv1.ControllerRevision)
	if cr.DeletionTimestamp != nil {
		dsc.deleteHistory(cr)
		return
	}
	dsc.enqueueHistoryOwners(cr)
}

func (dsc *Controller) updateHistory(old, cur any) {
	oldCR, curCR := old.(*appsv1.ControllerRevision), cur.(*appsv1.ControllerRevision)
	if oldCR.ResourceVersion == curCR.ResourceVersion {
		return // a resync
	}
	if oldRef, curRef := metav1.GetControllerOf(oldCR), metav1.GetControllerOf(curCR); oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if ds := dsc.resolveControllerRef(oldCR.Namespace, oldRef); ds != nil {
			dsc.enqueue(ds)
		}
	}
	dsc.enqueueHistoryOwners(curCR)
}

func (dsc *Controller) deleteHistory(obj any) {
	cr, ok := controllerutil.DeletedObject[*appsv1.ControllerRevision](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(cr); ref != nil {
		if ds := dsc.resolveControllerRef(cr.Namespace, ref); ds != nil {
			dsc.enqueue(ds)
		}
	}
}

func (dsc *Controller) enqueueHistoryOwners(cr *appsv1.ControllerRevision) {
	if ref := metav1.GetControllerOf(cr); ref != nil {
		if ds := dsc.resolveControllerRef(cr.Namespace, ref); ds != nil {
			dsc.enqueue(ds)
		}
		return
	}
	if len(cr.Labels) == 0 {
		return
	}
	list, err := dsc.dsLister.DaemonSets(cr.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range controllerutil.Selecting(list, func(c *appsv1.DaemonSet) *metav1.LabelSelector { return c.Spec.Selector }, cr.Labels) {
		dsc.enqueue(ds)
	}
}
