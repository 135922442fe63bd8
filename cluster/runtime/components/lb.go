package components

import (
	"context"
	"log/slog"
	"sync"

	"github.com/klab-dev/klab/cluster/lb"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
)

// lbProcess is the load balancer.
type lbProcess struct {
	b      *lb.Balancer
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	err    error
}

// LB starts the load balancer in front of the API servers: it accepts on
// spec.Listen and forwards each connection to a backend whose /readyz,
// checked with the CA of spec.PKIDir, answers. It logs every change of a
// backend's health. It never stops by itself.
func LB(ctx context.Context, spec runtime.LBSpec, logger *slog.Logger) (Process, error) {
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
	logger.Info("load balancer serving", "listen", b.Addr(), "backends", spec.Backends)
	return &lbProcess{b: b, cancel: cancel, done: make(chan struct{})}, nil
}

func (p *lbProcess) Stop() error {
	p.once.Do(func() {
		p.cancel()
		p.err = p.b.Close()
		close(p.done)
	})
	return p.err
}

// Kill is Stop: the balancer holds no state that a graceful stop would
// save, and closing it cuts every proxied connection either way.
func (p *lbProcess) Kill()                 { p.Stop() }
func (p *lbProcess) Done() <-chan struct{} { return p.done }
func (p *lbProcess) Err() error            { return nil }
