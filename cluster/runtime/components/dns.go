package components

import (
	"context"
	"log/slog"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/dns"
	"github.com/klab-dev/klab/cluster/runtime"
)

// DNS starts the cluster DNS on node as the coredns service account. It
// returns once it answers from synced caches.
func DNS(ctx context.Context, node string, spec runtime.DNSSpec, dial DialFunc, logger *slog.Logger) (Process, error) {
	cfg, _, err := restConfig(spec.ClientSpec, auth.CoreDNS, dial)
	if err != nil {
		return nil, err
	}
	s, err := dns.New(dns.Config{
		REST: cfg, Identity: node, Listen: spec.Listen, HTTPListen: spec.MetricsListen, Domain: spec.Domain, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}
