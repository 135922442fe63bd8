package scheduler

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	sched "github.com/klab-dev/klab/cluster/scheduler"
	fwk "github.com/klab-dev/klab/cluster/scheduler/framework/runtime"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// The fixtures play a cluster of three tainted masters and three workers,
// as klab's default profile sees it.

var filterPlugins = []string{"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"}

// fixtureInfo is a cluster.json with a scheduler port on every master.
func fixtureInfo() *lab.Info {
	info := &lab.Info{Name: "demo", Runtime: "local"}
	for i := 1; i <= 3; i++ {
		info.Nodes = append(info.Nodes, runtime.Node{Name: fmt.Sprintf("master-%d", i), Role: runtime.RoleMaster, Index: i,
			Host: fmt.Sprintf("127.0.0.%d", 10+i), Ports: map[string]int{"scheduler": 10259}})
	}
	for i := 1; i <= 3; i++ {
		info.Nodes = append(info.Nodes, runtime.Node{Name: fmt.Sprintf("worker-%d", i), Role: runtime.RoleWorker, Index: i,
			Host: fmt.Sprintf("127.0.0.%d", 100+i), Ports: map[string]int{"kubelet": 10250}})
	}
	return info
}

// nodeFilter is what the filters said about one node: every plugin passed
// or skipped up to the one that rejected it (if any), which gives reason;
// the rest were not asked.
func nodeFilter(node, rejectedBy, reason string) sched.NodeFilter {
	nf := sched.NodeFilter{Node: node, Feasible: rejectedBy == ""}
	state := fwk.VerdictPassed
	for _, p := range filterPlugins {
		v := fwk.PluginVerdict{Plugin: p, Verdict: state}
		switch {
		case p == rejectedBy:
			v.Verdict, v.Code, v.Reasons = fwk.VerdictRejected, "UnschedulableAndUnresolvable", []string{reason}
			state = fwk.VerdictNotEvaluated
		case state == fwk.VerdictPassed && (p == "NodeAffinity" || p == "NodePorts" || p == "PodTopologySpread" || p == "InterPodAffinity"):
			v.Verdict = fwk.VerdictSkipped
		}
		nf.Plugins = append(nf.Plugins, v)
	}
	return nf
}

func score(node string, raw ...int64) fwk.NodePluginScores {
	plugins := []struct {
		name   string
		weight int64
	}{{"TaintToleration", 3}, {"NodeResourcesFit", 1}, {"PodTopologySpread", 2}, {"NodeResourcesBalancedAllocation", 1}, {"ImageLocality", 1}}
	ns := fwk.NodePluginScores{Node: node}
	for i, p := range plugins {
		norm := raw[2*i+1]
		ps := fwk.PluginScore{Plugin: p.name, Raw: raw[2*i], Normalized: norm, Weight: p.weight, Weighted: norm * p.weight}
		ns.Scores = append(ns.Scores, ps)
		ns.TotalScore += ps.Weighted
	}
	return ns
}

const taintReason = "node(s) had untolerated taint(s)"

// scheduledDecision: a web pod lands on worker-2, the best of three.
func scheduledDecision(name string, at time.Time) sched.Decision {
	d := sched.Decision{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Attempt: 1, Time: at,
		Cycle: 1240 * time.Microsecond, Result: sched.ResultScheduled, Node: "worker-2",
		NumNodes: 6, EvaluatedNodes: 6, FeasibleNodes: 3}
	for i := 1; i <= 3; i++ {
		d.Filter = append(d.Filter, nodeFilter(fmt.Sprintf("master-%d", i), "TaintToleration", taintReason))
		d.Filter = append(d.Filter, nodeFilter(fmt.Sprintf("worker-%d", i), "", ""))
	}
	for _, p := range []string{"TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality"} {
		v := fwk.PluginVerdict{Plugin: p, Verdict: fwk.VerdictPassed}
		if p == "NodeAffinity" || p == "InterPodAffinity" {
			v.Verdict = fwk.VerdictSkipped
		}
		d.PreScore = append(d.PreScore, v)
	}
	d.Scores = []fwk.NodePluginScores{
		score("worker-2", 0, 100, 88, 88, 0, 100, 96, 96, 0, 0),
		score("worker-3", 0, 100, 80, 80, 1, 50, 93, 93, 0, 0),
		score("worker-1", 0, 100, 75, 75, 1, 50, 90, 90, 0, 0),
	}
	return d
}

// pendingDecision: a pod asking for 4 CPUs fits nowhere.
func pendingDecision(at time.Time) sched.Decision {
	d := sched.Decision{Namespace: "default", Name: "big", UID: "uid-big", Attempt: 3, Time: at,
		Cycle: 610 * time.Microsecond, Result: sched.ResultUnschedulable,
		Message:  "0/6 nodes are available: 3 Insufficient cpu, 3 node(s) had untolerated taint(s).",
		NumNodes: 6, EvaluatedNodes: 6}
	for i := 1; i <= 3; i++ {
		d.Filter = append(d.Filter, nodeFilter(fmt.Sprintf("master-%d", i), "TaintToleration", taintReason))
		d.Filter = append(d.Filter, nodeFilter(fmt.Sprintf("worker-%d", i), "NodeResourcesFit", "Insufficient cpu"))
	}
	return d
}

// fixture names the states the view is drawn in.
type fixture func(v *View)

func connected(v *View) {
	v.started = true
	v.sources = schedulers(fixtureInfo())
	for _, s := range v.sources {
		v.apply(stateItem{Node: s.Node})
	}
	v.apply(eventItem{Node: "master-1", Event: sched.Event{Kind: sched.EventLeader, Time: uitest.Now.Add(-time.Minute), Holder: "master-1_6f1c", IsLeader: true}})
}

func decide(v *View, d sched.Decision) {
	v.apply(eventItem{Node: "master-1", Event: sched.Event{Kind: sched.EventDecision, Time: d.Time, Decision: &d}})
	if d.Result == sched.ResultScheduled {
		v.apply(eventItem{Node: "master-1", Event: sched.Event{Kind: sched.EventBind, Time: d.Time, Pod: d.Pod(), Node: d.Node}})
	}
}

var fixtures = map[string]fixture{
	"scheduled": func(v *View) {
		connected(v)
		decide(v, scheduledDecision("web-6d4cf56db6-9xk2p", uitest.Now.Add(-50*time.Second)))
		decide(v, pendingDecision(uitest.Now.Add(-20*time.Second)))
		decide(v, scheduledDecision("web-6d4cf56db6-x7k2p", uitest.Now.Add(-time.Second)))
	},
	"pending": func(v *View) {
		connected(v)
		decide(v, scheduledDecision("web-6d4cf56db6-9xk2p", uitest.Now.Add(-50*time.Second)))
		decide(v, pendingDecision(uitest.Now.Add(-time.Second)))
	},
	"waiting": connected,
	"unreachable": func(v *View) {
		v.started = true
		v.sources = schedulers(fixtureInfo())
		for _, s := range v.sources {
			v.apply(stateItem{Node: s.Node, Err: errors.New("dial tcp " + s.Node + ":10259: connect: connection refused")})
		}
	},
	"not-started": func(*View) {},
}
