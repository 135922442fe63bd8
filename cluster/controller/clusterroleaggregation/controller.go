// Package clusterroleaggregation is the controller that keeps aggregated
// ClusterRoles whole: a ClusterRole with an aggregationRule (admin, edit,
// view) has, as its rules, the rules of every ClusterRole its selectors
// match, so that labelling a new role
// rbac.authorization.k8s.io/aggregate-to-view: "true" extends view.
// Upstream's pkg/controller/clusterroleaggregation.
package clusterroleaggregation

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// Name is the controller's name in the controller manager.
const Name = "clusterrole-aggregation"

// Controller is the cluster role aggregation controller.
type Controller struct {
	client kubernetes.Interface
	lister rbaclisters.ClusterRoleLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	worker *controllerutil.Worker[string]
	logger *slog.Logger
}

// Init builds the controller from the manager's context.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c.Client, c.Informers.Rbac().V1().ClusterRoles(), c.Logger)
}

func newController(client kubernetes.Interface, roles rbacinformers.ClusterRoleInformer, logger *slog.Logger) (*Controller, error) {
	logger = componentbase.Logger(logger)
	c := &Controller{
		client: client,
		lister: roles.Lister(),
		logger: logger.With("controller", Name),
		queue:  controllerutil.NewQueue[string](Name),
	}
	c.worker = &controllerutil.Worker[string]{
		Queue: c.queue, Sync: c.syncClusterRole,
		OnError: func(key string, err error, _ bool) { c.logger.Error("Sync failed", "clusterrole", key, "err", err) },
	}
	// Any change to any ClusterRole may change what an aggregated role
	// gathers, so each queues every aggregated role; sync decides.
	enqueueAll := func(any) { c.enqueueAggregated() }
	var err error
	c.synced, err = controllerutil.AddEventHandlers(controllerutil.EventHandler{
		Informer: roles.Informer(),
		Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueueAll,
			UpdateFunc: func(_, obj any) { c.enqueueAggregated() },
			DeleteFunc: enqueueAll,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%s controller: %w", Name, err)
	}
	return c, nil
}

// enqueueAggregated queues every ClusterRole with an aggregation rule.
func (c *Controller) enqueueAggregated() {
	all, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, r := range all {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// Name returns "clusterrole-aggregation".
func (c *Controller) Name() string { return Name }

// Run works the queue with the given number of workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{Logger: c.logger, Synced: c.synced, Queues: []controllerutil.Runnable{c.worker}}.Run(ctx, workers)
}

// syncClusterRole sets an aggregated role's rules to those its selectors
// gather, when they differ.
func (c *Controller) syncClusterRole(ctx context.Context, key string) error {
	role, err := c.lister.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return nil
	}
	all, err := c.lister.List(labels.Everything())
	if err != nil {
		return err
	}
	rules, err := auth.AggregatedRules(role, all)
	if err != nil {
		return err
	}
	if reflect.DeepEqual(rules, role.Rules) || (len(rules) == 0 && len(role.Rules) == 0) {
		return nil
	}
	updated := role.DeepCopy() // never change the informer's copy
	updated.Rules = rules
	if _, err := c.client.RbacV1().ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update clusterrole %s: %w", key, err)
	}
	return nil
}

var _ controllerctx.Controller = (*Controller)(nil)
