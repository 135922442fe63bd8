package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
)

// shutdownGrace bounds how long Stop lets debug requests in flight finish.
const shutdownGrace = 2 * time.Second

// Start binds the HTTP server, starts the informers and the event
// recorder, waits for the caches, reads the configuration, builds the
// mode and runs the first sync. It returns once all that is done, so a
// started proxy already forwards. ctx bounds the start only, as for the
// other components: the proxy runs until Stop or Kill.
func (p *Proxy) Start(ctx context.Context) error {
	p.mu.Lock()
	switch {
	case p.started:
		p.mu.Unlock()
		return fmt.Errorf("start kube-proxy %s: already started", p.cfg.NodeName)
	case p.stopping:
		p.mu.Unlock()
		return fmt.Errorf("start kube-proxy %s: already stopped", p.cfg.NodeName)
	}
	p.started = true
	p.mu.Unlock()

	if err := p.start(ctx); err != nil {
		p.stop(false)
		return fmt.Errorf("start kube-proxy %s: %w", p.cfg.NodeName, err)
	}
	p.log.Info("started", "listen", p.Addr(), "mode", p.current().mode.Name())
	return nil
}

func (p *Proxy) start(ctx context.Context) error {
	// Start may be cut short by its own ctx or by Stop.
	startCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()

	var lc net.ListenConfig
	ln, err := lc.Listen(startCtx, "tcp", p.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	server := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return p.ctx }}
	p.mu.Lock()
	p.listener, p.server = ln, server
	p.mu.Unlock()
	if !p.spawn(func() {
		if err := server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.fail(fmt.Errorf("kube-proxy %s: HTTP server: %w", p.cfg.NodeName, err))
		}
	}) {
		ln.Close()
		return errors.New("stopped while starting")
	}

	if err := p.broadcaster.StartRecordingToSinkWithContext(p.ctx); err != nil {
		return fmt.Errorf("event recorder: %w", err)
	}
	p.informerFactory.Start(p.ctx.Done())
	p.configInformerFactory.Start(p.ctx.Done())
	if !toolscache.WaitForCacheSync(startCtx.Done(), p.informersSynced...) {
		return fmt.Errorf("informer caches did not sync: %w", context.Cause(startCtx))
	}

	p.syncMu.Lock()
	p.loadInitialConfig()
	p.syncMu.Unlock()
	p.syncProxyRules()
	p.healthy.Store(true)
	p.recorder.Eventf(p.nodeRef, nil, eventTypeNormal, ReasonStarting, actionStart, "")

	if !p.spawn(func() { p.runner.Loop(p.ctx.Done()) }) || !p.spawn(p.configLoop) {
		return errors.New("stopped while starting")
	}
	return nil
}

// Stop stops the proxy: the listeners close, open connections through it
// are cut, the informers and the event recorder stop, and Done closes. The
// rules of the active mode stay, as a real kube-proxy leaves them when it
// exits.
func (p *Proxy) Stop() error {
	p.clearErr()
	p.stop(true)
	return nil
}

// Kill stops the proxy at once, as kill -9 would; for a user-space data
// path that is what Stop does too, without waiting for debug requests.
func (p *Proxy) Kill() {
	p.clearErr()
	p.stop(false)
}

// Done is closed once the proxy has stopped, for whatever reason.
func (p *Proxy) Done() <-chan struct{} { return p.done }

// Err returns why the proxy stopped by itself (its HTTP server failed, or
// the context given to Start ended); nil while it runs and after Stop or
// Kill.
func (p *Proxy) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// clearErr forgets a failure when the owner stops the proxy first.
func (p *Proxy) clearErr() {
	p.mu.Lock()
	if !p.stopping {
		p.err = nil
	}
	p.mu.Unlock()
}

// spawn runs fn on a goroutine Stop waits for, unless the proxy is
// stopping.
func (p *Proxy) spawn(fn func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return false
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		fn()
	}()
	return true
}

// fail stops the proxy because it cannot go on, keeping err for Err.
func (p *Proxy) fail(err error) {
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		return
	}
	p.err = err
	p.mu.Unlock()
	p.log.Error("stopping", "err", err)
	// fail runs on one of the goroutines stop waits for.
	go p.stop(false)
}

// stop shuts everything down once; later calls wait for the first.
func (p *Proxy) stop(graceful bool) {
	p.shutdown.Do(func() {
		p.mu.Lock()
		p.stopping = true
		server := p.server
		p.mu.Unlock()
		defer close(p.done)
		p.healthy.Store(false)
		// Cancelling ends the loops, the event streams, the informers
		// and every dial in flight.
		p.cancel()
		if server != nil {
			if graceful {
				ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
				_ = server.Shutdown(ctx)
				cancel()
			}
			_ = server.Close()
		}
		p.nodePorts.closeAll()
		p.conns.closeAll()
		p.wg.Wait()
		p.conns.wait()
		p.broadcaster.Shutdown()
		p.informerFactory.Shutdown()
		p.configInformerFactory.Shutdown()
		p.log.Info("stopped", "graceful", graceful)
	})
	<-p.done
}
