package lessons

import (
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/klab-dev/klab/assets/i18n"
)

// NodesReadyCheck passes when at least Count nodes are Ready.
//
//	nodes-ready: {count: 6}
type NodesReadyCheck struct{ Count int }

// PodsRunningCheck passes when at least Count pods in Namespace that match
// Selector are Running (and not terminating), spread over at least MinNodes
// nodes, and, with OffMasters, none of them is on a master node.
//
//	pods-running: {selector: app=web, count: 3, minNodes: 2, offMasters: true}
type PodsRunningCheck struct {
	// Selector is a label selector as kubectl -l takes it.
	Selector  string
	Namespace string
	Count     int
	MinNodes  int
	// OffMasters requires that no matching pod runs on a master node:
	// what the control plane's NoSchedule taint is for.
	OffMasters bool
	selector   labels.Selector
}

// onMaster reports whether a node is a master: klab names its nodes
// master-N and worker-N (cluster/lab), whatever the runtime.
func onMaster(node string) bool { return strings.HasPrefix(node, "master-") }

// maxPods bounds a pods-running count: far more than a lab runs.
const maxPods = 10000

func (NodesReadyCheck) Kind() CheckKind  { return KindNodesReady }
func (PodsRunningCheck) Kind() CheckKind { return KindPodsRunning }

func (NodesReadyCheck) Needs() Needs  { return Needs{Nodes: true} }
func (PodsRunningCheck) Needs() Needs { return Needs{Pods: true} }

func (c NodesReadyCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.nodes-ready", c.Count)}
}

func (c PodsRunningCheck) Describe() []i18n.Message {
	var out []i18n.Message
	if c.MinNodes > 1 {
		out = append(out, i18n.M("lessons.want.pods-spread", c.Count, c.Selector, c.Namespace, c.MinNodes))
	} else {
		out = append(out, i18n.M("lessons.want.pods-running", c.Count, c.Selector, c.Namespace))
	}
	if c.OffMasters {
		out = append(out, i18n.M("lessons.want.pods-off-masters", c.Selector))
	}
	return out
}

func (c NodesReadyCheck) evaluate(_, now *world) Verdict {
	ready := 0
	for _, ok := range now.nodes {
		if ok {
			ready++
		}
	}
	msg := i18n.M("lessons.check.nodes-ready", ready, len(now.nodes))
	if ready >= c.Count {
		return pass(msg)
	}
	return wait(msg)
}

func (c PodsRunningCheck) evaluate(_, now *world) Verdict {
	running := 0
	nodes := map[string]bool{}
	var masters []string
	for _, p := range now.pods {
		if p.Namespace != c.Namespace || p.Terminating || !c.selector.Matches(labels.Set(p.Labels)) {
			continue
		}
		if c.OffMasters && onMaster(p.Node) {
			masters = append(masters, p.Name+"@"+p.Node)
		}
		if p.Phase != "Running" {
			continue
		}
		running++
		nodes[p.Node] = true
	}
	msg := i18n.M("lessons.check.pods-running", running, c.Count, c.Selector, len(nodes))
	if len(masters) > 0 {
		sort.Strings(masters)
		return wait(msg, i18n.M("lessons.check.pods-on-masters", strings.Join(masters, ", ")))
	}
	if running >= c.Count && len(nodes) >= c.MinNodes {
		return pass(msg)
	}
	return wait(msg)
}

func (d *decoder) nodesReady(n *yaml.Node, path string) Check {
	f := d.params(n, path, "count")
	if f == nil {
		return nil
	}
	return NodesReadyCheck{Count: f.integer("count", true, 1, 1, maxMasters+maxWorkers)}
}

func (d *decoder) podsRunning(n *yaml.Node, path string) Check {
	f := d.params(n, path, "selector", "namespace", "count", "minNodes", "offMasters")
	if f == nil {
		return nil
	}
	c := PodsRunningCheck{Namespace: "default", selector: labels.Everything()}
	sel, sn := f.str("selector", true)
	if sn != nil && strings.TrimSpace(sel) != "" {
		parsed, err := labels.Parse(sel)
		if err != nil {
			d.fail(sn, field(path, "selector"), i18n.M("lessons.err.bad-selector", sel, err.Error()))
		} else {
			c.Selector, c.selector = sel, parsed
		}
	}
	if ns, nn := f.str("namespace", false); nn != nil {
		if !validID(ns) {
			d.fail(nn, field(path, "namespace"), i18n.M("lessons.err.bad-id", ns))
		}
		c.Namespace = ns
	}
	c.Count = f.integer("count", true, 1, 1, maxPods)
	c.MinNodes = f.integer("minNodes", false, 1, 1, maxMasters+maxWorkers)
	c.OffMasters, _ = f.boolean("offMasters")
	if mn := f.get("minNodes"); mn != nil && c.MinNodes > c.Count {
		d.fail(mn, field(path, "minNodes"), i18n.M("lessons.err.min-max", "minNodes", "count"))
	}
	return c
}
