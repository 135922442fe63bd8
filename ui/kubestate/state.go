// Package kubestate folds what the Kubernetes API server says about a lab
// into the picture the TUI draws: the nodes and whether they are Ready, the
// pods and where they run, who holds the kube-scheduler and
// kube-controller-manager leases, and which mode each node's kube-proxy
// runs in.
//
// State is a plain value changed only by Apply (and the setters Apply
// uses), from the UI's Update loop, so views are pure functions of it and
// tests build one by hand. The feed (Start) keeps client-go informers and
// one event stream per kube-proxy, turns each object into the few fields
// the TUI shows, drops updates that change none of them (a lease renewal,
// a node's heartbeat), and hands the rest over in batches: a burst of a
// thousand pod updates is a handful of messages, and an idle cluster sends
// none.
package kubestate

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Leader-election leases in kube-system whose holders the TUI shows.
const (
	LeaseScheduler         = "kube-scheduler"
	LeaseControllerManager = "kube-controller-manager"
)

// Node is one Node object as the TUI shows it.
type Node struct {
	Name string `json:"name"`
	// Role is runtime.RoleMaster for a control-plane node (its label or
	// taint says so), else runtime.RoleWorker.
	Role string `json:"role,omitempty"`
	// Ready is the status of the Ready condition ("" before the kubelet
	// posted one); ReadyReason its reason and ReadySince when it last
	// changed.
	Ready       corev1.ConditionStatus `json:"ready,omitempty"`
	ReadyReason string                 `json:"reason,omitempty"`
	ReadySince  time.Time              `json:"since"`
	// Unschedulable is set on a cordoned node.
	Unschedulable bool   `json:"unsched,omitempty"`
	PodCIDR       string `json:"cidr,omitempty"`
	// InternalIP is the address the node's pods and kube-proxy use.
	InternalIP string `json:"ip,omitempty"`
	Deleting   bool   `json:"del,omitempty"`
}

// IsReady reports whether the node's Ready condition is True.
func (n *Node) IsReady() bool { return n.Ready == corev1.ConditionTrue }

// Pod is one Pod object as the TUI shows it.
type Pod struct {
	Namespace string `json:"ns"`
	Name      string `json:"name"`
	// Node is where it was scheduled; "" while it waits for the scheduler.
	Node  string          `json:"node,omitempty"`
	Phase corev1.PodPhase `json:"phase,omitempty"`
	// Ready is the status of the Ready condition.
	Ready    bool  `json:"ready,omitempty"`
	Restarts int32 `json:"restarts,omitempty"`
	Deleting bool  `json:"del,omitempty"`
	// Reason says why a pod is not running as it should: the pod's reason
	// (Evicted), else a waiting container's (ContainerCreating,
	// CrashLoopBackOff) or a terminated one's (Error, OOMKilled).
	Reason  string    `json:"reason,omitempty"`
	Created time.Time `json:"created"`
}

// Key returns "namespace/name".
func (p *Pod) Key() string { return p.Namespace + "/" + p.Name }

// PodStatus is what a pod amounts to on screen.
type PodStatus int

// Pod statuses, most alarming first: the order pods are drawn in, so that
// when a row is cut short the trouble is what stays visible.
const (
	PodFailed PodStatus = iota
	PodUnknown
	PodPending
	PodNotReady
	PodTerminating
	PodRunning
	PodSucceeded
	numPodStatuses
)

// Status returns what the pod amounts to.
func (p *Pod) Status() PodStatus {
	switch {
	case p.Deleting:
		return PodTerminating
	case p.Phase == corev1.PodFailed:
		return PodFailed
	case p.Phase == corev1.PodSucceeded:
		return PodSucceeded
	case p.Phase == corev1.PodPending || p.Phase == "":
		return PodPending
	case p.Phase == corev1.PodRunning && p.Ready:
		return PodRunning
	case p.Phase == corev1.PodRunning:
		return PodNotReady
	}
	return PodUnknown
}

// PodCounts counts pods by status.
type PodCounts [numPodStatuses]int

// Total returns the number of pods counted.
func (c *PodCounts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// Lease is a leader-election Lease in kube-system.
type Lease struct {
	Name string `json:"name"`
	// Holder is the holder's identity, "<node>_<uuid>" for klab's
	// kube-scheduler and kube-controller-manager; Node is the node part,
	// "" when nobody holds it.
	Holder      string    `json:"holder,omitempty"`
	Node        string    `json:"node,omitempty"`
	Transitions int32     `json:"n,omitempty"`
	AcquiredAt  time.Time `json:"at"`
}

// Proxy is one node's kube-proxy as its event stream tells.
type Proxy struct {
	Node string `json:"node"`
	// Mode is the running mode ("iptables", "ipvs", ...), the last one
	// known when the kube-proxy stopped answering.
	Mode string `json:"mode,omitempty"`
	// Since is when Mode was built.
	Since     time.Time `json:"since"`
	Reachable bool      `json:"ok,omitempty"`
	// Err is why the kube-proxy does not answer.
	Err string `json:"err,omitempty"`
	// ConfigError is why the ConfigMap's content is not in force.
	ConfigError string `json:"cfgErr,omitempty"`
}

// ProxyConfig is the kube-system/kube-proxy ConfigMap: the mode every
// kube-proxy is asked to run.
type ProxyConfig struct {
	Exists        bool   `json:"exists,omitempty"`
	Mode          string `json:"mode,omitempty"`
	IPVSScheduler string `json:"ipvs,omitempty"`
	// Err is why the ConfigMap cannot be read as a KubeProxyConfiguration.
	Err string `json:"err,omitempty"`
}

// Connection is the feed's link to the API server.
type Connection struct {
	// Connected is set once the API server answered, and cleared when it
	// stops answering; Synced once the first lists arrived.
	Connected bool `json:"connected,omitempty"`
	Synced    bool `json:"synced,omitempty"`
	// Err is why the API server does not answer (or why there is no
	// feed at all); Since is when it stopped answering.
	Err   string    `json:"err,omitempty"`
	Since time.Time `json:"since"`
	// Stopped is set when the feed ended (or never started: Err says why).
	Stopped bool `json:"stopped,omitempty"`
}

// State is the Kubernetes side of a lab. The zero value is an empty state,
// connecting.
type State struct {
	Conn        Connection
	ProxyConfig ProxyConfig

	nodes   map[string]Node
	pods    map[string]Pod
	leases  map[string]Lease
	proxies map[string]Proxy

	// version counts changes, so a view can tell a state it drew already.
	version uint64
	// Derived from nodes and pods on demand, dropped on every change.
	sortedNodes []Node
	counts      map[string]*PodCounts
}

// Version changes whenever the state does.
func (s *State) Version() uint64 { return s.version }

func (s *State) changed() {
	s.version++
	s.sortedNodes, s.counts = nil, nil
}

// SetNode adds or replaces a node.
func (s *State) SetNode(n Node) {
	if s.nodes == nil {
		s.nodes = map[string]Node{}
	}
	s.nodes[n.Name] = n
	s.changed()
}

// DeleteNode removes a node.
func (s *State) DeleteNode(name string) {
	delete(s.nodes, name)
	s.changed()
}

// SetPod adds or replaces a pod.
func (s *State) SetPod(p Pod) {
	if s.pods == nil {
		s.pods = map[string]Pod{}
	}
	s.pods[p.Key()] = p
	s.changed()
}

// DeletePod removes the pod "namespace/name".
func (s *State) DeletePod(key string) {
	delete(s.pods, key)
	s.changed()
}

// SetLease adds or replaces a lease.
func (s *State) SetLease(l Lease) {
	if s.leases == nil {
		s.leases = map[string]Lease{}
	}
	s.leases[l.Name] = l
	s.changed()
}

// DeleteLease removes a lease.
func (s *State) DeleteLease(name string) {
	delete(s.leases, name)
	s.changed()
}

// SetProxy records a node's kube-proxy.
func (s *State) SetProxy(p Proxy) {
	if s.proxies == nil {
		s.proxies = map[string]Proxy{}
	}
	s.proxies[p.Node] = p
	s.changed()
}

// SetProxyConfig records the kube-proxy ConfigMap.
func (s *State) SetProxyConfig(c ProxyConfig) {
	s.ProxyConfig = c
	s.changed()
}

// SetConnection records the link to the API server.
func (s *State) SetConnection(c Connection) {
	s.Conn = c
	s.changed()
}

// Nodes returns the nodes, masters first, then by name (worker-2 before
// worker-10).
func (s *State) Nodes() []Node {
	if s.sortedNodes == nil && len(s.nodes) > 0 {
		s.sortedNodes = make([]Node, 0, len(s.nodes))
		for _, n := range s.nodes {
			s.sortedNodes = append(s.sortedNodes, n)
		}
		slices.SortFunc(s.sortedNodes, func(a, b Node) int {
			if c := cmp.Compare(roleRank(a.Role), roleRank(b.Role)); c != 0 {
				return c
			}
			return NaturalCompare(a.Name, b.Name)
		})
	}
	return s.sortedNodes
}

func roleRank(role string) int {
	if role == "master" {
		return 0
	}
	return 1
}

// Node returns the named node.
func (s *State) Node(name string) (Node, bool) {
	n, ok := s.nodes[name]
	return n, ok
}

// Pod returns the pod "namespace/name".
func (s *State) Pod(key string) (Pod, bool) {
	p, ok := s.pods[key]
	return p, ok
}

// PodCount returns how many pods there are.
func (s *State) PodCount() int { return len(s.pods) }

// Counts returns the pods on node counted by status; node "" counts the
// pods not scheduled yet.
func (s *State) Counts(node string) PodCounts {
	s.index()
	if c := s.counts[node]; c != nil {
		return *c
	}
	return PodCounts{}
}

// AllCounts returns every pod counted by status.
func (s *State) AllCounts() PodCounts {
	var all PodCounts
	for _, p := range s.pods {
		all[p.Status()]++
	}
	return all
}

func (s *State) index() {
	if s.counts != nil {
		return
	}
	s.counts = map[string]*PodCounts{}
	for _, p := range s.pods {
		c := s.counts[p.Node]
		if c == nil {
			c = &PodCounts{}
			s.counts[p.Node] = c
		}
		c[p.Status()]++
	}
}

// Lease returns the named lease of kube-system.
func (s *State) Lease(name string) (Lease, bool) {
	l, ok := s.leases[name]
	return l, ok
}

// LeaseHolder returns the node holding the named lease, or "".
func (s *State) LeaseHolder(name string) string { return s.leases[name].Node }

// Proxy returns the kube-proxy of node.
func (s *State) Proxy(node string) (Proxy, bool) {
	p, ok := s.proxies[node]
	return p, ok
}

// NaturalCompare orders names with numbers by value: worker-2 before
// worker-10.
func NaturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := a[:da], b[:db]
			// Without leading zeros, the longer number is the larger.
			if c := cmp.Compare(len(trimZeros(na)), len(trimZeros(nb))); c != 0 {
				return c
			}
			if c := cmp.Compare(trimZeros(na), trimZeros(nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
