package lab

import (
	"slices"
	"strconv"
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
)

// TargetLeader names whichever member is the etcd leader at the moment of
// the call; "leader/<component>" names the node whose component leads:
// the etcd leader's member, or the scheduler or controller manager holding
// its Lease in kube-system.
const TargetLeader = "leader"

// leaderElected lists the components that elect one leader among the
// masters: etcd through Raft, the others through a Lease.
var leaderElected = []string{runtime.ComponentEtcd, runtime.ComponentScheduler, runtime.ComponentControllerManager}

// Target is what a chaos operation acts on: a whole node, or one component
// on it.
type Target struct {
	Node string `json:"node"`
	// Component is empty for the whole node.
	Component string `json:"component,omitempty"`
	// Leader is set when the target was given as "leader" or
	// "leader/<component>".
	Leader bool `json:"leader,omitempty"`
}

// String returns "master-2" for a node and "master-2/etcd" for a component.
func (t Target) String() string {
	if t.Component == "" {
		return t.Node
	}
	return t.Node + "/" + t.Component
}

// nodeComponents is what target resolution needs to know about a node.
type nodeComponents struct {
	Node       string
	Components []string
}

// topologyOf groups the refs by node, keeping their order.
func topologyOf(refs []runtime.Ref) []nodeComponents {
	var topo []nodeComponents
	index := map[string]int{}
	for _, r := range refs {
		i, ok := index[r.Node]
		if !ok {
			i = len(topo)
			index[r.Node] = i
			topo = append(topo, nodeComponents{Node: r.Node})
		}
		topo[i].Components = append(topo[i].Components, r.Component)
	}
	return topo
}

// validTargets lists every name a chaos target can take in the cluster, in
// the order a user would scan them: leader and the leaders of the
// components that elect one, then per node the node, its components, and
// the etcd-N shorthand.
func validTargets(topo []nodeComponents) []string {
	out := []string{TargetLeader}
	for _, c := range leaderElected {
		if c != runtime.ComponentEtcd && runsAnywhere(topo, c) {
			out = append(out, TargetLeader+"/"+c)
		}
	}
	for _, n := range topo {
		out = append(out, n.Node)
		for _, c := range n.Components {
			out = append(out, n.Node+"/"+c)
		}
		if short, ok := etcdShorthand(n); ok {
			out = append(out, short)
		}
	}
	return out
}

// etcdShorthand returns "etcd-N" for master-N when it runs etcd.
func etcdShorthand(n nodeComponents) (string, bool) {
	idx, ok := strings.CutPrefix(n.Node, runtime.RoleMaster+"-")
	if !ok {
		return "", false
	}
	for _, c := range n.Components {
		if c == runtime.ComponentEtcd {
			return runtime.ComponentEtcd + "-" + idx, true
		}
	}
	return "", false
}

// runsAnywhere reports whether some node runs component c.
func runsAnywhere(topo []nodeComponents, c string) bool {
	for _, n := range topo {
		if slices.Contains(n.Components, c) {
			return true
		}
	}
	return false
}

// resolveTarget turns a target as the user wrote it into a Target. leader is
// called only for "leader" (with etcd) and "leader/<component>", and
// returns the node whose component leads.
func resolveTarget(s string, topo []nodeComponents, leader func(component string) (string, error)) (Target, error) {
	s = strings.TrimSpace(s)
	given := s
	if s == TargetLeader {
		s = TargetLeader + "/" + runtime.ComponentEtcd
	}
	if comp, ok := strings.CutPrefix(s, TargetLeader+"/"); ok {
		if !slices.Contains(leaderElected, comp) || !runsAnywhere(topo, comp) {
			return Target{}, i18n.NewError("lab.err.unknown-target", given, strings.Join(validTargets(topo), ", "))
		}
		node, err := leader(comp)
		if err != nil {
			return Target{}, err
		}
		return Target{Node: node, Component: comp, Leader: true}, nil
	}
	// etcd-N is master-N/etcd, as in DESIGN's naming.
	if idx, ok := strings.CutPrefix(s, runtime.ComponentEtcd+"-"); ok {
		if _, err := strconv.Atoi(idx); err == nil {
			s = runtime.RoleMaster + "-" + idx + "/" + runtime.ComponentEtcd
		}
	}
	node, comp, hasComp := strings.Cut(s, "/")
	for _, n := range topo {
		if n.Node != node {
			continue
		}
		if !hasComp {
			return Target{Node: node}, nil
		}
		for _, c := range n.Components {
			if c == comp {
				return Target{Node: node, Component: comp}, nil
			}
		}
	}
	return Target{}, i18n.NewError("lab.err.unknown-target", given, strings.Join(validTargets(topo), ", "))
}

// refsOf returns the components a target covers: the one component, or
// every component of the node.
func refsOf(t Target, topo []nodeComponents) []runtime.Ref {
	if t.Component != "" {
		return []runtime.Ref{{Node: t.Node, Component: t.Component}}
	}
	var refs []runtime.Ref
	for _, n := range topo {
		if n.Node == t.Node {
			for _, c := range n.Components {
				refs = append(refs, runtime.Ref{Node: n.Node, Component: c})
			}
		}
	}
	return refs
}
