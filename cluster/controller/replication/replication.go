// Package replication is klab's replication manager, after upstream's
// pkg/controller/replication: it keeps spec.replicas pods running for each
// core/v1 ReplicationController.
//
// A ReplicationController is the ReplicaSet's ancestor and means the same
// thing, so, as upstream does, the manager is the ReplicaSet controller
// itself (replicaset.NewBase) given an Adapter that shows it every
// ReplicationController as a ReplicaSet and writes its status back as a
// ReplicationController's. Nothing of the reconciling is written twice.
package replication

import (
	"context"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/replicaset"
)

const (
	// Name is the controller's name in kube-controller-manager's
	// --controllers flag.
	Name = "replicationcontroller"
	// EventSource is the component its events name as their source.
	EventSource = "replication-controller"
)

// Init builds the replication manager and registers its informer handlers.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	informer := c.Informers.Core().V1().ReplicationControllers()
	rcs := adapter{informer: informer, lister: informer.Lister(), client: c.Client}
	return replicaset.NewBase(c, Name, EventSource, rcs)
}
