package controllerutil

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
)

// ControllerRevisionControllerRefManager claims ControllerRevisions for a
// DaemonSet or a StatefulSet, as upstream's of the same name: the history
// of a controller is the revisions its ControllerRef names, plus matching
// orphans it adopts.
type ControllerRevisionControllerRefManager struct {
	refManager
	kind   schema.GroupVersionKind
	client kubernetes.Interface
}

// NewControllerRevisionControllerRefManager returns a manager for
// controller, of kind, selecting revisions with selector.
func NewControllerRevisionControllerRefManager(client kubernetes.Interface, controller metav1.Object, selector labels.Selector, kind schema.GroupVersionKind, canAdopt func(ctx context.Context) error) *ControllerRevisionControllerRefManager {
	return &ControllerRevisionControllerRefManager{
		refManager: refManager{controller: controller, selector: selector, canAdopt: canAdopt},
		kind:       kind,
		client:     client,
	}
}

// ClaimControllerRevisions adopts matching orphans, releases owned
// revisions that no longer match, and returns the ones the controller
// owns.
func (m *ControllerRevisionControllerRefManager) ClaimControllerRevisions(ctx context.Context, revisions []*appsv1.ControllerRevision) ([]*appsv1.ControllerRevision, error) {
	match := func(obj metav1.Object) bool {
		return m.selector.Matches(labels.Set(obj.GetLabels()))
	}
	patch := func(ctx context.Context, cr metav1.Object, data []byte) error {
		_, err := m.client.AppsV1().ControllerRevisions(cr.GetNamespace()).Patch(ctx, cr.GetName(), types.StrategicMergePatchType, data, metav1.PatchOptions{})
		return err
	}
	adopt := func(ctx context.Context, obj metav1.Object) error {
		if err := m.checkCanAdopt(ctx); err != nil {
			return fmt.Errorf("can't adopt ControllerRevision %v/%v (%v): %w", obj.GetNamespace(), obj.GetName(), obj.GetUID(), err)
		}
		data, err := ownerRefControllerPatch(m.controller, m.kind, obj.GetUID())
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
	var claimed []*appsv1.ControllerRevision
	var errs []error
	for _, cr := range revisions {
		ok, err := m.claim(ctx, cr, match, adopt, release)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, cr)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}
