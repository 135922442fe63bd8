package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/componentbase/apiclient"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

const (
	// componentName is the manager's user agent, the source of its own
	// events and the name of its Lease.
	componentName = "kube-controller-manager"
	// leaderHealthzTimeout is how long past its lease a leader may go
	// without renewing before /healthz fails (upstream's 20 s).
	leaderHealthzTimeout = 20 * time.Second
	// shutdownTimeout bounds a graceful stop of the debug server.
	shutdownTimeout = 5 * time.Second
)

// ErrLeaderElectionLost is the error of a manager that stopped because it
// could not renew its lease: another manager may be leading already, so it
// must not go on.
var ErrLeaderElectionLost = errors.New("leaderelection lost")

// Manager is one kube-controller-manager.
type Manager struct {
	cfg      Config
	enabled  []string
	identity string
	logger   *slog.Logger
	rest     *rest.Config
	client   kubernetes.Interface
	metadata metadata.Interface
	events   *eventstream.Hub[Event]
	watchdog *leaderelection.HealthzAdaptor
	life     *componentbase.Lifecycle

	broadcaster record.EventBroadcaster
	server      *componentbase.Server
	cancel      context.CancelFunc
	// electing says runElection runs; electionDone is closed once leader
	// election and the controllers have stopped.
	electing     bool
	electionDone chan struct{}

	mu      sync.Mutex
	leading bool
	// termStarted says a started-leading event awaits its
	// stopped-leading.
	termStarted bool
	holder      string
	running     map[string]controllerctx.Controller
	// electionOver and leaderWG make sure a leader term that client-go
	// starts just as the election ends is either waited for or not run.
	electionOver bool
	leaderWG     sync.WaitGroup
}

// New checks the configuration and builds the manager's clients. Nothing
// runs until Start.
func New(cfg Config) (*Manager, error) {
	if cfg.REST == nil {
		return nil, errors.New("controller manager: no REST config")
	}
	if cfg.Identity == "" {
		return nil, errors.New("controller manager: no identity (the node it runs on)")
	}
	enabled, err := enabledControllers(cfg.Controllers)
	if err != nil {
		return nil, fmt.Errorf("controller manager: %w", err)
	}
	restCfg := apiclient.Config(cfg.REST, clientDefaults)
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("controller manager: build client: %w", err)
	}
	md, err := metadata.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("controller manager: build metadata client: %w", err)
	}
	// A unique suffix, as upstream: two managers on one host must not
	// both believe they hold the lease.
	identity := cfg.Identity + "_" + string(uuid.NewUUID())
	m := &Manager{
		cfg:          cfg,
		enabled:      enabled,
		identity:     identity,
		logger:       componentbase.Logger(cfg.Logger).With("component", componentName, "identity", identity),
		rest:         restCfg,
		client:       client,
		metadata:     md,
		events:       eventstream.NewHub(eventRingSize, (*Event).Stamp),
		watchdog:     leaderelection.NewLeaderHealthzAdaptor(cfg.Speed.Scale(leaderHealthzTimeout)),
		electionDone: make(chan struct{}),
	}
	m.life = componentbase.NewLifecycle(m.shutdown)
	return m, nil
}

// Start binds the debug server and starts competing for the lease; it
// returns once the debug server listens. ctx bounds the start only: the
// manager runs until Stop or Kill, or until it loses its lease.
func (m *Manager) Start(ctx context.Context) error {
	if err := m.life.Begin(); err != nil {
		return fmt.Errorf("start controller manager: %w", err)
	}
	addr := cmp.Or(m.cfg.DebugListen, "127.0.0.1:0")
	server, err := componentbase.Listen(ctx, componentbase.ServerConfig{Addr: addr, Handler: m.debugHandler(), Logger: m.logger})
	if err != nil {
		m.life.Kill()
		return fmt.Errorf("controller manager: listen on %s: %w", addr, err)
	}
	m.server = server

	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.broadcaster = record.NewBroadcaster(record.WithContext(runCtx))
	m.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.client.CoreV1().Events("")})
	elector, err := m.newElector()
	if err != nil {
		m.life.Kill()
		return fmt.Errorf("controller manager: leader election: %w", err)
	}

	m.life.Go(func() {
		server.Serve(func(err error) { m.logger.Error("Debug server failed", "err", err) })
	})
	m.electing = true
	go m.runElection(runCtx, elector)
	m.logger.Info("Starting", "debug", server.Addr(), "controllers", m.enabled, "speed", m.cfg.Speed.Factor())
	return nil
}

// newElector configures leader election on the Lease
// kube-system/kube-controller-manager as upstream does, with the lab's
// timings.
func (m *Manager) newElector() (*leaderelection.LeaderElector, error) {
	lease, renew, retry := m.cfg.Speed.LeaderElection()
	// The lock's client times out after half the renew deadline, so that
	// one slow request cannot use the whole deadline.
	lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, metav1.NamespaceSystem, componentName,
		resourcelock.ResourceLockConfig{Identity: m.identity, EventRecorder: m.recorder(componentName)},
		m.rest, renew)
	if err != nil {
		return nil, err
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: lease,
		RenewDeadline: renew,
		RetryPeriod:   retry,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: m.onStartedLeading,
			OnStoppedLeading: m.onStoppedLeading,
			OnNewLeader:      m.onNewLeader,
		},
		WatchDog: m.watchdog,
		Name:     componentName,
		// Upstream's kube-controller-manager does not release its lease
		// when it stops (kubernetes/kubernetes#132599).
		ReleaseOnCancel: false,
	})
	if err != nil {
		return nil, err
	}
	m.watchdog.SetLeaderElection(elector)
	return elector, nil
}

// runElection competes for the lease until the manager stops or loses it.
func (m *Manager) runElection(ctx context.Context, elector *leaderelection.LeaderElector) {
	elector.Run(ctx) // returns when ctx ends or the lease could not be renewed
	m.mu.Lock()
	m.electionOver = true
	m.mu.Unlock()
	m.leaderWG.Wait()
	close(m.electionDone)
	if !m.life.Stopping() {
		// Upstream exits the process here (klog.FlushAndExit): a manager
		// that lost its lease must not go on acting.
		m.logger.Error("leaderelection lost")
		m.life.Fail(ErrLeaderElectionLost)
	}
}

// Addr returns the debug server's address ("127.0.0.1:port"), or "" before
// Start.
func (m *Manager) Addr() string {
	if m.server == nil {
		return ""
	}
	return m.server.Addr()
}

// Identity returns the manager's lease identity, "<node>_<uuid>".
func (m *Manager) Identity() string { return m.identity }

// Done is closed when the manager has stopped, for whatever reason.
func (m *Manager) Done() <-chan struct{} { return m.life.Done() }

// Err returns why the manager stopped on its own (ErrLeaderElectionLost,
// or a controller that failed to start); nil while it runs and after Stop
// or Kill.
func (m *Manager) Err() error { return m.life.Err() }

// Stop stops the controllers and the election, sends the events still
// queued and shuts the debug server down, then returns Err. As upstream's,
// the lease is not released: a successor takes over once it expires.
func (m *Manager) Stop() error { return m.life.Stop() }

// Kill stops the manager abruptly, as a crash would: the debug server's
// connections are cut and nothing more is sent. It returns once every
// goroutine of the manager has ended.
func (m *Manager) Kill() { m.life.Kill() }

// shutdown stops everything, gracefully or not (its Lifecycle runs it
// once, also for a Start that failed part way).
func (m *Manager) shutdown(graceful bool) {
	if m.cancel != nil {
		m.cancel()
	}
	if m.electing {
		<-m.electionDone
	}
	if graceful && m.broadcaster != nil {
		// Shutdown waits for the event broadcaster's queue to drain.
		m.broadcaster.Shutdown()
	}
	if m.server != nil {
		m.server.Shutdown(graceful, shutdownTimeout)
	}
	if !graceful && m.broadcaster != nil {
		m.broadcaster.Shutdown()
	}
	m.life.Wait()
	if m.life.Started() {
		m.logger.Info("Stopped")
	}
}

// recorder returns an event recorder whose events name component as their
// source.
func (m *Manager) recorder(component string) record.EventRecorder {
	return m.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
}
