package controllerutil

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
)

// refManager decides, for one controller, which objects it owns, as
// upstream's BaseControllerRefManager: an object whose ControllerRef points
// at the controller is kept while the selector matches and released when
// it no longer does; a matching orphan is adopted. Nothing is adopted or
// released while the controller is being deleted.
type refManager struct {
	controller metav1.Object
	selector   labels.Selector

	// canAdopt is asked once, before the first adoption: adopting needs a
	// fresh read of the controller, because the cache may not show yet that
	// it was deleted, and a deleted controller must not take new objects
	// (kubernetes#42639).
	canAdopt     func(ctx context.Context) error
	canAdoptOnce sync.Once
	canAdoptErr  error
}

func (m *refManager) checkCanAdopt(ctx context.Context) error {
	m.canAdoptOnce.Do(func() {
		if m.canAdopt != nil {
			m.canAdoptErr = m.canAdopt(ctx)
		}
	})
	return m.canAdoptErr
}

// claim reports whether the controller owns obj after reconciling its
// ControllerRef. An error means an adoption or release was needed and
// failed; the caller should retry later.
func (m *refManager) claim(ctx context.Context, obj metav1.Object, match func(metav1.Object) bool, adopt, release func(context.Context, metav1.Object) error) (bool, error) {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID != m.controller.GetUID() {
			return false, nil // someone else's
		}
		if match(obj) {
			return true, nil
		}
		if m.controller.GetDeletionTimestamp() != nil {
			return false, nil
		}
		if err := release(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		return false, nil
	}
	// An orphan.
	if m.controller.GetDeletionTimestamp() != nil || !match(obj) || obj.GetDeletionTimestamp() != nil {
		return false, nil
	}
	if ns := m.controller.GetNamespace(); ns != "" && ns != obj.GetNamespace() {
		return false, nil
	}
	if err := adopt(ctx, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// PodControllerRefManager claims pods for a ReplicaSet, DaemonSet or Job.
type PodControllerRefManager struct {
	refManager
	kind       schema.GroupVersionKind
	podControl PodControl
	// finalizers are added on adoption and removed on release (the Job's
	// batch.kubernetes.io/job-tracking).
	finalizers []string
}

// NewPodControllerRefManager returns a manager for controller, of kind,
// selecting pods with selector. canAdopt is asked before the first
// adoption (see RecheckDeletionTimestamp).
func NewPodControllerRefManager(podControl PodControl, controller metav1.Object, selector labels.Selector, kind schema.GroupVersionKind, canAdopt func(ctx context.Context) error, finalizers ...string) *PodControllerRefManager {
	return &PodControllerRefManager{
		refManager: refManager{controller: controller, selector: selector, canAdopt: canAdopt},
		kind:       kind,
		podControl: podControl,
		finalizers: finalizers,
	}
}

// ClaimPods adopts matching orphans, releases owned pods that no longer
// match, and returns the pods the controller owns. Filters narrow what
// matches beyond the selector.
func (m *PodControllerRefManager) ClaimPods(ctx context.Context, pods []*corev1.Pod, filters ...func(*corev1.Pod) bool) ([]*corev1.Pod, error) {
	match := func(obj metav1.Object) bool {
		pod := obj.(*corev1.Pod)
		if !m.selector.Matches(labels.Set(pod.Labels)) {
			return false
		}
		for _, f := range filters {
			if !f(pod) {
				return false
			}
		}
		return true
	}
	adopt := func(ctx context.Context, obj metav1.Object) error {
		pod := obj.(*corev1.Pod)
		if err := m.checkCanAdopt(ctx); err != nil {
			return fmt.Errorf("can't adopt Pod %v/%v (%v): %w", pod.Namespace, pod.Name, pod.UID, err)
		}
		patch, err := ownerRefControllerPatch(m.controller, m.kind, pod.UID, m.finalizers...)
		if err != nil {
			return err
		}
		return m.podControl.PatchPod(ctx, pod.Namespace, pod.Name, patch)
	}
	release := func(ctx context.Context, obj metav1.Object) error {
		pod := obj.(*corev1.Pod)
		patch, err := deleteOwnerRefPatch(pod.UID, m.controller.GetUID(), m.finalizers...)
		if err != nil {
			return err
		}
		err = m.podControl.PatchPod(ctx, pod.Namespace, pod.Name, patch)
		// Invalid means the pod lost the reference already or was
		// recreated under the same name (the patch carries the old UID).
		if apierrors.IsInvalid(err) {
			return nil
		}
		return err
	}
	var claimed []*corev1.Pod
	var errs []error
	for _, pod := range pods {
		ok, err := m.claim(ctx, pod, match, adopt, release)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, pod)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

// ReplicaSetControllerRefManager claims ReplicaSets for a Deployment.
type ReplicaSetControllerRefManager struct {
	refManager
	kind   schema.GroupVersionKind
	client kubernetes.Interface
}

// NewReplicaSetControllerRefManager returns a manager for controller, of
// kind, selecting ReplicaSets with selector.
func NewReplicaSetControllerRefManager(client kubernetes.Interface, controller metav1.Object, selector labels.Selector, kind schema.GroupVersionKind, canAdopt func(ctx context.Context) error) *ReplicaSetControllerRefManager {
	return &ReplicaSetControllerRefManager{
		refManager: refManager{controller: controller, selector: selector, canAdopt: canAdopt},
		kind:       kind,
		client:     client,
	}
}

// ClaimReplicaSets adopts matching orphans, releases owned ReplicaSets
// that no longer match, and returns the ones the controller owns.
func (m *ReplicaSetControllerRefManager) ClaimReplicaSets(ctx context.Context, sets []*appsv1.ReplicaSet) ([]*appsv1.ReplicaSet, error) {
	return claimPatched(ctx, &m.refManager, m.kind, "ReplicaSet", sets, func(ctx context.Context, rs metav1.Object, data []byte) error {
		_, err := m.client.AppsV1().ReplicaSets(rs.GetNamespace()).Patch(ctx, rs.GetName(), types.StrategicMergePatchType, data, metav1.PatchOptions{})
		return err
	})
}

// claimPatched claims objs for m's controller (of kind), adopting and
// releasing them with strategic-merge patches sent by patch: what every
// ControllerRefManager but the pods' does, for objects of one kind (what,
// in its messages).
func claimPatched[T metav1.Object](ctx context.Context, m *refManager, kind schema.GroupVersionKind, what string, objs []T, patch func(context.Context, metav1.Object, []byte) error) ([]T, error) {
	match := func(obj metav1.Object) bool {
		return m.selector.Matches(labels.Set(obj.GetLabels()))
	}
	adopt := func(ctx context.Context, obj metav1.Object) error {
		if err := m.checkCanAdopt(ctx); err != nil {
			return fmt.Errorf("can't adopt %s %v/%v (%v): %w", what, obj.GetNamespace(), obj.GetName(), obj.GetUID(), err)
		}
		data, err := ownerRefControllerPatch(m.controller, kind, obj.GetUID())
		if err != nil {
			return err
		}
		return patch(ctx, obj, data)
	}
	release := func(ctx context.Context, obj metav1.Object) error {
		data, err := deleteOwnerRefPatch(obj.GetUID(), m.controller.GetUID())
		if err != nil {
			return err
		}
		err = patch(ctx, obj, data)
		if apierrors.IsInvalid(err) {
			return nil // no longer ours, or gone and made again
		}
		return err
	}
	var claimed []T
	var errs []error
	for _, obj := range objs {
		ok, err := m.claim(ctx, obj, match, adopt, release)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, obj)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

// RecheckDeletionTimestamp turns a fresh read of the controller into the
// canAdopt check: adoption is refused if the read fails or shows the
// controller being deleted.
func RecheckDeletionTimestamp(get func(context.Context) (metav1.Object, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		obj, err := get(ctx)
		if err != nil {
			return fmt.Errorf("can't recheck DeletionTimestamp: %w", err)
		}
		if ts := obj.GetDeletionTimestamp(); ts != nil {
			return fmt.Errorf("%v/%v has just been deleted at %v", obj.GetNamespace(), obj.GetName(), ts)
		}
		return nil
	}
}

// The adoption patch sets the controller reference; metadata.uid makes it
// fail (Invalid) if the object was recreated under the same name.
type addOwnerRefPatch struct {
	Metadata struct {
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		UID             types.UID               `json:"uid"`
		Finalizers      []string                `json:"finalizers,omitempty"`
	} `json:"metadata"`
}

func ownerRefControllerPatch(controller metav1.Object, kind schema.GroupVersionKind, uid types.UID, finalizers ...string) ([]byte, error) {
	var p addOwnerRefPatch
	p.Metadata.UID = uid
	p.Metadata.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(controller, kind)}
	p.Metadata.Finalizers = finalizers
	return json.Marshal(&p)
}

// The release patch deletes the owner's entry from the ownerReferences
// list (keyed by uid) with the strategic-merge "$patch": "delete"
// directive, and the given finalizers with $deleteFromPrimitiveList.
type deleteOwnerRefPatchBody struct {
	Metadata struct {
		UID              types.UID           `json:"uid"`
		OwnerReferences  []map[string]string `json:"ownerReferences"`
		DeleteFinalizers []string            `json:"$deleteFromPrimitiveList/finalizers,omitempty"`
	} `json:"metadata"`
}

func deleteOwnerRefPatch(dependent, owner types.UID, finalizers ...string) ([]byte, error) {
	var p deleteOwnerRefPatchBody
	p.Metadata.UID = dependent
	p.Metadata.OwnerReferences = []map[string]string{{"$patch": "delete", "uid": string(owner)}}
	p.Metadata.DeleteFinalizers = finalizers
	return json.Marshal(&p)
}
