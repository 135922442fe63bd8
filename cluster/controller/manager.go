package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
	"github.com/klab-dev/klab/cluster/timing"
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
	events   *eventHub
	watchdog *leaderelection.HealthzAdaptor

	broadcaster record.EventBroadcaster
	ln          net.Listener
	srv         *http.Server
	cancel      context.CancelFunc

	// quit closes when the manager starts stopping (the event streams
	// end); electionDone when leader election and the controllers have
	// stopped; serveDone when the debug server has; done when all is over.
	quit         chan struct{}
	electionDone chan struct{}
	serveDone    chan struct{}
	done         chan struct{}
	finishOnce   sync.Once

	mu       sync.Mutex
	started  bool
	stopping bool
	err      error
	leading  bool
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
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	restCfg := rest.CopyConfig(cfg.REST)
	if restCfg.QPS == 0 {
		restCfg.QPS = defaultQPS
	}
	if restCfg.Burst == 0 {
		restCfg.Burst = defaultBurst
	}
	if restCfg.UserAgent == "" {
		restCfg.UserAgent = componentName
	}
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
	return &Manager{
		cfg:          cfg,
		enabled:      enabled,
		identity:     identity,
		logger:       logger.With("component", componentName, "identity", identity),
		rest:         restCfg,
		client:       client,
		metadata:     md,
		events:       newEventHub(),
		watchdog:     leaderelection.NewLeaderHealthzAdaptor(cfg.Speed.Scale(leaderHealthzTimeout)),
		quit:         make(chan struct{}),
		electionDone: make(chan struct{}),
		serveDone:    make(chan struct{}),
		done:         make(chan struct{}),
	}, nil
}

// Start binds the debug server and starts competing for the lease; it
// returns once the debug server listens. ctx bounds the start only: the
// manager runs until Stop or Kill, or until it loses its lease.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return errors.New("controller manager already started")
	}
	m.started = true
	m.mu.Unlock()

	addr := m.cfg.DebugListen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		m.abort()
		return fmt.Errorf("controller manager: listen on %s: %w", addr, err)
	}
	m.ln = ln

	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.broadcaster = record.NewBroadcaster(record.WithContext(runCtx))
	m.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.client.CoreV1().Events("")})
	elector, err := m.newElector()
	if err != nil {
		cancel()
		m.broadcaster.Shutdown()
		ln.Close()
		m.abort()
		return fmt.Errorf("controller manager: leader election: %w", err)
	}

	m.srv = &http.Server{Handler: m.debugHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(m.serveDone)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.logger.Error("Debug server failed", "err", err)
		}
	}()
	go m.runElection(runCtx, elector)
	m.logger.Info("Starting", "debug", ln.Addr().String(), "controllers", m.enabled, "speed", m.cfg.Speed.Factor())
	return nil
}

// newElector configures leader election on the Lease
// kube-system/kube-controller-manager as upstream does, with the lab's
// timings.
func (m *Manager) newElector() (*leaderelection.LeaderElector, error) {
	lease, renew, retry := leaderElectionTimings(m.cfg.Speed)
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

// leaderElectionTimings are upstream's lease duration, renew deadline and
// retry period divided by the speed, but never a lease shorter than a
// second: a Lease stores its duration in whole seconds, and a shorter one
// would be stored as 0. Above speed 15 all three stay in upstream's
// proportions (15:10:2) around a one-second lease.
func leaderElectionTimings(speed timing.Speed) (lease, renew, retry time.Duration) {
	lease = speed.Scale(timing.LeaseDuration)
	renew = speed.Scale(timing.RenewDeadline)
	retry = speed.Scale(timing.RetryPeriod)
	if lease < time.Second {
		stretch := float64(time.Second) / float64(lease)
		lease = time.Second
		renew = time.Duration(float64(renew) * stretch)
		retry = time.Duration(float64(retry) * stretch)
	}
	return lease, renew, retry
}

// abort marks a manager whose Start failed as done.
func (m *Manager) abort() {
	m.finishOnce.Do(func() {
		close(m.quit)
		close(m.done)
	})
}

// runElection competes for the lease until the manager stops or loses it.
func (m *Manager) runElection(ctx context.Context, elector *leaderelection.LeaderElector) {
	elector.Run(ctx) // returns when ctx ends or the lease could not be renewed
	m.mu.Lock()
	m.electionOver = true
	lost := !m.stopping
	m.mu.Unlock()
	m.leaderWG.Wait()
	close(m.electionDone)
	if lost {
		// Upstream exits the process here (klog.FlushAndExit): a manager
		// that lost its lease must not go on acting.
		m.logger.Error("leaderelection lost")
		go m.finish(true, ErrLeaderElectionLost)
	}
}

// Addr returns the debug server's address ("127.0.0.1:port"), or "" before
// Start.
func (m *Manager) Addr() string {
	if m.ln == nil {
		return ""
	}
	return m.ln.Addr().String()
}

// Identity returns the manager's lease identity, "<node>_<uuid>".
func (m *Manager) Identity() string { return m.identity }

// Done is closed when the manager has stopped, for whatever reason.
func (m *Manager) Done() <-chan struct{} { return m.done }

// Err returns why the manager stopped on its own (ErrLeaderElectionLost,
// or a controller that failed to start); nil while it runs and after Stop
// or Kill.
func (m *Manager) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Stop stops the controllers and the election, sends the events still
// queued and shuts the debug server down, then returns Err. As upstream's,
// the lease is not released: a successor takes over once it expires.
func (m *Manager) Stop() error {
	m.finish(true, nil)
	<-m.done
	return m.Err()
}

// Kill stops the manager abruptly, as a crash would: the debug server's
// connections are cut and nothing more is sent. It returns once every
// goroutine of the manager has ended.
func (m *Manager) Kill() {
	m.finish(false, nil)
	<-m.done
}

// finish stops everything once; err, if set, is why.
func (m *Manager) finish(graceful bool, err error) {
	m.finishOnce.Do(func() {
		m.mu.Lock()
		m.stopping = true
		if err != nil {
			m.err = err
		}
		started := m.started
		m.mu.Unlock()
		close(m.quit)
		if !started {
			close(m.done)
			return
		}
		m.cancel()
		<-m.electionDone
		if graceful {
			// Shutdown waits for the event broadcaster's queue to drain.
			m.broadcaster.Shutdown()
			ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			if err := m.srv.Shutdown(ctx); err != nil {
				m.srv.Close()
			}
			cancel()
		} else {
			m.srv.Close()
			m.broadcaster.Shutdown()
		}
		<-m.serveDone
		m.logger.Info("Stopped")
		close(m.done)
	})
}

// recorder returns an event recorder whose events name component as their
// source.
func (m *Manager) recorder(component string) record.EventRecorder {
	return m.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
}
