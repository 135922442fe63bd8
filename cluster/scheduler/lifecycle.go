package scheduler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// defaultDebugListen is used when Config.DebugListen is empty.
const defaultDebugListen = "127.0.0.1:0"

// Start binds the debug listener, starts the informers and the event
// recorder, and campaigns for the lease (or, without leader election,
// starts scheduling). It returns once the debug listener is bound; ctx
// only bounds the start.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	switch {
	case s.started:
		s.mu.Unlock()
		return fmt.Errorf("start kube-scheduler %s: already started", s.cfg.Identity)
	case s.stopping:
		s.mu.Unlock()
		return fmt.Errorf("start kube-scheduler %s: already stopped", s.cfg.Identity)
	}
	s.started = true
	s.mu.Unlock()

	addr := s.cfg.DebugListen
	if addr == "" {
		addr = defaultDebugListen
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		s.stop(false)
		return fmt.Errorf("start kube-scheduler %s: debug listener: %w", s.cfg.Identity, err)
	}
	s.listener = ln
	s.server = &http.Server{Handler: s.debugMux(), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("debug server failed", "err", err)
		}
	}()

	s.informerFactory.Start(s.ctx.Done())
	if err := s.broadcaster.StartRecordingToSinkWithContext(s.ctx); err != nil {
		s.stop(false)
		return fmt.Errorf("start kube-scheduler %s: event recorder: %w", s.cfg.Identity, err)
	}
	if s.leaderElection != nil {
		s.legacyBroadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")})
		s.leaderElection.running.Store(true)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runLeaderElection()
		}()
	} else {
		s.hub.publish(Event{Kind: EventLeader, Holder: s.identity, IsLeader: true})
		s.runScheduling(s.ctx)
	}
	s.log.Info("started", "debug", ln.Addr().String(), "leaderElection", s.leaderElection != nil)
	return nil
}

// Stop stops the scheduler gracefully: no new scheduling cycle starts,
// bindings in flight finish, then the lease is released (as upstream's
// kube-scheduler does on SIGTERM) and everything shuts down.
func (s *Scheduler) Stop() error {
	s.stop(true)
	return nil
}

// Kill stops everything at once, as kill -9 would: bindings in flight are
// abandoned, the lease is not released (a standby takes over once it
// expires) and nothing more is written. It waits for the scheduler's
// goroutines to end.
func (s *Scheduler) Kill() { s.stop(false) }

// Done is closed once the scheduler has stopped, for whatever reason.
func (s *Scheduler) Done() <-chan struct{} { return s.done }

// Err returns why the scheduler stopped by itself (errLeaderElectionLost
// when it lost its lease); nil while it runs and after Stop or Kill.
func (s *Scheduler) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Addr returns the debug listener's address, once started.
func (s *Scheduler) Addr() string {
	if s.listener == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// fail stops the scheduler because it cannot go on (it lost its lease),
// keeping err for Err.
func (s *Scheduler) fail(err error) {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return
	}
	s.err = err
	s.mu.Unlock()
	s.log.Error("stopping", "err", err)
	// fail runs on one of the goroutines stop waits for.
	go s.stop(false)
}

// stop shuts the scheduler down, gracefully or not, once; later calls wait
// for the first to finish.
func (s *Scheduler) stop(graceful bool) {
	s.shutdown.Do(func() {
		s.mu.Lock()
		s.stopping = true
		s.killed = !graceful
		started, schedCancel := s.started, s.schedCancel
		s.mu.Unlock()
		defer close(s.done)
		if !started {
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
			if graceful {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = s.server.Shutdown(ctx)
				cancel()
			}
			_ = s.server.Close()
		}
		s.wg.Wait()
		s.bindWG.Wait()
		s.bindCancel()
		s.broadcaster.Shutdown()
		if s.legacyBroadcaster != nil {
			s.legacyBroadcaster.Shutdown()
		}
		s.informerFactory.Shutdown()
		s.log.Info("stopped", "graceful", graceful)
	})
	<-s.done
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
	_, renew, _ := leaderElectionTimings(s.cfg.Speed)
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
