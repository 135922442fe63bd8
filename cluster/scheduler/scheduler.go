package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/componentbase/apiclient"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
	"github.com/klab-dev/klab/cluster/scheduler/framework"
	frameworkruntime "github.com/klab-dev/klab/cluster/scheduler/framework/runtime"
	"github.com/klab-dev/klab/cluster/scheduler/internal/cache"
	"github.com/klab-dev/klab/cluster/scheduler/internal/queue"
	"github.com/klab-dev/klab/cluster/timing"
)

// Upstream's names.
const (
	// SchedulerName is the profile's name: pods with another
	// .spec.schedulerName are left to their own scheduler.
	SchedulerName = v1.DefaultSchedulerName
	// LeaseNamespace and LeaseName name the leader-election Lease.
	LeaseNamespace = metav1.NamespaceSystem
	LeaseName      = "kube-scheduler"
)

// clientDefaults are upstream's user agent, with QPS and Burst for
// throughput: client-go's 5 QPS would throttle the binding of every pod.
var clientDefaults = apiclient.Defaults{UserAgent: "kube-scheduler", QPS: 1000, Burst: 2000}

// Config configures a scheduler.
type Config struct {
	// REST reaches the API server as system:kube-scheduler. QPS and Burst
	// default to 1000 and 2000 when unset.
	REST *rest.Config
	// Identity names this scheduler, usually the master's node name
	// (default: the host name). The leader-election identity is
	// Identity_<uuid>, as upstream's hostname_<uuid>.
	Identity string
	// Profile lists the plugins, in order; required.
	Profile []framework.PluginSpec
	// Speed divides the leader-election and queue timings.
	Speed timing.Speed
	// DebugListen is the debug HTTP server's address ("127.0.0.1:0" picks
	// a port; see Addr).
	DebugListen string
	// Logger receives the scheduler's logs (default: discarded).
	Logger *slog.Logger
	// DisableLeaderElection schedules at once without a Lease, as
	// upstream's --leader-elect=false.
	DisableLeaderElection bool
	// DecisionHistory is how many decisions are kept (default 200).
	DecisionHistory int
	// Parallelism is how many goroutines filter and score nodes (default
	// 16, as upstream).
	Parallelism int
}

// Scheduler is klab's kube-scheduler.
type Scheduler struct {
	cfg      Config
	log      *slog.Logger
	identity string // leader-election identity

	client          kubernetes.Interface
	informerFactory informers.SharedInformerFactory
	podLister       corelisters.PodLister
	// pdbLister feeds preemption, which avoids breaking budgets.
	pdbLister policylisters.PodDisruptionBudgetLister
	cache     *cache.Cache
	queue     *queue.PriorityQueue
	snapshot  *cache.Snapshot
	fwk       *frameworkruntime.Framework
	algo      *algorithm

	broadcaster       events.EventBroadcaster
	recorder          events.EventRecorder
	legacyBroadcaster record.EventBroadcaster
	leaderElection    *leaderElection

	decisions *decisionRing
	hub       *eventstream.Hub[Event]
	stats     stats

	// ctx lives as long as the component; bindCtx as long as bindings may
	// run (Kill cancels it, Stop lets bindings finish first).
	ctx        context.Context
	cancel     context.CancelFunc
	bindCtx    context.Context
	bindCancel context.CancelFunc

	server *componentbase.Server
	life   *componentbase.Lifecycle

	mu          sync.Mutex
	killed      bool
	schedCancel context.CancelFunc
	schedWG     sync.WaitGroup // the scheduling loop
	bindWG      sync.WaitGroup // bindings in flight
}

// New builds a scheduler: its clients, informers, cache, queue and the
// profile's plugins. Nothing runs until Start.
func New(cfg Config) (*Scheduler, error) {
	if cfg.REST == nil {
		return nil, errors.New("new scheduler: no REST config")
	}
	if len(cfg.Profile) == 0 {
		return nil, errors.New("new scheduler: the profile has no plugins")
	}
	if cfg.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("new scheduler: no identity and unable to get hostname: %w", err)
		}
		cfg.Identity = host
	}
	restCfg := apiclient.Config(cfg.REST, clientDefaults)
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("new scheduler: %w", err)
	}

	s := &Scheduler{
		cfg:       cfg,
		identity:  cfg.Identity,
		log:       componentbase.Logger(cfg.Logger).With("component", "kube-scheduler", "identity", cfg.Identity),
		client:    client,
		cache:     cache.New(),
		snapshot:  cache.NewEmptySnapshot(),
		decisions: newDecisionRing(cfg.DecisionHistory),
		hub:       newEventHub(),
	}
	s.life = componentbase.NewLifecycle(s.shutdown)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.bindCtx, s.bindCancel = context.WithCancel(context.Background())
	s.queue = queue.New(queue.Timings{
		InitialBackoff:     cfg.Speed.Scale(timing.PodInitialBackoff),
		MaxBackoff:         cfg.Speed.Scale(timing.PodMaxBackoff),
		MaxInUnschedulable: cfg.Speed.Scale(timing.PodMaxInUnschedulablePodsDuration),
	}, nil)

	s.informerFactory = informers.NewSharedInformerFactory(client, 0)
	s.informerFactory.InformerFor(&v1.Pod{}, newPodInformer)
	s.podLister = s.informerFactory.Core().V1().Pods().Lister()
	s.pdbLister = s.informerFactory.Policy().V1().PodDisruptionBudgets().Lister()

	s.fwk, err = frameworkruntime.NewFramework(s.ctx, cfg.Profile, &handle{s},
		frameworkruntime.WithParallelism(cfg.Parallelism))
	if err != nil {
		s.cancel()
		s.bindCancel()
		return nil, fmt.Errorf("new scheduler: %w", err)
	}
	s.algo = &algorithm{fwk: s.fwk, snapshot: s.snapshot, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}

	// Scheduling events go through the events.k8s.io/v1 API, as upstream's
	// recorder does when the API server serves it (klab's does).
	s.broadcaster = apiclient.NewEventBroadcaster(client.EventsV1(), SchedulerName+"-"+cfg.Identity)
	s.recorder = s.broadcaster.NewRecorder(scheme.Scheme, SchedulerName)

	if err := s.addAllEventHandlers(); err != nil {
		s.cancel()
		s.bindCancel()
		return nil, fmt.Errorf("new scheduler: %w", err)
	}
	if !cfg.DisableLeaderElection {
		if s.leaderElection, err = s.newLeaderElection(restCfg); err != nil {
			s.cancel()
			s.bindCancel()
			return nil, fmt.Errorf("new scheduler: %w", err)
		}
	}
	return s, nil
}

// newPodInformer lists and watches the pods the scheduler cares about:
// all but those that have terminated, as upstream's scheduler does.
func newPodInformer(cs kubernetes.Interface, resync time.Duration) toolscache.SharedIndexInformer {
	selector := fmt.Sprintf("status.phase!=%v,status.phase!=%v", v1.PodSucceeded, v1.PodFailed)
	return coreinformers.NewFilteredPodInformer(cs, metav1.NamespaceAll, resync,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) { o.FieldSelector = selector })
}

// handle is what plugins get from the framework.
type handle struct{ s *Scheduler }

var _ framework.Handle = (*handle)(nil)

// SnapshotSharedLister returns the snapshot of the cycle being run.
func (h *handle) SnapshotSharedLister() framework.NodeInfoLister { return h.s.snapshot }

// SharedInformerFactory returns the scheduler's informers.
func (h *handle) SharedInformerFactory() framework.SharedInformerFactory {
	return h.s.informerFactory
}
