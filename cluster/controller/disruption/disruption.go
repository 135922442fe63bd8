// Package disruption is klab's disruption controller, after upstream's
// pkg/controller/disruption: it keeps each PodDisruptionBudget's status,
// which is what the API server's pods/eviction reads before it lets a
// voluntary disruption (kubectl drain) take a Pod.
//
// For a budget it counts the Pods the selector matches that are Ready
// and not being deleted (currentHealthy), works out how many must stay
// (desiredHealthy: minAvailable as given, or taken from the Pods' owners'
// replica counts when the budget is a percentage or a maxUnavailable), and
// allows the difference as disruptions. Evictions the API server has just
// granted are listed in status.disruptedPods; those Pods do not count as
// healthy until they are gone or two minutes have passed (the
// DeletionTimeout after which the controller assumes the delete never
// happened).
//
// Its shape is sample-controller's: handlers only enqueue budget keys and
// one level-triggered sync recomputes one budget's status.
package disruption

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/timing"
)

const (
	// Name is the controller's name in kube-controller-manager.
	Name = "disruption"
	// EventSource is the component its events name as their source.
	EventSource = "controllermanager"
)

// Controller is the disruption controller.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	speed    timing.Speed

	pdbLister        policylisters.PodDisruptionBudgetLister
	podLister        corelisters.PodLister
	rsLister         appslisters.ReplicaSetLister
	deploymentLister appslisters.DeploymentLister
	setLister        appslisters.StatefulSetLister
	synced           []cache.InformerSynced

	// queue holds budget keys.
	queue  workqueue.TypedRateLimitingInterface[string]
	logger *slog.Logger
}

var _ controllerctx.Controller = (*Controller)(nil)

// Init builds the controller and registers its informer handlers.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c)
}

func newController(c controllerctx.Context) (*Controller, error) {
	pdbInformer := c.Informers.Policy().V1().PodDisruptionBudgets()
	podInformer := c.Informers.Core().V1().Pods()
	rsInformer := c.Informers.Apps().V1().ReplicaSets()
	deploymentInformer := c.Informers.Apps().V1().Deployments()
	setInformer := c.Informers.Apps().V1().StatefulSets()
	dc := &Controller{
		client:           c.Client,
		recorder:         c.Recorder(EventSource),
		speed:            c.Speed,
		pdbLister:        pdbInformer.Lister(),
		podLister:        podInformer.Lister(),
		rsLister:         rsInformer.Lister(),
		deploymentLister: deploymentInformer.Lister(),
		setLister:        setInformer.Lister(),
		queue:            controllerutil.NewQueue[string](Name),
		logger:           c.Logger.With("controller", Name),
	}
	var err error
	dc.synced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: pdbInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    dc.enqueue,
			UpdateFunc: func(_, cur any) { dc.enqueue(cur) },
			DeleteFunc: dc.enqueue,
		}},
		controllerutil.EventHandler{Informer: podInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    dc.enqueueBudgetsOf,
			UpdateFunc: func(_, cur any) { dc.enqueueBudgetsOf(cur) },
			DeleteFunc: dc.enqueueBudgetsOf,
		}},
		// The owners' replica counts feed desiredHealthy; a scale changes
		// the budgets of its Pods, which the Pods' own events will bring.
		controllerutil.EventHandler{Informer: rsInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{}},
		controllerutil.EventHandler{Informer: deploymentInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{}},
		controllerutil.EventHandler{Informer: setInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{}},
	)
	if err != nil {
		return nil, fmt.Errorf("disruption controller: %w", err)
	}
	return dc, nil
}

// Name returns "disruption".
func (dc *Controller) Name() string { return Name }

// Run waits for the caches, then runs workers until ctx is done. A budget
// whose sync fails is retried with backoff.
func (dc *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{
		Logger: dc.logger,
		Synced: dc.synced,
		Queues: []controllerutil.Runnable{&controllerutil.Worker[string]{
			Queue: dc.queue, Sync: dc.sync,
			OnError: func(key string, err error, _ bool) {
				dc.logger.Info("sync failed, requeuing", "podDisruptionBudget", key, "err", err)
			},
		}},
	}.Run(ctx, workers)
}

func (dc *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		dc.queue.Add(key)
	}
}

// enqueueBudgetsOf wakes the budgets that select a Pod: it appeared,
// became ready or not, started terminating, or went.
func (dc *Controller) enqueueBudgetsOf(obj any) {
	pod, ok := controllerutil.DeletedObject[*corev1.Pod](obj)
	if !ok {
		return
	}
	for _, pdb := range dc.budgetsFor(pod) {
		dc.queue.Add(pod.Namespace + "/" + pdb.Name)
	}
}

// budgetsFor returns the budgets of the Pod's namespace whose selector
// matches its labels. In policy/v1 an empty selector matches every Pod of
// the namespace, and a missing one none.
func (dc *Controller) budgetsFor(pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	all, err := dc.pdbLister.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range all {
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out
}
