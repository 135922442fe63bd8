package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// Adapter is the kind of object a Controller keeps replicas of, seen as
// ReplicaSets. The controller itself only ever handles *appsv1.ReplicaSet;
// an Adapter reads and writes the real kind. Upstream runs its replication
// manager the same way: the ReplicaSet controller over ReplicationControllers
// converted to ReplicaSets and back (package replication).
type Adapter interface {
	// Kind is what the ControllerRef of the managed pods names.
	Kind() schema.GroupVersionKind
	// Informer is the shared informer of the managed kind.
	Informer() cache.SharedIndexInformer
	// FromInformer returns an object the informer handed to an event
	// handler (a tombstone included) as a ReplicaSet, or false if it is
	// not of the managed kind.
	FromInformer(obj any) (*appsv1.ReplicaSet, bool)
	// Get and List read the informer's cache. What they return is shared
	// with the cache: DeepCopy before changing it.
	Get(namespace, name string) (*appsv1.ReplicaSet, error)
	List(namespace string) ([]*appsv1.ReplicaSet, error)
	// Fetch reads the object from the API server, bypassing the cache.
	Fetch(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	// UpdateStatus writes rs's status through the status subresource.
	UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// CountsTerminating reports whether the kind's status has
	// terminatingReplicas (a ReplicationController's has not, and a count
	// it cannot store would look like a change on every sync).
	CountsTerminating() bool
	// EventObject is the object events about rs are recorded against: the
	// real kind, so `kubectl describe` of it shows them.
	EventObject(rs *appsv1.ReplicaSet) runtime.Object
}

// replicaSets is the Adapter of apps/v1 ReplicaSets themselves: every
// method is the plain client, lister or informer call.
type replicaSets struct {
	informer appsinformers.ReplicaSetInformer
	lister   appslisters.ReplicaSetLister
	client   kubernetes.Interface
}

var _ Adapter = replicaSets{}

func (a replicaSets) Kind() schema.GroupVersionKind { return controllerKind }

func (a replicaSets) Informer() cache.SharedIndexInformer { return a.informer.Informer() }

func (a replicaSets) FromInformer(obj any) (*appsv1.ReplicaSet, bool) {
	return controllerutil.DeletedObject[*appsv1.ReplicaSet](obj)
}

func (a replicaSets) Get(namespace, name string) (*appsv1.ReplicaSet, error) {
	return a.lister.ReplicaSets(namespace).Get(name)
}

func (a replicaSets) List(namespace string) ([]*appsv1.ReplicaSet, error) {
	return a.lister.ReplicaSets(namespace).List(labels.Everything())
}

func (a replicaSets) Fetch(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	return a.client.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a replicaSets) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}

func (a replicaSets) CountsTerminating() bool { return true }

func (a replicaSets) EventObject(rs *appsv1.ReplicaSet) runtime.Object { return rs }
