package components

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/klab-dev/klab/cluster/lb"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
)

// LB starts the load balancer in front of the API servers: it accepts on
// spec.Listen and forwards each connection to a backend whose /readyz,
// checked with the CA of spec.PKIDir, answers. It logs every change of a
// backend's health. It never stops by itself.
func LB(ctx context.Context, spec runtime.LBSpec, logger *slog.Logger) (Process, error) {
	// The balancer only checks backends: of the PKI it reads ca.crt
	// alone, and holds no key or token.
	caPEM, err := os.ReadFile(filepath.Join(spec.PKIDir, pki.CACertFile))
	if err != nil {
		return nil, fmt.Errorf("load balancer: %w", err)
	}
	// The balancer lives until stopped, not until the start request ends.
	b, err := lb.Start(context.Background(), lb.Config{
		Listen:   spec.Listen,
		Backends: spec.Backends,
		Health:   lb.HTTPSHealth(caPEM),
		OnHealthChange: func(st lb.BackendStatus) {
			logger.Info("backend health", "backend", st.Backend, "healthy", st.Healthy, "error", st.LastError)
		},
	})
	if err != nil {
		return nil, err
	}
	logger.Info("load balancer serving", "listen", b.Addr(), "backends", spec.Backends)
	return b, nil
}
