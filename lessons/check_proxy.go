package lessons

import (
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

// TrafficCheck passes when a traffic run (klab traffic) ended since the
// step began, and in the last one at least MinPods distinct pods answered
// and at most MaxFailed requests failed (MaxFailed < 0: no bound).
//
//	traffic: {minPods: 3, maxFailed: 0}
type TrafficCheck struct {
	MinPods, MaxFailed int
}

func (ProxyModeCheck) Kind() CheckKind { return KindProxyMode }
func (TrafficCheck) Kind() CheckKind   { return KindTraffic }

func (ProxyModeCheck) Needs() Needs { return Needs{Proxies: true} }
func (TrafficCheck) Needs() Needs   { return Needs{Traffic: true} }

func (c ProxyModeCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.proxy-mode", c.Mode)}
}

func (c TrafficCheck) Describe() []i18n.Message {
	out := []i18n.Message{i18n.M("lessons.want.traffic", c.MinPods)}
	if c.MaxFailed >= 0 {
		out = append(out, i18n.M("lessons.want.traffic-failures", c.MaxFailed))
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
	if len(pods) >= c.MinPods && (c.MaxFailed < 0 || t.Failed <= c.MaxFailed) {
		return pass(msg)
	}
	return wait(msg)
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
	f := d.params(n, path, "minPods", "maxFailed")
	if f == nil {
		return nil
	}
	return TrafficCheck{
		MinPods:   f.integer("minPods", false, 1, 1, maxPods),
		MaxFailed: f.integer("maxFailed", false, -1, 0, 1_000_000),
	}
}
