package overview

import (
	"slices"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/kubestate"
	"github.com/klab-dev/klab/ui/labstate"
)

// node is everything the Overview says about one node, gathered from the
// three sources: cluster.json and the runtime (what klab made and whether
// it runs), the Observer (the etcd member) and the API server (what
// Kubernetes thinks of it).
type node struct {
	name   string
	master bool
	host   string
	cidr   string
	// member is the node's etcd member; masters only.
	member *labstate.Member
	// kube is the Node object; nil when there is no kube feed, or the
	// node has not registered (registered says which, once synced).
	kube       *kubestate.Node
	kubeNode   kubestate.Node
	registered bool
	synced     bool
	comps      []comp
	// proxy is the node's kube-proxy as its event stream tells.
	proxy    kubestate.Proxy
	hasProxy bool
	// wantMode is the mode the kube-proxy ConfigMap asks for.
	wantMode string
	pods     kubestate.PodCounts
	// sched and cm are set when the node holds the kube-scheduler or the
	// kube-controller-manager lease.
	sched, cm bool
}

// maxComps is the most components a node's key tells apart: a master's
// six and room for more.
const maxComps = 8

// comp is one component of a node and the state the runtime reports; ""
// when the runtime has not been asked.
type comp struct {
	name  string
	state runtime.State
}

// The components of each kind of node, in the order boxes list them: the
// order klab starts them.
var (
	masterComponents = []string{
		runtime.ComponentEtcd, runtime.ComponentAPIServer, runtime.ComponentScheduler,
		runtime.ComponentControllerManager, runtime.ComponentKubelet, runtime.ComponentKubeProxy,
	}
	workerComponents = []string{runtime.ComponentKubelet, runtime.ComponentKubeProxy}
)

// trouble reports whether something on the node is wrong: these nodes are
// shown first when not every node fits.
func (n *node) trouble() bool {
	if n.kube != nil && !n.kube.IsReady() || n.synced && !n.registered {
		return true
	}
	if n.member != nil && n.member.Health() != lab.HealthHealthy {
		return true
	}
	for _, c := range n.comps {
		if c.state != "" && c.state != runtime.StateRunning {
			return true
		}
	}
	if n.hasProxy && !n.proxy.Reachable {
		return true
	}
	return n.pods[kubestate.PodFailed]+n.pods[kubestate.PodUnknown] > 0
}

// gather builds the nodes to draw: those of cluster.json (the load
// balancer aside), then any other the API server or the Observer knows,
// masters first.
func (v *View) gather(info *lab.Info, st *labstate.State, ks *kubestate.State, comps []runtime.ComponentInfo) []node {
	byNode := v.byNode(comps)
	size := 0
	if info != nil {
		size = len(info.Nodes)
	}
	if ks != nil {
		size = max(size, len(ks.Nodes()))
	}
	out := v.nodes[:0]
	if cap(out) < size {
		out = make([]node, 0, size)
	}
	seen := make(map[string]bool, size)
	add := func(name string, master bool) *node {
		if seen[name] {
			return nil
		}
		seen[name] = true
		out = append(out, node{name: name, master: master})
		return &out[len(out)-1]
	}
	if info != nil {
		for _, rn := range info.Nodes {
			if rn.Role != runtime.RoleMaster && rn.Role != runtime.RoleWorker {
				continue
			}
			if n := add(rn.Name, rn.Role == runtime.RoleMaster); n != nil {
				n.host, n.cidr = rn.Host, rn.PodCIDR
			}
		}
	}
	if st != nil {
		for i := range st.Members {
			add(st.Members[i].Name, true)
		}
	}
	if ks != nil {
		for _, kn := range ks.Nodes() {
			add(kn.Name, kn.Role == runtime.RoleMaster)
		}
	}
	// Masters first, each kind in the order found (cluster.json lists
	// nodes by index).
	slices.SortStableFunc(out, func(a, b node) int {
		switch {
		case a.master == b.master:
			return 0
		case a.master:
			return -1
		}
		return 1
	})

	var schedHolder, cmHolder string
	synced := ks != nil && ks.Conn.Synced
	if ks != nil {
		schedHolder = ks.LeaseHolder(kubestate.LeaseScheduler)
		cmHolder = ks.LeaseHolder(kubestate.LeaseControllerManager)
	}
	for i := range out {
		n := &out[i]
		if st != nil {
			n.member = st.Member(n.name)
		}
		n.synced = synced
		if ks != nil {
			if kn, ok := ks.Node(n.name); ok {
				n.kubeNode, n.registered = kn, true
				n.kube = &n.kubeNode
				if n.host == "" {
					n.host = kn.InternalIP
				}
				if kn.PodCIDR != "" {
					n.cidr = kn.PodCIDR
				}
			}
			n.proxy, n.hasProxy = ks.Proxy(n.name)
			if ks.ProxyConfig.Exists && ks.ProxyConfig.Err == "" {
				n.wantMode = ks.ProxyConfig.Mode
			}
			n.pods = ks.Counts(n.name)
		}
		n.sched = schedHolder != "" && schedHolder == n.name
		n.cm = cmHolder != "" && cmHolder == n.name
		n.comps = componentsOf(n.master, byNode[n.name])
	}
	v.nodes = out
	return out
}

// componentsOf lists a node's components in the boxes' order: the
// expected ones (state unknown when the runtime did not report them),
// then any other the runtime reports.
func componentsOf(master bool, reported []comp) []comp {
	want := workerComponents
	if master {
		want = masterComponents
	}
	out := make([]comp, 0, len(want)+len(reported))
	for _, name := range want {
		c := comp{name: name}
		if i := slices.IndexFunc(reported, func(r comp) bool { return r.name == name }); i >= 0 {
			c.state = reported[i].state
		}
		out = append(out, c)
	}
	for _, r := range reported {
		if !slices.Contains(want, r.name) {
			out = append(out, r)
		}
	}
	return out
}

// byNode groups the runtime's report by node. Every frame draws the same
// report until the runtime answers again, so the grouping is kept for as
// long as the report is the same slice.
func (v *View) byNode(comps []runtime.ComponentInfo) map[string][]comp {
	same := len(comps) == len(v.comps.report) && (len(comps) == 0 || &comps[0] == &v.comps.report[0])
	if same && v.comps.byNode != nil {
		return v.comps.byNode
	}
	byNode := map[string][]comp{}
	for _, ci := range comps {
		byNode[ci.Ref.Node] = append(byNode[ci.Ref.Node], comp{name: ci.Ref.Component, state: ci.State})
	}
	v.comps.report, v.comps.byNode = comps, byNode
	return byNode
}
