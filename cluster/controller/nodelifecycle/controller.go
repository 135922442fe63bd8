package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/timing"
)

// Name is the node lifecycle controller's name in the controller manager
// (upstream's alias of node-lifecycle-controller).
const Name = "nodelifecycle"

// eventSource is the component upstream's node lifecycle controller
// records its events as.
const eventSource = "node-controller"

// Controller is the node lifecycle controller.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	logger   *slog.Logger
	clock    clock.Clock
	observe  func(Transition)

	nodeLister  corelisters.NodeLister
	podLister   corelisters.PodLister
	podIndexer  cache.Indexer
	leaseLister coordlisters.LeaseLister
	synced      []cache.InformerSynced

	nodeMonitorPeriod      time.Duration
	nodeStartupGracePeriod time.Duration
	nodeMonitorGracePeriod time.Duration
	// evictionLimiterQPS and secondaryEvictionLimiterQPS are the upstream
	// rates multiplied by the lab's speed.
	evictionLimiterQPS          float32
	secondaryEvictionLimiterQPS float32

	health *nodeHealthMap
	// knownNodes is only touched by the monitor pass.
	knownNodes map[string]*v1.Node
	// nodesToRetry holds nodes whose pods still have to be marked not
	// ready.
	nodesToRetry sync.Map

	// evictorLock guards zoneTainters and zoneStates.
	evictorLock  sync.Mutex
	zoneTainters map[string]*rateLimitedTimedQueue
	zoneStates   map[string]zoneState

	// nodeUpdateQueue holds nodes whose NoSchedule taints may be stale;
	// podUpdateQueue pods just bound to a node.
	nodeUpdateQueue workqueue.TypedInterface[string]
	podUpdateQueue  workqueue.TypedRateLimitingInterface[podUpdateItem]

	syncs, failures atomic.Uint64
}

// Init builds the node lifecycle controller from the manager's context.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	informers := c.Informers
	return newController(ctx, c.Client, informers.Core().V1().Nodes(), informers.Core().V1().Pods(),
		informers.Coordination().V1().Leases(), c.Recorder(eventSource), c.Logger, c.Speed, clock.RealClock{})
}

func newController(ctx context.Context, client kubernetes.Interface, nodes coreinformers.NodeInformer, pods coreinformers.PodInformer,
	leases coordinformers.LeaseInformer, recorder record.EventRecorder, logger *slog.Logger, speed timing.Speed, clk clock.Clock) (*Controller, error) {
	logger = componentbase.Logger(logger)
	factor := float32(speed.Factor())
	c := &Controller{
		client:   client,
		recorder: recorder,
		logger:   logger.With("controller", Name),
		clock:    clk,
		observe:  observerFrom(ctx),

		nodeLister:  nodes.Lister(),
		podLister:   pods.Lister(),
		podIndexer:  pods.Informer().GetIndexer(),
		leaseLister: leases.Lister(),

		nodeMonitorPeriod:           speed.Scale(timing.NodeMonitorPeriod),
		nodeStartupGracePeriod:      speed.Scale(timing.NodeStartupGracePeriod),
		nodeMonitorGracePeriod:      speed.Scale(timing.NodeMonitorGracePeriod),
		evictionLimiterQPS:          nodeEvictionRate * factor,
		secondaryEvictionLimiterQPS: secondaryNodeEvictionRate * factor,

		health:       newNodeHealthMap(),
		knownNodes:   map[string]*v1.Node{},
		zoneTainters: map[string]*rateLimitedTimedQueue{},
		zoneStates:   map[string]zoneState{},

		nodeUpdateQueue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "node_lifecycle_controller"}),
		podUpdateQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[podUpdateItem](),
			workqueue.TypedRateLimitingQueueConfig[podUpdateItem]{Name: "node_lifecycle_controller_pods"}),
	}
	if err := addPodNodeNameIndexer(pods.Informer()); err != nil {
		return nil, fmt.Errorf("index pods by node: %w", err)
	}
	podHandler, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.podUpdated(nil, obj.(*v1.Pod)) },
		UpdateFunc: func(old, obj interface{}) { c.podUpdated(old.(*v1.Pod), obj.(*v1.Pod)) },
	})
	if err != nil {
		return nil, fmt.Errorf("add pod handler: %w", err)
	}
	nodeHandler, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.nodeUpdateQueue.Add(obj.(*v1.Node).Name) },
		UpdateFunc: func(_, obj interface{}) { c.nodeUpdateQueue.Add(obj.(*v1.Node).Name) },
		DeleteFunc: func(obj interface{}) {
			if node, ok := controllerutil.DeletedObject[*v1.Node](obj); ok {
				c.nodesToRetry.Delete(node.Name)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("add node handler: %w", err)
	}
	c.synced = []cache.InformerSynced{podHandler.HasSynced, nodeHandler.HasSynced, leases.Informer().HasSynced}
	return c, nil
}

// Name returns "nodelifecycle".
func (c *Controller) Name() string { return Name }

// QueueLen is how many nodes and pods wait for work, and how many nodes
// wait for a NoExecute taint.
func (c *Controller) QueueLen() int {
	n := c.nodeUpdateQueue.Len() + c.podUpdateQueue.Len()
	c.evictorLock.Lock()
	defer c.evictorLock.Unlock()
	for _, q := range c.zoneTainters {
		n += q.len()
	}
	return n
}

// SyncCounts returns how many monitor passes ran and how many of them
// failed somewhere.
func (c *Controller) SyncCounts() (syncs, failures uint64) {
	return c.syncs.Load(), c.failures.Load()
}

// Run checks node health every NodeMonitorPeriod and works the node and
// pod queues with the given number of workers until ctx is done. It
// returns once everything it started has stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.nodeUpdateQueue.ShutDown()
	defer c.podUpdateQueue.ShutDown()
	c.logger.Info("Starting node controller")
	defer c.logger.Info("Shutting down node controller")
	if !cache.WaitForNamedCacheSync("taint", ctx.Done(), c.synced...) {
		return
	}
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	start := func(f func(context.Context), period time.Duration) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, f, period)
		}()
	}
	for i := 0; i < workers; i++ {
		start(c.runNodeWorker, time.Second)
		start(c.runPodWorker, time.Second)
	}
	start(c.doNoExecuteTaintingPass, nodeEvictionPeriod)
	start(func(ctx context.Context) {
		c.syncs.Add(1)
		if err := c.monitorNodeHealth(ctx); err != nil {
			c.failures.Add(1)
			c.logger.Error("Error monitoring node health", "err", err)
		}
	}, c.nodeMonitorPeriod)
	<-ctx.Done()
	// The queues shut down when Run returns; shut them now so that the
	// workers blocked in Get return and wg.Wait ends.
	c.nodeUpdateQueue.ShutDown()
	c.podUpdateQueue.ShutDown()
	wg.Wait()
}

// runNodeWorker keeps NoSchedule taints up to date. The queue hands a node
// to one worker at a time; a node changed while being worked on is queued
// again and comes back after Done.
func (c *Controller) runNodeWorker(ctx context.Context) {
	for {
		name, quit := c.nodeUpdateQueue.Get()
		if quit {
			return
		}
		if err := c.doNoScheduleTaintingPass(ctx, name); err != nil {
			// The next change of the node brings it back.
			c.logger.Error("Failed to taint NoSchedule on node", "node", name, "err", err)
		}
		c.nodeUpdateQueue.Done(name)
	}
}

// runPodWorker marks pods bound to not-ready nodes not ready; failures are
// retried with backoff, successes forgotten.
func (c *Controller) runPodWorker(ctx context.Context) {
	for {
		item, quit := c.podUpdateQueue.Get()
		if quit {
			return
		}
		if err := c.processPod(ctx, item); err != nil {
			c.logger.Info("Unable to mark pod NotReady", "pod", item.namespace+"/"+item.name, "err", err)
			c.podUpdateQueue.AddRateLimited(item)
		} else {
			c.podUpdateQueue.Forget(item)
		}
		c.podUpdateQueue.Done(item)
	}
}
