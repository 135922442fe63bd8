package proxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// shutdownGrace bounds how long Stop lets debug requests in flight finish.
const shutdownGrace = 2 * time.Second

// Start binds the HTTP server, starts the informers and the event
// recorder, waits for the caches, reads the configuration, builds the
// mode and runs the first sync. It returns once all that is done, so a
// started proxy already forwards. ctx bounds the start only, as for the
// other components: the proxy runs until Stop or Kill.
func (p *Proxy) Start(ctx context.Context) error {
	if err := p.life.Begin(); err != nil {
		return fmt.Errorf("start kube-proxy %s: %w", p.cfg.NodeName, err)
	}
	if err := p.start(ctx); err != nil {
		p.life.Kill()
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

	server, err := componentbase.Listen(startCtx, componentbase.ServerConfig{
		Addr: p.cfg.Listen, Handler: p, BaseContext: p.ctx, Logger: p.log,
	})
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	p.mu.Lock()
	p.server = server
	p.mu.Unlock()
	if !p.life.Go(func() {
		server.Serve(func(err error) {
			p.log.Error("stopping", "err", err)
			p.life.Fail(fmt.Errorf("kube-proxy %s: HTTP server: %w", p.cfg.NodeName, err))
		})
	}) {
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

	if !p.life.Go(func() { p.runner.Loop(p.ctx.Done()) }) || !p.life.Go(p.configLoop) {
		return errors.New("stopped while starting")
	}
	return nil
}

// Stop stops the proxy: the listeners close, open connections through it
// are cut, the informers and the event recorder stop, and Done closes. The
// rules of the active mode stay, as a real kube-proxy leaves them when it
// exits. It returns Err.
func (p *Proxy) Stop() error { return p.life.Stop() }

// Kill stops the proxy at once, as kill -9 would; for a user-space data
// path that is what Stop does too, without waiting for debug requests.
func (p *Proxy) Kill() { p.life.Kill() }

// Done is closed once the proxy has stopped, for whatever reason.
func (p *Proxy) Done() <-chan struct{} { return p.life.Done() }

// Err returns why the proxy stopped by itself (its HTTP server failed);
// nil while it runs and after Stop or Kill.
func (p *Proxy) Err() error { return p.life.Err() }

// shutdown stops everything, gracefully or not (its Lifecycle runs it
// once).
func (p *Proxy) shutdown(graceful bool) {
	p.mu.Lock()
	server := p.server
	p.mu.Unlock()
	p.healthy.Store(false)
	// Cancelling ends the loops, the event streams, the informers and
	// every dial in flight.
	p.cancel()
	if server != nil {
		server.Shutdown(graceful, shutdownGrace)
	}
	p.nodePorts.closeAll()
	p.clusterIPs.closeAll()
	p.conns.closeAll()
	p.life.Wait()
	p.conns.wait()
	p.broadcaster.Shutdown()
	p.informerFactory.Shutdown()
	p.configInformerFactory.Shutdown()
	p.log.Info("stopped", "graceful", graceful)
}
