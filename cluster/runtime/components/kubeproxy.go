package components

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/timing"
	"github.com/klab-dev/klab/internal/netroute"
)

// KubeProxy starts a kube-proxy for node as system:kube-proxy. dial opens
// its connections, to the API server and to the endpoints it proxies to. It
// returns once its HTTP endpoint listens and it has programmed the rules
// of the mode the kube-system/kube-proxy ConfigMap names.
func KubeProxy(ctx context.Context, node string, spec runtime.KubeProxySpec, dial DialFunc, logger *slog.Logger) (Process, error) {
	cfg, _, err := restConfig(spec.ClientSpec, auth.KubeProxy, dial)
	if err != nil {
		return nil, err
	}
	nodeIP, err := netip.ParseAddr(spec.NodeIP)
	if err != nil {
		return nil, fmt.Errorf("kube-proxy spec: nodeIP: %w", err)
	}
	var podCIDR netip.Prefix
	if spec.PodCIDR != "" {
		if podCIDR, err = netip.ParsePrefix(spec.PodCIDR); err != nil {
			return nil, fmt.Errorf("kube-proxy spec: podCIDR: %w", err)
		}
	}
	serveClusterIPs := false
	if spec.ServiceCIDR != "" {
		serviceCIDR, err := netip.ParsePrefix(spec.ServiceCIDR)
		if err != nil {
			return nil, fmt.Errorf("kube-proxy spec: serviceCIDR: %w", err)
		}
		// Where a real kube-proxy writes DNAT rules for the range, klab's
		// makes it local and binds its addresses.
		if err := netroute.ReplaceLocal(serviceCIDR); err != nil {
			return nil, fmt.Errorf("kube-proxy: make the Service range reachable on the node: %w", err)
		}
		serveClusterIPs = true
	}
	p, err := proxy.New(proxy.Config{
		REST: cfg, NodeName: node, NodeIP: nodeIP, PodCIDR: podCIDR, Listen: spec.Listen,
		ServeClusterIPs: serveClusterIPs, Speed: timing.Speed(spec.Speed), Dial: dial, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}
