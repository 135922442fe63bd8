package lessons

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// ProxyModeCheck passes when every kube-proxy answers and runs in Mode:
// a change of mode (klab proxy mode) has reached every node.
//
//	proxy-mode: {mode: ipvs}
type ProxyModeCheck struct{ Mode string }

// ProxyServiceCheck passes when every kube-proxy answers and its last sync
// programmed the Service Namespace/Name with at least Endpoints ready
// endpoints, none of them a Pod that is gone or terminating (and, with
// ExternalLocal or InternalLocal, that traffic policy as Local): traffic
// sent now reaches them from any node. kube-proxy syncs at most once per
// minSyncPeriod, so a Service just created is not yet programmed
// everywhere, and a proxy that has not synced since a rollout replaced a
// pod still sends a share of the connections to the old one.
//
//	proxy-service: {name: web, endpoints: 3, externalLocal: true}
type ProxyServiceCheck struct {
	Namespace, Name              string
	Endpoints                    int
	ExternalLocal, InternalLocal bool
}

// TrafficCheck passes when a traffic run (klab traffic) ended since the
// step began, and in the last one at least MinPods distinct pods answered,
// at most MaxFailed requests failed (MaxFailed < 0: no bound) and at least
// MinFailed did. With Mode, every request must have gone through that
// proxy mode (the run came after a switch); with MaxNodes, the pods that
// answered ran on at most that many nodes.
//
//	traffic: {minPods: 3, maxFailed: 0, mode: ipvs}
type TrafficCheck struct {
	MinPods, MaxFailed, MinFailed, MaxNodes int
	Mode                                    string
}

func (ProxyModeCheck) Kind() CheckKind    { return KindProxyMode }
func (TrafficCheck) Kind() CheckKind      { return KindTraffic }
func (ProxyServiceCheck) Kind() CheckKind { return KindProxyService }

func (ProxyModeCheck) Needs() Needs    { return Needs{Proxies: true} }
func (TrafficCheck) Needs() Needs      { return Needs{Traffic: true} }
func (ProxyServiceCheck) Needs() Needs { return Needs{Proxies: true, Pods: true} }

func (c ProxyServiceCheck) Describe() []i18n.Message {
	out := []i18n.Message{i18n.M("lessons.want.proxy-service", c.Namespace+"/"+c.Name, c.Endpoints)}
	if c.ExternalLocal {
		out = append(out, i18n.M("lessons.want.proxy-service-local", "externalTrafficPolicy"))
	}
	if c.InternalLocal {
		out = append(out, i18n.M("lessons.want.proxy-service-local", "internalTrafficPolicy"))
	}
	return out
}

func (c ProxyModeCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.proxy-mode", c.Mode)}
}

func (c TrafficCheck) Describe() []i18n.Message {
	out := []i18n.Message{i18n.M("lessons.want.traffic", c.MinPods)}
	if c.MaxFailed >= 0 {
		out = append(out, i18n.M("lessons.want.traffic-failures", c.MaxFailed))
	}
	if c.MinFailed > 0 {
		out = append(out, i18n.M("lessons.want.traffic-min-failed", c.MinFailed))
	}
	if c.Mode != "" {
		out = append(out, i18n.M("lessons.want.traffic-mode", c.Mode))
	}
	if c.MaxNodes > 0 {
		out = append(out, i18n.M("lessons.want.traffic-nodes", c.MaxNodes))
	}
	return out
}

func (c ProxyModeCheck) evaluate(_, now *world) Verdict {
	nodes := make([]string, 0, len(now.proxies))
	for n := range now.proxies {
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return wait(i18n.M("lessons.check.proxy-unseen"))
	}
	sortStrings(nodes)
	var others []string
	for _, n := range nodes {
		p := now.proxies[n]
		switch {
		case p.Unreachable:
			others = append(others, n+": ?")
		case p.Mode != c.Mode:
			others = append(others, n+": "+p.Mode)
		}
	}
	if len(others) > 0 {
		return wait(i18n.M("lessons.check.proxy-others", len(nodes)-len(others), len(nodes), c.Mode, strings.Join(others, ", ")))
	}
	return pass(i18n.M("lessons.check.proxy-all", len(nodes), c.Mode))
}

func (c TrafficCheck) evaluate(_, now *world) Verdict {
	t := now.traffic
	if t == nil {
		return wait(i18n.M("lessons.check.traffic-none"))
	}
	pods := make([]string, 0, len(t.Pods))
	for p, n := range t.Pods {
		if n > 0 {
			pods = append(pods, p)
		}
	}
	sortStrings(pods)
	msg := i18n.M("lessons.check.traffic", t.Requests, t.Failed, len(pods), strings.Join(pods, ", "))
	ok := len(pods) >= c.MinPods && (c.MaxFailed < 0 || t.Failed <= c.MaxFailed) && t.Failed >= c.MinFailed
	reasons := []i18n.Message{msg}
	if c.Mode != "" && t.Modes[c.Mode] != t.Requests {
		ok = false
		modes := make([]string, 0, len(t.Modes))
		for m, n := range t.Modes {
			modes = append(modes, fmt.Sprintf("%s %d", m, n))
		}
		sortStrings(modes)
		reasons = append(reasons, i18n.M("lessons.check.traffic-mode", c.Mode, strings.Join(modes, ", ")))
	}
	if c.MaxNodes > 0 {
		nodes := make([]string, 0, len(t.Nodes))
		for n, k := range t.Nodes {
			if k > 0 {
				nodes = append(nodes, n)
			}
		}
		sortStrings(nodes)
		if len(nodes) > c.MaxNodes {
			ok = false
		}
		reasons = append(reasons, i18n.M("lessons.check.traffic-nodes", len(nodes), strings.Join(nodes, ", ")))
	}
	if ok {
		return pass(reasons...)
	}
	return wait(reasons...)
}

func (c ProxyServiceCheck) evaluate(_, now *world) Verdict {
	if len(now.proxies) == 0 {
		return wait(i18n.M("lessons.check.proxy-unseen"))
	}
	nodes := make([]string, 0, len(now.proxies))
	for n := range now.proxies {
		nodes = append(nodes, n)
	}
	sortStrings(nodes)
	key := c.Namespace + "/" + c.Name
	var others []string
	for _, n := range nodes {
		p := now.proxies[n]
		s, programmed := p.Services[key]
		var gone []string
		for _, pod := range s.Pods {
			if o, ok := now.pods[c.Namespace+"/"+pod]; !ok || o.Terminating {
				gone = append(gone, pod)
			}
		}
		switch {
		case p.Unreachable:
			others = append(others, n+": ?")
		case !programmed:
			others = append(others, n+": -")
		case len(gone) > 0:
			others = append(others, fmt.Sprintf("%s: %d [%s]", n, s.Endpoints, strings.Join(gone, " ")))
		case s.Endpoints < c.Endpoints:
			others = append(others, fmt.Sprintf("%s: %d", n, s.Endpoints))
		case c.ExternalLocal && !s.ExternalLocal:
			others = append(others, n+": externalTrafficPolicy Cluster")
		case c.InternalLocal && !s.InternalLocal:
			others = append(others, n+": internalTrafficPolicy Cluster")
		}
	}
	if len(others) > 0 {
		return wait(i18n.M("lessons.check.proxy-service-others", len(nodes)-len(others), len(nodes), key, c.Endpoints, strings.Join(others, ", ")))
	}
	return pass(i18n.M("lessons.check.proxy-service-all", len(nodes), key, c.Endpoints))
}

func (d *decoder) proxyMode(n *yaml.Node, path string) Check {
	f := d.params(n, path, "mode")
	if f == nil {
		return nil
	}
	mode, mn := f.str("mode", true)
	if mn != nil && mode != "" && !contains(proxier.ModeNames, mode) {
		d.fail(mn, field(path, "mode"), i18n.M("lessons.err.bad-choice", mode, strings.Join(proxier.ModeNames, ", ")))
	}
	return ProxyModeCheck{Mode: mode}
}

func (d *decoder) traffic(n *yaml.Node, path string) Check {
	f := d.params(n, path, "minPods", "maxFailed", "minFailed", "maxNodes", "mode")
	if f == nil {
		return nil
	}
	c := TrafficCheck{
		MinPods:   f.integer("minPods", false, 1, 1, maxPods),
		MaxFailed: f.integer("maxFailed", false, -1, 0, 1_000_000),
		MinFailed: f.integer("minFailed", false, 0, 1, 1_000_000),
		MaxNodes:  f.integer("maxNodes", false, 0, 1, maxPods),
	}
	c.Mode = d.modeName(f, path)
	return c
}

// modeName reads an optional kube-proxy mode.
func (d *decoder) modeName(f *fields, path string) string {
	mode, mn := f.str("mode", false)
	if mn != nil && mode != "" && !contains(proxier.ModeNames, mode) {
		d.fail(mn, field(path, "mode"), i18n.M("lessons.err.bad-choice", mode, strings.Join(proxier.ModeNames, ", ")))
	}
	return mode
}

func (d *decoder) proxyService(n *yaml.Node, path string) Check {
	f := d.params(n, path, "name", "namespace", "endpoints", "externalLocal", "internalLocal")
	if f == nil {
		return nil
	}
	name, _ := f.str("name", true)
	namespace, _ := f.str("namespace", false)
	if namespace == "" {
		namespace = "default"
	}
	c := ProxyServiceCheck{Namespace: namespace, Name: name, Endpoints: f.integer("endpoints", false, 1, 0, maxPods)}
	c.ExternalLocal, _ = f.boolean("externalLocal")
	c.InternalLocal, _ = f.boolean("internalLocal")
	return c
}
