package proxy

import (
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// current returns the running generation.
func (p *Proxy) current() *generation {
	p.modeMu.RLock()
	defer p.modeMu.RUnlock()
	return p.gen
}

// acquire returns the running generation, registered as picking from it;
// the caller calls selecting.Done once the mode has answered.
func (p *Proxy) acquire() *generation {
	p.modeMu.RLock()
	defer p.modeMu.RUnlock()
	p.gen.selecting.Add(1)
	return p.gen
}

// syncProxyRules is the runner's function, upstream's syncProxyRules: it
// rebuilds the running mode's state from the informers' caches.
func (p *Proxy) syncProxyRules() {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	if p.ctx.Err() != nil {
		return
	}
	g := p.current()
	snap := p.buildSnapshot()
	result := g.mode.Sync(snap)
	p.afterSync(g, snap, result)
}

// buildSnapshot lists what the informers hold. The objects are the
// cache's own: BuildSnapshot only reads them.
func (p *Proxy) buildSnapshot() *proxier.Snapshot {
	services, _ := p.serviceLister.List(labels.Everything())
	slices, _ := p.sliceLister.List(labels.Everything())
	snap := proxier.BuildSnapshot(p.cfg.NodeName, services, slices)
	for _, err := range snap.Skipped {
		p.log.Debug("skipped in snapshot", "err", err)
	}
	return snap
}

// afterSync publishes what a sync of g built: the routes of the data path,
// the NodePort listeners, the status and a sync event. syncMu is held.
func (p *Proxy) afterSync(g *generation, snap *proxier.Snapshot, result proxier.SyncResult) {
	routes := newRouteTable(snap)
	p.routes.Store(routes)
	p.nodePorts.reconcile(routes)
	p.clusterIPs.reconcile(routes)

	endpoints := 0
	for _, eps := range snap.Endpoints {
		endpoints += len(eps)
	}
	p.statusMu.Lock()
	p.state.syncs++
	p.state.lastSync = SyncInfo{At: time.Now(), Duration: result.Duration, Rules: result.Rules}
	p.state.servicePorts = len(snap.Services)
	p.state.endpoints = endpoints
	p.state.snapshot = snap
	p.statusMu.Unlock()
	p.hub.Publish(Event{Kind: EventSync, Mode: g.mode.Name(), Duration: result.Duration, Rules: result.Rules})
}

// routeTable maps the addresses the data path accepts to service ports:
// ClusterIP:port and NodePort for TCP, and ClusterIP:port for UDP, which
// only the ClusterIP listeners carry.
type routeTable struct {
	byClusterIP    map[netip.AddrPort]proxier.ServicePortName
	byClusterIPUDP map[netip.AddrPort]proxier.ServicePortName
	// udpServing holds, per UDP ClusterIP:port, the endpoints ("ip:port")
	// that may keep their flows: those ready or serving.
	udpServing map[netip.AddrPort]map[string]bool
	byNodePort map[int]proxier.ServicePortName
}

func newRouteTable(snap *proxier.Snapshot) *routeTable {
	rt := &routeTable{
		byClusterIP:    make(map[netip.AddrPort]proxier.ServicePortName),
		byClusterIPUDP: make(map[netip.AddrPort]proxier.ServicePortName),
		udpServing:     make(map[netip.AddrPort]map[string]bool),
		byNodePort:     make(map[int]proxier.ServicePortName),
	}
	for name, info := range snap.Services {
		if name.Protocol == corev1.ProtocolUDP && info.ClusterIP.IsValid() {
			a := netip.AddrPortFrom(info.ClusterIP, uint16(info.Port))
			rt.byClusterIPUDP[a] = name
			serving := map[string]bool{}
			for _, ep := range snap.Endpoints[name] {
				if ep.Ready || ep.Serving {
					serving[ep.String()] = true
				}
			}
			rt.udpServing[a] = serving
		}
		if name.Protocol != corev1.ProtocolTCP {
			continue
		}
		rt.byClusterIP[netip.AddrPortFrom(info.ClusterIP, uint16(info.Port))] = name
		if info.NodePort != 0 {
			rt.byNodePort[info.NodePort] = name
		}
	}
	return rt
}
