package replication

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/controller/replicaset"
)

// controllerKind is what the ControllerRef of a ReplicationController's
// pods names.
var controllerKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")

// adapter shows the ReplicaSet controller ReplicationControllers as
// ReplicaSets (upstream's informerAdapter, listerAdapter and
// clientsetAdapter in one).
type adapter struct {
	informer coreinformers.ReplicationControllerInformer
	lister   corelisters.ReplicationControllerLister
	client   kubernetes.Interface
}

var _ replicaset.Adapter = adapter{}

func (a adapter) Kind() schema.GroupVersionKind { return controllerKind }

func (a adapter) Informer() cache.SharedIndexInformer { return a.informer.Informer() }

func (a adapter) FromInformer(obj any) (*appsv1.ReplicaSet, bool) {
	rc, ok := controllerutil.DeletedObject[*corev1.ReplicationController](obj)
	if !ok {
		return nil, false
	}
	return toReplicaSet(rc), true
}

func (a adapter) Get(namespace, name string) (*appsv1.ReplicaSet, error) {
	rc, err := a.lister.ReplicationControllers(namespace).Get(name)
	if err != nil {
		return nil, err
	}
	return toReplicaSet(rc), nil
}

func (a adapter) List(namespace string) ([]*appsv1.ReplicaSet, error) {
	rcs, err := a.lister.ReplicationControllers(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*appsv1.ReplicaSet, len(rcs))
	for i, rc := range rcs {
		out[i] = toReplicaSet(rc)
	}
	return out, nil
}

func (a adapter) Fetch(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	rc, err := a.client.CoreV1().ReplicationControllers(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return toReplicaSet(rc), nil
}

func (a adapter) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	rc, err := a.client.CoreV1().ReplicationControllers(rs.Namespace).UpdateStatus(ctx, toReplicationController(rs), metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return toReplicaSet(rc), nil
}

func (a adapter) CountsTerminating() bool { return false }

func (a adapter) EventObject(rs *appsv1.ReplicaSet) runtime.Object {
	return toReplicationController(rs)
}
