package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/timing"
)

// Kubelet is one node's agent. New prepares it; Start registers the node
// and starts the loops; Stop or Kill ends them.
type Kubelet struct {
	cfg     Config
	log     *slog.Logger
	client  kubernetes.Interface
	runtime cri.Runtime
	clock   clock.WithTicker

	broadcaster record.EventBroadcaster
	rec         *recorder
	stream      *eventstream.Hub[LifecycleEvent]

	// crashBackOff delays restarts of crashing containers;
	// imageBackOff retries of failed image pulls.
	crashBackOff *flowcontrol.Backoff
	imageBackOff *flowcontrol.Backoff
	pullErrors   pullFailures

	podInformer cache.SharedIndexInformer
	// services holds every Service, for the containers' service
	// environment variables.
	services cache.SharedIndexInformer
	workers  *podWorkers
	statuses *statusManager
	probes   *probeManager
	reasons  *reasonCache
	mirrors  *mirrorManager
	// stats keeps the previous CPU readings of /stats/summary.
	stats *statsCache
	authn *tokenAuthenticator
	authz *accessAuthorizer
	// tokens are the service-account tokens of the pods' volumes.
	tokens *tokenManager

	nodeMu sync.Mutex
	// node is the Node as the API server last returned it.
	node *v1.Node
	// nodeStatusPosted is when the node status was last written.
	nodeStatusPosted time.Time
	lastLeaseRenew   time.Time
	nodeKick         chan struct{}

	server *componentbase.Server
	life   *componentbase.Lifecycle

	// ctx lives as long as the kubelet; its shutdown cancels it.
	ctx    context.Context
	cancel context.CancelFunc
}

// New checks cfg and prepares a kubelet; nothing runs until Start.
func New(cfg Config) (*Kubelet, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg.REST)
	if err != nil {
		return nil, fmt.Errorf("kubelet %s: api client: %w", cfg.NodeName, err)
	}
	k := newKubelet(cfg, client, clock.RealClock{})
	broadcaster := record.NewBroadcaster()
	k.broadcaster = broadcaster
	k.rec.events = broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: cfg.NodeName})
	k.authn = newTokenAuthenticator(cfg.REST, k.clock)
	k.authz = newAccessAuthorizer(cfg.REST, cfg.NodeName, k.clock)
	return k, nil
}

// newKubelet wires a kubelet around a client and a clock; tests give it a
// fake clientset, a fake clock and a fake event recorder.
func newKubelet(cfg Config, client kubernetes.Interface, clk clock.WithTicker) *Kubelet {
	ctx, cancel := context.WithCancel(context.Background())
	stream := eventstream.NewHub[LifecycleEvent](eventStreamRecent, nil)
	k := &Kubelet{
		stats:        newStatsCache(),
		cfg:          cfg,
		log:          cfg.Logger.With("component", "kubelet", "node", cfg.NodeName),
		client:       client,
		runtime:      cfg.Runtime,
		clock:        clk,
		stream:       stream,
		rec:          &recorder{node: cfg.NodeName, stream: stream, now: clk.Now, events: record.NewFakeRecorder(0)},
		crashBackOff: flowcontrol.NewFakeBackOff(cfg.Speed.Scale(timing.BackOffInitial), cfg.Speed.Scale(timing.BackOffMax), clk),
		imageBackOff: flowcontrol.NewFakeBackOff(cfg.Speed.Scale(timing.BackOffInitial), cfg.Speed.Scale(timing.BackOffMax), clk),
		statuses:     newStatusManager(client, clk),
		reasons:      newReasonCache(),
		nodeKick:     make(chan struct{}, 1),
		ctx:          ctx,
		cancel:       cancel,
	}
	k.services = newServiceInformer(client)
	k.tokens = newTokenManager(client, clk)
	k.life = componentbase.NewLifecycle(k.shutdown)
	k.workers = newPodWorkers(k)
	k.probes = newProbeManager(k)
	k.mirrors = newMirrorManager(k)
	return k
}

// Start binds the HTTPS listener, registers the node (retrying until ctx
// ends) and starts the kubelet's loops. ctx bounds the start only; the
// kubelet runs until Stop or Kill.
func (k *Kubelet) Start(ctx context.Context) error {
	if err := k.life.Begin(); err != nil {
		return fmt.Errorf("start kubelet %s: %w", k.cfg.NodeName, err)
	}
	server, err := componentbase.Listen(ctx, componentbase.ServerConfig{
		Addr: k.cfg.Listen, Handler: k.handler(), TLS: k.servingTLS(), BaseContext: k.ctx, Logger: k.log,
	})
	if err != nil {
		k.life.Kill()
		return fmt.Errorf("kubelet %s: listen on %s: %w", k.cfg.NodeName, k.cfg.Listen, err)
	}
	k.server = server
	if k.broadcaster != nil {
		k.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: k.client.CoreV1().Events("")})
	}
	k.rec.nodeEvent(v1.EventTypeNormal, eventStarting, "Starting kubelet.")
	if err := k.registerWithAPIServer(ctx); err != nil {
		k.life.Kill()
		return err
	}
	k.podInformer = newPodInformer(k.client, k.cfg.NodeName)
	k.podInformer.AddEventHandler(k.podEventHandler())

	k.life.Go(func() { k.services.Run(k.ctx.Done()) })
	k.life.Go(func() { k.podInformer.Run(k.ctx.Done()) })
	k.life.Go(func() {
		server.Serve(func(err error) {
			k.log.Error("https server failed", "err", err)
			k.life.Fail(fmt.Errorf("kubelet %s: serve: %w", k.cfg.NodeName, err))
		})
	})
	k.life.Go(k.leaseLoop)
	k.life.Go(k.nodeStatusLoop)
	k.life.Go(k.runtimeEventsLoop)
	k.life.Go(k.housekeepingLoop)
	k.life.Go(k.mirrors.run)
	k.log.Info("kubelet started", "listen", k.Addr(), "runtime", k.runtime.Name())
	return nil
}

// Stop stops the kubelet: no more syncs, probes or heartbeats. Pods keep
// running in the runtime, as they do when a real kubelet restarts; a new
// kubelet on the same runtime adopts them. It returns Err.
func (k *Kubelet) Stop() error { return k.life.Stop() }

// Kill stops the kubelet abruptly: connections are cut and nothing more
// is written to the API server.
func (k *Kubelet) Kill() { k.life.Kill() }

// Done is closed when the kubelet has stopped.
func (k *Kubelet) Done() <-chan struct{} { return k.life.Done() }

// Err reports why the kubelet stopped on its own (its HTTPS server
// failed), or nil.
func (k *Kubelet) Err() error { return k.life.Err() }

// shutdown stops the kubelet's loops and server, gracefully or not (its
// Lifecycle runs it once, also for a Start that failed part way).
func (k *Kubelet) shutdown(graceful bool) {
	k.cancel()
	if k.server != nil {
		k.server.Shutdown(graceful, 2*time.Second)
	}
	k.workers.wait()
	k.probes.stopAll()
	k.life.Wait()
	if k.broadcaster != nil {
		k.broadcaster.Shutdown()
	}
	if k.life.Started() {
		k.log.Info("kubelet stopped", "graceful", graceful)
	}
}

// Addr is the address the HTTPS server is bound to ("" before Start).
func (k *Kubelet) Addr() string {
	if k.server == nil {
		return ""
	}
	return k.server.Addr()
}

// port is the bound port, for daemonEndpoints.
func (k *Kubelet) port() int32 {
	_, p, err := net.SplitHostPort(k.Addr())
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return int32(n)
}

// nodeUID is the registered Node's UID ("" before registration).
func (k *Kubelet) nodeUID() types.UID {
	k.nodeMu.Lock()
	defer k.nodeMu.Unlock()
	if k.node == nil {
		return ""
	}
	return k.node.UID
}

// kickNodeStatus asks the status loop to look at the node status now.
func (k *Kubelet) kickNodeStatus() {
	select {
	case k.nodeKick <- struct{}{}:
	default:
	}
}

// scaled divides an upstream duration by the speed factor.
func (k *Kubelet) scaled(d time.Duration) time.Duration { return k.cfg.Speed.Scale(d) }

// sleep waits d or until the kubelet stops; it reports whether to go on.
func (k *Kubelet) sleep(d time.Duration) bool {
	t := k.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-k.ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
