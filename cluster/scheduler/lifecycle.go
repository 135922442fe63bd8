package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"time"

	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

const (
	// defaultDebugListen is used when Config.DebugListen is empty.
	defaultDebugListen = "127.0.0.1:0"
	// shutdownGrace bounds how long Stop lets debug requests in flight
	// finish.
	shutdownGrace = 5 * time.Second
)

// Start binds the debug listener, starts the informers and the event
// recorder, and campaigns for the lease (or, without leader election,
// starts scheduling). It returns once the debug listener is bound; ctx
// only bounds the start.
func (s *Scheduler) Start(ctx context.Context) error {
	if err := s.life.Begin(); err != nil {
		return fmt.Errorf("start kube-scheduler %s: %w", s.cfg.Identity, err)
	}
	server, err := componentbase.Listen(ctx, componentbase.ServerConfig{
		Addr: cmp.Or(s.cfg.DebugListen, defaultDebugListen), Handler: s.debugMux(), Logger: s.log,
	})
	if err != nil {
		s.life.Kill()
		return fmt.Errorf("start kube-scheduler %s: debug listener: %w", s.cfg.Identity, err)
	}
	s.server = server
	s.life.Go(func() {
		server.Serve(func(err error) { s.log.Error("debug server failed", "err", err) })
	})

	s.informerFactory.Start(s.ctx.Done())
	if err := s.broadcaster.StartRecordingToSinkWithContext(s.ctx); err != nil {
		s.life.Kill()
		return fmt.Errorf("start kube-scheduler %s: event recorder: %w", s.cfg.Identity, err)
	}
	if s.leaderElection != nil {
		s.legacyBroadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")})
		s.leaderElection.running.Store(true)
		s.life.Go(s.runLeaderElection)
	} else {
		s.hub.Publish(Event{Kind: EventLeader, Holder: s.identity, IsLeader: true})
		s.runScheduling(s.ctx)
	}
	s.log.Info("started", "debug", server.Addr(), "leaderElection", s.leaderElection != nil)
	return nil
}

// Stop stops the scheduler gracefully: no new scheduling cycle starts,
// bindings in flight finish, then the lease is released (as upstream's
// kube-scheduler does on SIGTERM) and everything shuts down. It returns
// Err.
func (s *Scheduler) Stop() error { return s.life.Stop() }

// Kill stops everything at once, as kill -9 would: bindings in flight are
// abandoned, the lease is not released (a standby takes over once it
// expires) and nothing more is written. It waits for the scheduler's
// goroutines to end.
func (s *Scheduler) Kill() { s.life.Kill() }

// Done is closed once the scheduler has stopped, for whatever reason.
func (s *Scheduler) Done() <-chan struct{} { return s.life.Done() }

// Err returns why the scheduler stopped by itself (errLeaderElectionLost
// when it lost its lease); nil while it runs and after Stop or Kill.
func (s *Scheduler) Err() error { return s.life.Err() }

// Addr returns the debug listener's address, once started.
func (s *Scheduler) Addr() string {
	if s.server == nil {
		return ""
	}
	return s.server.Addr()
}

// shutdown stops the scheduler, gracefully or not (its Lifecycle runs it
// once).
func (s *Scheduler) shutdown(graceful bool) {
	s.mu.Lock()
	s.killed = !graceful
	schedCancel := s.schedCancel
	s.mu.Unlock()
	if !s.life.Started() {
		s.cancel()
		s.bindCancel()
		return
	}

	if graceful {
		if schedCancel != nil {
			schedCancel()
		}
		s.schedWG.Wait()
		s.waitForBindings()
	} else {
		if s.leaderElection != nil {
			s.leaderElection.lock.killed.Store(true)
		}
		s.bindCancel()
		if schedCancel != nil {
			schedCancel()
		}
	}
	// Only now, with no binding left in flight, may the lease go.
	if le := s.leaderElection; le != nil {
		le.cancel()
		if le.running.Load() {
			<-le.done
		}
	}
	s.cancel()
	s.queue.Close()
	if s.server != nil {
		s.server.Shutdown(graceful, shutdownGrace)
	}
	s.life.Wait()
	s.bindWG.Wait()
	s.bindCancel()
	s.broadcaster.Shutdown()
	if s.legacyBroadcaster != nil {
		s.legacyBroadcaster.Shutdown()
	}
	s.informerFactory.Shutdown()
	s.log.Info("stopped", "graceful", graceful)
}

// waitForBindings lets the bindings in flight finish, for as long as a
// leader may go without renewing its lease (the renew deadline); a binding
// still hanging then (the API server is unreachable) is cancelled.
func (s *Scheduler) waitForBindings() {
	done := make(chan struct{})
	go func() {
		s.bindWG.Wait()
		close(done)
	}()
	_, renew, _ := s.cfg.Speed.LeaderElection()
	t := time.NewTimer(renew)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("bindings still in flight after the renew deadline; cancelling them", "waited", renew)
		s.bindCancel()
		<-done
	}
}

// isKilled reports whether the scheduler was killed (and must write
// nothing more).
func (s *Scheduler) isKilled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killed
}
