package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab/pki"
	"github.com/klab-dev/klab/cluster/lb"
	"github.com/klab-dev/klab/cluster/runtime"
)

// process is one running component: what a container's main process is in
// the Docker runtime.
type process interface {
	// Stop shuts it down gracefully; Kill at once.
	Stop() error
	Kill()
	// Pause freezes it; Resume thaws it.
	Pause() error
	Resume() error
	// Done is closed when it stops by itself; Err says why.
	Done() <-chan struct{}
	Err() error
}

// startProcess starts what spec describes, logging to logger.
func (r *Runtime) startProcess(ctx context.Context, spec runtime.ComponentSpec, logger *slog.Logger) (process, error) {
	switch {
	case spec.Etcd != nil:
		cfg := *spec.Etcd
		cfg.Logger = logger
		m, err := etcd.NewMember(cfg)
		if err != nil {
			return nil, err
		}
		if err := m.Start(ctx); err != nil {
			return nil, err
		}
		return etcdProcess{m}, nil
	case spec.APIServer != nil:
		return startAPIServer(ctx, spec.Ref, *spec.APIServer, logger)
	case spec.LB != nil:
		return startLB(ctx, *spec.LB, logger)
	case spec.Scheduler != nil:
		return r.startScheduler(ctx, spec.Ref, *spec.Scheduler, logger)
	case spec.ControllerManager != nil:
		return r.startControllerManager(ctx, spec.Ref, *spec.ControllerManager, logger)
	case spec.Kubelet != nil:
		return r.startKubelet(ctx, spec.Ref, *spec.Kubelet, logger)
	}
	return nil, fmt.Errorf("component %s has nothing to run", spec.Ref)
}

// etcdProcess adapts an etcd member.
type etcdProcess struct{ *etcd.Member }

func (p etcdProcess) Pause() error  { p.Member.Pause(); return nil }
func (p etcdProcess) Resume() error { p.Member.Resume(); return nil }

// apiServerProcess is an API server and its etcd client.
type apiServerProcess struct {
	srv *apiserver.Server
	cli *clientv3.Client
}

func startAPIServer(ctx context.Context, ref runtime.Ref, spec runtime.APIServerSpec, logger *slog.Logger) (process, error) {
	p, err := pki.Load(spec.PKIDir)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := p.ServerTLSConfig()
	if err != nil {
		return nil, err
	}
	authn, err := auth.LoadTokenFile(filepath.Join(spec.PKIDir, pki.TokenFile))
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   spec.EtcdEndpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	// Upstream gives the API server a client certificate in
	// system:masters for kubelets; klab uses the admin token.
	kubeletToken, _ := p.Token(auth.AdminUser)
	srv, err := apiserver.New(apiserver.Config{
		Name:             ref.Node,
		Etcd:             cli,
		Listen:           spec.Listen,
		TLS:              tlsCfg,
		Authenticator:    authn,
		Authorizer:       auth.NewAuthorizer(),
		AdvertiseAddress: spec.AdvertiseAddress,
		KubeletCA:        p.CertPool(),
		KubeletToken:     kubeletToken,
	})
	if err == nil {
		err = srv.Start(ctx)
	}
	if err != nil {
		cli.Close()
		return nil, err
	}
	logger.Info("api server serving", "listen", spec.Listen, "etcd", spec.EtcdEndpoints)
	return &apiServerProcess{srv: srv, cli: cli}, nil
}

func (p *apiServerProcess) Stop() error           { p.srv.Stop(); return p.cli.Close() }
func (p *apiServerProcess) Kill()                 { p.srv.Kill(); p.cli.Close() }
func (p *apiServerProcess) Pause() error          { p.srv.Pause(); return nil }
func (p *apiServerProcess) Resume() error         { p.srv.Resume(); return nil }
func (p *apiServerProcess) Done() <-chan struct{} { return p.srv.Done() }
func (p *apiServerProcess) Err() error            { return p.srv.Err() }

// lbProcess is the load balancer.
type lbProcess struct {
	b      *lb.Balancer
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func startLB(ctx context.Context, spec runtime.LBSpec, logger *slog.Logger) (process, error) {
	p, err := pki.Load(spec.PKIDir)
	if err != nil {
		return nil, err
	}
	// The balancer lives until stopped, not until the start request ends.
	runCtx, cancel := context.WithCancel(context.Background())
	b, err := lb.Start(runCtx, lb.Config{
		Listen:   spec.Listen,
		Backends: spec.Backends,
		Health:   lb.HTTPSHealth(p.CAPEM),
		OnHealthChange: func(st lb.BackendStatus) {
			logger.Info("backend health", "backend", st.Backend, "healthy", st.Healthy, "error", st.LastError)
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return &lbProcess{b: b, cancel: cancel, done: make(chan struct{})}, nil
}

func (p *lbProcess) Stop() error {
	var err error
	p.once.Do(func() {
		p.cancel()
		err = p.b.Close()
		close(p.done)
	})
	return err
}
func (p *lbProcess) Kill() { p.Stop() }
func (p *lbProcess) Pause() error {
	return errors.New("the load balancer cannot be paused in the local runtime; stop it instead")
}
func (p *lbProcess) Resume() error         { return nil }
func (p *lbProcess) Done() <-chan struct{} { return nil }
func (p *lbProcess) Err() error            { return nil }
