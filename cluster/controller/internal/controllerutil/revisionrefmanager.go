package controllerutil

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
	return claimPatched(ctx, &m.refManager, m.kind, "ControllerRevision", revisions, func(ctx context.Context, cr metav1.Object, data []byte) error {
		_, err := m.client.AppsV1().ControllerRevisions(cr.GetNamespace()).Patch(ctx, cr.GetName(), types.StrategicMergePatchType, data, metav1.PatchOptions{})
		return err
	})
}
