package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
)

// errLeaderElectionLost is Err after this scheduler lost its lease; upstream
// exits with "leaderelection lost" then.
var errLeaderElectionLost = errors.New("leaderelection lost")

// errKilled is what the lease lock answers once the scheduler is killed.
var errKilled = errors.New("scheduler killed")

// leaderElection runs client-go's leader election on the kube-scheduler
// Lease, as upstream's kube-scheduler configures it.
type leaderElection struct {
	elector *leaderelection.LeaderElector
	lock    *killableLock
	ctx     context.Context
	cancel  context.CancelFunc
	// running is set once the campaign goroutine starts; done is closed
	// when it ends.
	running atomic.Bool
	done    chan struct{}

	mu       sync.Mutex
	holder   string
	isLeader bool
}

// killableLock is the Lease lock, made to refuse every call once the
// scheduler is killed: with ReleaseOnCancel the elector would otherwise
// release the Lease on the way out, and a killed process writes nothing.
type killableLock struct {
	resourcelock.Interface
	killed atomic.Bool
}

func (l *killableLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if l.killed.Load() {
		return nil, nil, errKilled
	}
	return l.Interface.Get(ctx)
}

func (l *killableLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if l.killed.Load() {
		return errKilled
	}
	return l.Interface.Create(ctx, ler)
}

func (l *killableLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if l.killed.Load() {
		return errKilled
	}
	return l.Interface.Update(ctx, ler)
}

// newLeaderElection prepares the election on kube-system/kube-scheduler
// with the identity Identity_<uuid>, as upstream's hostname_<uuid>.
func (s *Scheduler) newLeaderElection(restCfg *rest.Config) (*leaderElection, error) {
	s.identity = s.cfg.Identity + "_" + string(uuid.NewUUID())
	lease, renew, retry := s.cfg.Speed.LeaderElection()

	// Upstream records "<identity> became leader" on the Lease with a
	// core/v1 event recorder.
	s.legacyBroadcaster = record.NewBroadcaster(record.WithContext(s.ctx))
	recorder := s.legacyBroadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: SchedulerName, Host: s.cfg.Identity})
	rl, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, LeaseNamespace, LeaseName,
		resourcelock.ResourceLockConfig{Identity: s.identity, EventRecorder: recorder}, restCfg, renew)
	if err != nil {
		return nil, fmt.Errorf("couldn't create resource lock: %w", err)
	}
	le := &leaderElection{lock: &killableLock{Interface: rl}, done: make(chan struct{})}
	le.ctx, le.cancel = context.WithCancel(s.ctx)
	le.elector, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          le.lock,
		LeaseDuration: lease,
		RenewDeadline: renew,
		RetryPeriod:   retry,
		Name:          LeaseName,
		// Upstream's kube-scheduler releases the Lease when it is asked
		// to stop, so that a standby takes over at once.
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				s.setLeading(true)
				s.runScheduling(ctx)
			},
			OnStoppedLeading: func() { s.setLeading(false) },
			OnNewLeader:      s.observeLeader,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("couldn't create leader elector: %w", err)
	}
	return le, nil
}

// runLeaderElection campaigns until the scheduler stops or loses the
// lease; losing it stops the scheduler with errLeaderElectionLost.
func (s *Scheduler) runLeaderElection() {
	le := s.leaderElection
	defer close(le.done)
	le.elector.Run(le.ctx)
	if le.ctx.Err() == nil {
		s.log.Error("stopping", "err", errLeaderElectionLost)
		s.life.Fail(errLeaderElectionLost)
	}
}

func (s *Scheduler) setLeading(leading bool) {
	le := s.leaderElection
	le.mu.Lock()
	le.isLeader = leading
	if leading {
		le.holder = s.identity
	}
	holder := le.holder
	le.mu.Unlock()
	if leading {
		s.log.Info("started leading", "lease", LeaseNamespace+"/"+LeaseName)
	} else {
		s.log.Info("stopped leading")
	}
	s.hub.Publish(Event{Kind: EventLeader, Holder: holder, IsLeader: leading})
}

func (s *Scheduler) observeLeader(identity string) {
	le := s.leaderElection
	le.mu.Lock()
	le.holder = identity
	leading := le.isLeader
	le.mu.Unlock()
	s.log.Info("new leader observed", "holder", identity)
	s.hub.Publish(Event{Kind: EventLeader, Holder: identity, IsLeader: leading && identity == s.identity})
}

// leader reports whether this scheduler leads and who holds the lease.
func (s *Scheduler) leader() (leading bool, holder string) {
	if s.leaderElection == nil {
		return true, s.identity
	}
	le := s.leaderElection
	le.mu.Lock()
	defer le.mu.Unlock()
	return le.isLeader, le.holder
}
