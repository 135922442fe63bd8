// Package runtime defines how klab runs a cluster's components: the Runtime
// interface and the names it works with.
//
// A Runtime is small, on the model of kind's node provider: it creates nodes
// (a network identity and a place for data), runs components on them, breaks
// the network between them, and removes everything it made. It knows nothing
// about what the components do; cluster/lab decides what to run and in what
// order. Two runtimes implement it: local (every component inside the klab
// process, each on its own loopback address) and docker (one container per
// component, sharing its node's network namespace).
//
// Every component starts from one typed spec (EtcdSpec, APIServerSpec, ...),
// the same in both runtimes: the local runtime hands it to package
// components in-process, the Docker runtime passes its JSON to `klab
// component <name> --spec` in a container, which hands it to the same
// package.
//
// A Runtime instance belongs to one cluster; it is created for that cluster
// and its Remove deletes that cluster's objects only.
package runtime

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
)

// Node roles.
const (
	RoleMaster = "master"
	RoleWorker = "worker"
)

// RoleLB is the role of the load balancer's node, which exists when a
// cluster has several masters.
const RoleLB = "lb"

// Component names, as they appear in a Ref and in `docker ps`.
const (
	ComponentEtcd      = "etcd"
	ComponentAPIServer = "kube-apiserver"
	ComponentLB        = "lb"

	ComponentScheduler         = "kube-scheduler"
	ComponentControllerManager = "kube-controller-manager"
	ComponentKubelet           = "kubelet"
	ComponentKubeProxy         = "kube-proxy"
	// ComponentDNS is the cluster DNS, named as kubeadm names its
	// Deployment (klab runs its own server in CoreDNS's place).
	ComponentDNS = "coredns"
)

// Ref addresses one component on one node, written "<node>/<component>"
// ("master-2/etcd").
type Ref struct {
	Node      string `json:"node"`
	Component string `json:"component"`
}

// String returns the ref as "<node>/<component>".
func (r Ref) String() string { return r.Node + "/" + r.Component }

// ParseRef parses "<node>/<component>".
func ParseRef(s string) (Ref, error) {
	node, comp, ok := strings.Cut(s, "/")
	if !ok || node == "" || comp == "" || strings.Contains(comp, "/") {
		return Ref{}, fmt.Errorf("parse component %q: want <node>/<component>", s)
	}
	return Ref{Node: node, Component: comp}, nil
}

// Port asks for one port on a node. Default is the upstream port (2379 for
// etcd clients); a runtime that gives each node its own network namespace
// always grants it, the local runtime grants it when it is free on the node's
// address and picks a free one otherwise.
type Port struct {
	Name    string `json:"name"`
	Default int    `json:"default"`
}

// NodeSpec describes a node to create.
type NodeSpec struct {
	// Name is the node name, "master-1" or "worker-3".
	Name string
	// Role is RoleMaster or RoleWorker; Index is the 1-based number in the
	// name. Together they place the node on the network.
	Role  string
	Index int
	// Ports lists the ports the node's components will listen on.
	Ports []Port
	// Reuse, when set, is the node as a previous run created it: the runtime
	// must give it exactly the same address and ports (members' IDs derive
	// from their URLs, so a kept data dir only works at the same URLs), and
	// fail if it cannot.
	Reuse *Node
}

// Node is a created node: where its components can be reached.
type Node struct {
	Name  string `json:"name"`
	Role  string `json:"role"`
	Index int    `json:"index"`
	// Host is the address other components and the CLI reach the node at.
	Host string `json:"host"`
	// Ports maps a Port's name to the port granted for it on Host.
	Ports map[string]int `json:"ports"`
	// Published maps a Port's name to the "127.0.0.1:port" where the
	// machine running klab reaches it, when Host itself cannot be reached
	// from there (a container's address on Docker Desktop). Empty when Host
	// is reachable (the local runtime).
	Published map[string]string `json:"published,omitempty"`
	// PodCIDR is the range the node's pods take their IPs from.
	PodCIDR string `json:"podCIDR,omitempty"`
}

// HostAddr returns "host:port" where the machine running klab reaches the
// named port, or "" if the node has no such port.
func (n Node) HostAddr(port string) string {
	if a, ok := n.Published[port]; ok {
		return a
	}
	p, ok := n.Ports[port]
	if !ok {
		return ""
	}
	return net.JoinHostPort(n.Host, strconv.Itoa(p))
}

// HostURL returns "http://" + HostAddr(port), or "" if the node has no such
// port.
func (n Node) HostURL(port string) string {
	a := n.HostAddr(port)
	if a == "" {
		return ""
	}
	return "http://" + a
}

// URL returns "http://host:port" for the named port, or "" if the node has
// no such port.
func (n Node) URL(port string) string {
	p, ok := n.Ports[port]
	if !ok {
		return ""
	}
	return fmt.Sprintf("http://%s:%d", n.Host, p)
}

// ComponentSpec describes a component to run. Exactly one of the typed
// fields is set, naming what runs.
type ComponentSpec struct {
	Ref Ref
	// Etcd runs an etcd member. The runtime fills in the data dir when it
	// is empty.
	Etcd *EtcdSpec
	// APIServer runs a kube-apiserver.
	APIServer *APIServerSpec
	// LB runs the load balancer in front of the API servers.
	LB *LBSpec
	// Scheduler runs a kube-scheduler.
	Scheduler *SchedulerSpec
	// ControllerManager runs a kube-controller-manager.
	ControllerManager *ControllerManagerSpec
	// Kubelet runs a kubelet and, in the local runtime, its pods.
	Kubelet *KubeletSpec
	// KubeProxy runs a kube-proxy.
	KubeProxy *KubeProxySpec
	// DNS runs the cluster DNS.
	DNS *DNSSpec
}

// Validate checks that the spec names exactly one thing to run.
func (s ComponentSpec) Validate() error {
	set := 0
	for _, present := range []bool{s.Etcd != nil, s.APIServer != nil, s.LB != nil, s.Scheduler != nil, s.ControllerManager != nil, s.Kubelet != nil, s.KubeProxy != nil, s.DNS != nil} {
		if present {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("the spec must name exactly one thing to run, not %d", set)
	}
	return nil
}

// ServeAddr returns the host:port the component serves on, which a runtime
// waits for when it starts it: an etcd member's client address, the debug
// endpoint of a scheduler or controller manager (they serve nothing else),
// every other component's listen address.
func (s ComponentSpec) ServeAddr() string {
	switch {
	case s.Etcd != nil:
		return s.Etcd.ListenClient
	case s.APIServer != nil:
		return s.APIServer.Listen
	case s.LB != nil:
		return s.LB.Listen
	case s.Scheduler != nil:
		return s.Scheduler.DebugListen
	case s.ControllerManager != nil:
		return s.ControllerManager.DebugListen
	case s.Kubelet != nil:
		return s.Kubelet.Listen
	case s.KubeProxy != nil:
		return s.KubeProxy.Listen
	case s.DNS != nil:
		return s.DNS.Listen
	}
	return ""
}

// ServePort returns the port of ServeAddr, or 0 when the component serves
// on none.
func (s ComponentSpec) ServePort() (int, error) {
	addr := s.ServeAddr()
	if addr == "" {
		return 0, nil
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("listen address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return 0, fmt.Errorf("listen address %q has no valid port", addr)
	}
	return port, nil
}

// RestartsOnFailure reports whether the runtime restarts the component
// when it exits by itself with an error, as a kubelet restarts a static
// pod's container and Docker's on-failure policy restarts a container: the
// kube-scheduler and kube-controller-manager, which exit when they lose
// their lease (a slowed or leaderless etcd makes them miss the renew
// deadline). A component stopped or killed on purpose stays down.
func (s ComponentSpec) RestartsOnFailure() bool {
	return s.Scheduler != nil || s.ControllerManager != nil
}

// EtcdSpec describes an etcd member. Its fields are etcd's own settings,
// named as in etcd's configuration file (--name, --data-dir,
// --initial-cluster, ...), in the JSON style of the other specs; the
// listen addresses are host:port rather than URLs, because a member listens
// on exactly one address of each kind.
type EtcdSpec struct {
	// Name is the member's name, its node's ("master-1").
	Name string `json:"name"`
	// DataDir holds the member's data (member.db): --data-dir. A runtime
	// fills it in when empty: the node's etcd volume in Docker, the node's
	// directory in the local runtime.
	DataDir string `json:"dataDir,omitempty"`
	// InitialCluster lists every member the cluster starts with, this one
	// included, each with its peer URL (--initial-cluster) and client URL
	// (--advertise-client-urls of that member). This member's client URL
	// defaults to https://<ListenClient> with TLS, http:// without.
	InitialCluster []etcd.Peer `json:"initialCluster"`
	// InitialClusterToken, with the members, determines the cluster ID:
	// --initial-cluster-token.
	InitialClusterToken string `json:"initialClusterToken"`
	// Join means the member joins a running cluster that added it with
	// MemberAdd (--initial-cluster-state=existing) instead of bootstrapping
	// one.
	Join bool `json:"join,omitempty"`
	// ListenClient serves the etcd v3 gRPC API to clients; ListenPeer
	// carries raft traffic between members and /debug/klab; ListenDebug,
	// if set, serves /debug/klab alone as well.
	ListenClient string `json:"listenClient"`
	ListenPeer   string `json:"listenPeer"`
	ListenDebug  string `json:"listenDebug,omitempty"`
	// ListenMetrics, if set, serves /health in plain HTTP
	// (--listen-metrics-urls), for the kubelet's probe.
	ListenMetrics string `json:"listenMetrics,omitempty"`
	// CertFile and KeyFile serve the client port over TLS, and
	// TrustedCAFile is the etcd CA every client must present a
	// certificate from (--cert-file, --key-file, --trusted-ca-file with
	// --client-cert-auth). PeerCertFile, PeerKeyFile and
	// PeerTrustedCAFile do the same for the peer port, and the member
	// dials its peers with that pair (--peer-cert-file, ...,
	// --peer-client-cert-auth). Empty means plain HTTP, as clusters made
	// before etcd had TLS run.
	CertFile          string `json:"certFile,omitempty"`
	KeyFile           string `json:"keyFile,omitempty"`
	TrustedCAFile     string `json:"trustedCAFile,omitempty"`
	PeerCertFile      string `json:"peerCertFile,omitempty"`
	PeerKeyFile       string `json:"peerKeyFile,omitempty"`
	PeerTrustedCAFile string `json:"peerTrustedCAFile,omitempty"`
	// HeartbeatInterval is the time between heartbeats, which is also the
	// raft tick, and ElectionTimeout the election timeout, both in
	// milliseconds as etcd takes them; zero means etcd's defaults (100,
	// 1000). The election timeout must be at least five heartbeats.
	HeartbeatInterval int `json:"heartbeatInterval,omitempty"`
	ElectionTimeout   int `json:"electionTimeout,omitempty"`
	// SnapshotCount is how many applied entries trigger a snapshot; zero
	// means etcd's default.
	SnapshotCount uint64 `json:"snapshotCount,omitempty"`
	// UnsafeNoFsync turns fsync off, for demos: unsafe on power loss.
	UnsafeNoFsync bool `json:"unsafeNoFsync,omitempty"`
	// MaxRequestBytes caps one client request; zero means etcd's default.
	MaxRequestBytes int `json:"maxRequestBytes,omitempty"`
	// QuotaBackendBytes is the space quota of the member's database
	// (--quota-backend-bytes): zero means etcd's default, 2 GiB; negative
	// disables it.
	QuotaBackendBytes int64 `json:"quotaBackendBytes,omitempty"`
}

// ClientSpec is what every client of the API server needs: where it is,
// how to trust it, and the cluster's speed.
type ClientSpec struct {
	// Cluster is the cluster's name (for the kubeconfig context).
	Cluster string `json:"cluster"`
	// APIServer is the URL ("https://host:6443") the component talks to.
	APIServer string `json:"apiServer"`
	// PKIDir is the component's own credentials directory
	// (pki.EnsureComponentCredentials): the CA, its client certificate,
	// and what else that component alone needs.
	PKIDir string `json:"pkiDir"`
	// Speed divides Kubernetes' timings.
	Speed float64 `json:"speed"`
}

// SchedulerSpec describes a kube-scheduler.
type SchedulerSpec struct {
	ClientSpec
	// DebugListen is host:port of its debug endpoint.
	DebugListen string `json:"debugListen"`
}

// ControllerManagerSpec describes a kube-controller-manager.
type ControllerManagerSpec struct {
	ClientSpec
	// DebugListen is host:port of its debug endpoint.
	DebugListen string `json:"debugListen"`
}

// KubeletSpec describes a kubelet.
type KubeletSpec struct {
	ClientSpec
	// Listen is host:port of its HTTPS endpoint (logs, health).
	Listen string `json:"listen"`
	// NodeIP is the node's InternalIP.
	NodeIP string `json:"nodeIP"`
	// PodCIDR is the range its pods' IPs come from.
	PodCIDR string `json:"podCIDR"`
	// ControlPlane marks a master: labelled and tainted NoSchedule.
	ControlPlane bool `json:"controlPlane,omitempty"`
	// CPU and Memory are the node's capacity as quantities ("2",
	// "4Gi"); Pods its pod capacity.
	CPU    string `json:"cpu"`
	Memory string `json:"memory"`
	Pods   int    `json:"pods"`
	// RootDir is where the kubelet writes its pods' volumes (upstream's
	// /var/lib/kubelet); the runtime fills it in.
	RootDir string `json:"rootDir,omitempty"`
	// StaticPods are the node's control-plane components, shown as mirror
	// pods in kube-system.
	StaticPods []StaticPodSpec `json:"staticPods,omitempty"`
}

// KubeProxySpec describes a kube-proxy.
type KubeProxySpec struct {
	ClientSpec
	// Listen is host:port of its HTTP endpoint: health, status, the rules
	// it programs, and the lab's way into the node's data path (CONNECT).
	Listen string `json:"listen"`
	// NodeIP is the node's address; NodePorts are opened on it.
	NodeIP string `json:"nodeIP"`
	// PodCIDR is the node's pod range: traffic from it is local.
	PodCIDR string `json:"podCIDR"`
	// ServiceCIDR, when set, is made local to the node's network
	// namespace (which needs CAP_NET_ADMIN there), and kube-proxy listens
	// on every ClusterIP:port of it for the pods that route the range to
	// their node: the Docker runtime sets it.
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
}

// DNSSpec describes the cluster DNS server.
type DNSSpec struct {
	ClientSpec
	// Listen is host:port of the DNS server, UDP and TCP.
	Listen string `json:"listen"`
	// MetricsListen is host:port of its HTTP endpoint: /metrics, /health,
	// /ready and /debug/klab/status.
	MetricsListen string `json:"metricsListen"`
	// Domain is the cluster domain; cluster.local when empty.
	Domain string `json:"domain,omitempty"`
}

// StaticPodSpec is a control-plane component a kubelet reports as a mirror
// pod, healthy while HealthURL answers.
type StaticPodSpec struct {
	Name      string `json:"name"`
	Image     string `json:"image"`
	HealthURL string `json:"healthURL"`
	// Labels are added to the mirror pod's (the cluster DNS's
	// k8s-app=kube-dns, which its Service selects); Ports are its
	// container's ports.
	Labels map[string]string `json:"labels,omitempty"`
	Ports  []ContainerPort   `json:"ports,omitempty"`
}

// ContainerPort is a named port of a static pod's container.
type ContainerPort struct {
	Name     string `json:"name"`
	Port     int32  `json:"port"`
	Protocol string `json:"protocol"`
}

// APIServerSpec describes an API server.
type APIServerSpec struct {
	// EtcdEndpoints are the etcd members' client URLs.
	EtcdEndpoints []string `json:"etcdEndpoints"`
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile are the etcd CA and the
	// API server's etcd client certificate (kube-apiserver's
	// --etcd-cafile, --etcd-certfile, --etcd-keyfile; kubeadm's
	// apiserver-etcd-client). Empty for plain-HTTP etcd.
	EtcdCAFile   string `json:"etcdCAFile,omitempty"`
	EtcdCertFile string `json:"etcdCertFile,omitempty"`
	EtcdKeyFile  string `json:"etcdKeyFile,omitempty"`
	// Listen is host:port to serve HTTPS on.
	Listen string `json:"listen"`
	// PKIDir holds the cluster's CA, serving certificate and tokens.
	PKIDir string `json:"pkiDir"`
	// AdvertiseAddress is the address clients are told to use.
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`
}

// LBSpec describes the load balancer.
type LBSpec struct {
	// Listen is host:port to accept connections on.
	Listen string `json:"listen"`
	// Backends are the API servers' host:port.
	Backends []string `json:"backends"`
	// PKIDir holds the CA the health checks verify API servers with (a
	// component credentials directory will do: it reads only ca.crt).
	PKIDir string `json:"pkiDir"`
}

// State is the lifecycle state of a component.
type State string

// Component states.
const (
	StateCreated State = "created"
	StateRunning State = "running"
	StatePaused  State = "paused"
	StateStopped State = "stopped"
	StateKilled  State = "killed"
	// StateExited means the component stopped by itself, usually on an
	// error that ComponentInfo.Error carries.
	StateExited State = "exited"
)

// ComponentInfo is what List reports about one component.
type ComponentInfo struct {
	Ref       Ref       `json:"ref"`
	State     State     `json:"state"`
	Error     string    `json:"error,omitempty"`
	StartedAt time.Time `json:"startedAt,omitzero"`
}

// Runtime runs the components of one cluster.
//
// Methods taking a Ref fail with an error wrapping ErrNotFound when the
// component was never created. Stop, Kill, Pause and Resume of a component
// already in the target state succeed without doing anything, so chaos
// commands can be repeated.
type Runtime interface {
	// Name is the runtime's name: "local" or "docker".
	Name() string

	// CreateNode gives a node its network identity and storage.
	CreateNode(ctx context.Context, spec NodeSpec) (Node, error)
	// CreateComponent registers a component on a created node without
	// starting it.
	CreateComponent(ctx context.Context, spec ComponentSpec) error

	// Start starts a created, stopped, killed or exited component and
	// returns once it serves.
	Start(ctx context.Context, ref Ref) error
	// Stop shuts a component down gracefully.
	Stop(ctx context.Context, ref Ref) error
	// Kill stops a component abruptly, as kill -9 would.
	Kill(ctx context.Context, ref Ref) error
	// Pause freezes a component, as docker pause does; Resume thaws it.
	Pause(ctx context.Context, ref Ref) error
	Resume(ctx context.Context, ref Ref) error

	// Partition cuts the network, both ways, between every node of a and
	// every node of b. Heal removes every partition.
	Partition(ctx context.Context, a, b []string) error
	Heal(ctx context.Context) error

	// RestoreEtcd replaces the data dir of the stopped etcd member ref
	// with one restored from the snapshot cfg.Snapshot (a file on the
	// host), as an operator runs `etcdutl snapshot restore` where the
	// member's data lives; the old data dir is kept beside it
	// (etcd.RestoreInPlace). cfg.DataDir is the runtime's to fill: it
	// knows where the member's data is. A runtime may leave the restore
	// to the member's next start (etcd.RestorePending: Docker, where the
	// data is on the member's volume); the result then holds the IDs the
	// restore will give, and Start fails if the restore does.
	RestoreEtcd(ctx context.Context, ref Ref, cfg etcd.RestoreConfig) (*etcd.RestoreResult, error)

	// List reports every component, in creation order.
	List(ctx context.Context) ([]ComponentInfo, error)
	// Logs returns a component's log.
	Logs(ctx context.Context, ref Ref) (io.ReadCloser, error)

	// Remove stops every component and deletes everything the runtime
	// created for the cluster (data included).
	Remove(ctx context.Context) error
}

// ErrNotFound is wrapped by errors about a component or node that was never
// created.
var ErrNotFound = fmt.Errorf("not found")

// StandBy is a Runtime that can restart a running component without
// restarting what runs it: StandDown stops the component gracefully, as
// Stop does, but keeps its process (its container) waiting; StandUp starts
// a new instance of it there and returns once it serves. The new instance
// keeps nothing of the old one, as a restarted process would. The Docker
// runtime implements it, where a container start costs far more than the
// component's own; a lab's restore stops and starts every component so.
type StandBy interface {
	StandDown(ctx context.Context, ref Ref) error
	StandUp(ctx context.Context, ref Ref) error
}
