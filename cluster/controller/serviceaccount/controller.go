// Package serviceaccount is klab's service account controller: every
// active namespace has a ServiceAccount named "default" (the one pods run
// as when they name none), created when the namespace appears and again
// whenever someone deletes it.
package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// Name is the service account controller's name in the controller
// manager.
const Name = "serviceaccount"

// serviceAccountsToEnsure are the accounts every namespace gets
// (upstream's DefaultServiceAccountsControllerOptions).
var serviceAccountsToEnsure = []v1.ServiceAccount{{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}

// Controller is the service account controller.
type Controller struct {
	client   kubernetes.Interface
	saLister corelisters.ServiceAccountLister
	nsLister corelisters.NamespaceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	worker   *controllerutil.Worker[string]
	logger   *slog.Logger
}

// Init builds the service account controller from the manager's context.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c.Client, c.Informers.Core().V1().ServiceAccounts(), c.Informers.Core().V1().Namespaces(), c.Logger)
}

func newController(client kubernetes.Interface, sas coreinformers.ServiceAccountInformer, namespaces coreinformers.NamespaceInformer, logger *slog.Logger) (*Controller, error) {
	logger = componentbase.Logger(logger)
	c := &Controller{
		client:   client,
		saLister: sas.Lister(),
		nsLister: namespaces.Lister(),
		logger:   logger.With("controller", Name),
		queue:    controllerutil.NewQueue[string]("serviceaccount"),
	}
	c.worker = &controllerutil.Worker[string]{
		Queue: c.queue, Sync: c.syncNamespace,
		OnError: func(key string, err error, _ bool) { c.logger.Error("Sync failed", "namespace", key, "err", err) },
	}
	// Handlers only queue the namespace's name; sync decides.
	var err error
	c.synced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: sas.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj interface{}) {
				if sa, ok := controllerutil.DeletedObject[*v1.ServiceAccount](obj); ok {
					c.queue.Add(sa.Namespace)
				}
			},
		}},
		controllerutil.EventHandler{Informer: namespaces.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { c.queue.Add(obj.(*v1.Namespace).Name) },
			UpdateFunc: func(_, obj interface{}) { c.queue.Add(obj.(*v1.Namespace).Name) },
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount controller: %w", err)
	}
	return c, nil
}

// Name returns "serviceaccount".
func (c *Controller) Name() string { return Name }

// QueueLen is how many namespaces wait to be checked.
func (c *Controller) QueueLen() int { return c.queue.Len() }

// SyncCounts returns how many namespace syncs ran and how many failed.
func (c *Controller) SyncCounts() (syncs, failures uint64) { return c.worker.SyncCounts() }

// Run works the queue with the given number of workers until ctx is done,
// and returns once they have stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{Logger: c.logger, Synced: c.synced, Queues: []controllerutil.Runnable{c.worker}}.Run(ctx, workers)
}

// syncNamespace creates the accounts an active namespace lacks.
func (c *Controller) syncNamespace(ctx context.Context, key string) error {
	ns, err := c.nsLister.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Status.Phase != v1.NamespaceActive {
		return nil // nothing new goes into a terminating namespace
	}
	var errs []error
	for _, want := range serviceAccountsToEnsure {
		_, err := c.saLister.ServiceAccounts(ns.Name).Get(want.Name)
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		sa := want.DeepCopy()
		sa.Namespace = ns.Name
		_, err = c.client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{})
		// Already there (the cache lagged), or the namespace started
		// terminating meanwhile: nothing to do.
		if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			errs = append(errs, fmt.Errorf("create service account %s/%s: %w", ns.Name, want.Name, err))
		}
	}
	return errors.Join(errs...)
}
