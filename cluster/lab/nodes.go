package lab

import (
	"context"
	"net"
	"strconv"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Upstream ports of the components, which every node asks for: in Docker
// each node has its own network namespace and gets them all; in the local
// runtime a node gets those no other cluster holds on its loopback address.
const (
	etcdClientPort        = 2379
	etcdPeerPort          = 2380
	apiServerPort         = 6443
	kubeletPort           = 10250
	kubeProxyPort         = 10256
	controllerManagerPort = 10257
	schedulerPort         = 10259
	// etcdMetricsPort is etcd's --listen-metrics-urls port, plain HTTP
	// for the kubelet's health probe, as kubeadm's 2381.
	etcdMetricsPort     = 2381
	etcdMetricsPortName = "etcd-metrics"
)

func masterPorts() []runtime.Port {
	return []runtime.Port{
		{Name: "etcd-client", Default: etcdClientPort}, {Name: "etcd-peer", Default: etcdPeerPort},
		{Name: etcdMetricsPortName, Default: etcdMetricsPort},
		{Name: "apiserver", Default: apiServerPort}, {Name: "kubelet", Default: kubeletPort},
		{Name: "scheduler", Default: schedulerPort}, {Name: "controller-manager", Default: controllerManagerPort},
		{Name: "proxy", Default: kubeProxyPort},
		{Name: "dns", Default: dnsPort}, {Name: "dns-metrics", Default: dnsMetricsPort},
	}
}

func workerPorts() []runtime.Port {
	return []runtime.Port{{Name: "kubelet", Default: kubeletPort}, {Name: "proxy", Default: kubeProxyPort}}
}

func lbPorts() []runtime.Port {
	return []runtime.Port{{Name: "apiserver", Default: apiServerPort}}
}

// hostPort returns "host:port" of the named port on node n, where the
// cluster's components reach it.
func hostPort(n runtime.Node, port string) string {
	return net.JoinHostPort(n.Host, strconv.Itoa(n.Ports[port]))
}

func (b *bringUp) nodesTitle() i18n.Message {
	if b.existing {
		return i18n.M("start.step.nodes", b.c.spec.Masters+b.c.spec.Workers)
	}
	return i18n.M("up.step.nodes", b.c.spec.Masters+b.c.spec.Workers, b.runtime)
}

func (b *bringUp) lbNodeTitle() i18n.Message {
	if b.existing {
		return i18n.M("start.step.lb-node")
	}
	return i18n.M("up.step.lb-node")
}

// createNodes creates the masters, then the workers, and derives each
// master's etcd member from its node.
func (b *bringUp) createNodes(ctx context.Context) error {
	b.masters, b.workers = nil, nil
	for i := range b.c.spec.Masters {
		n, err := b.createNode(ctx, runtime.RoleMaster, i+1, masterPorts())
		if err != nil {
			return err
		}
		b.masters = append(b.masters, n)
	}
	for i := range b.c.spec.Workers {
		n, err := b.createNode(ctx, runtime.RoleWorker, i+1, workerPorts())
		if err != nil {
			return err
		}
		b.workers = append(b.workers, n)
	}
	b.c.members = membersOf(b.masters, b.token(), b.etcdCredentials())
	return nil
}

// createLBNode creates the load balancer's node, which a cluster with
// several masters has (as kind runs haproxy in a container of its own).
func (b *bringUp) createLBNode(ctx context.Context) error {
	n, err := b.createNode(ctx, runtime.RoleLB, 1, lbPorts())
	if err != nil {
		return err
	}
	b.lb = &n
	return nil
}

// createNode creates one node, or makes again the one a previous run left
// at the same address and ports.
func (b *bringUp) createNode(ctx context.Context, role string, index int, ports []runtime.Port) (runtime.Node, error) {
	spec := runtime.NodeSpec{Name: role + "-" + strconv.Itoa(index), Role: role, Index: index, Ports: ports}
	if role == runtime.RoleLB {
		spec.Name = runtime.RoleLB
	}
	spec.Reuse = b.prevNode(spec.Name)
	if b.existing {
		// The node's components exist and listen where they did: it
		// keeps the ports it was given, whatever this build would ask.
		spec.Ports = nil
	}
	return b.c.rt.CreateNode(ctx, spec)
}

// prevNode returns the node of that name as the previous run made it, or
// nil.
func (b *bringUp) prevNode(name string) *runtime.Node {
	if b.prev == nil {
		return nil
	}
	if b.prev.LB != nil && b.prev.LB.Name == name {
		return b.prev.LB
	}
	for i := range b.prev.Nodes {
		if b.prev.Nodes[i].Name == name {
			return &b.prev.Nodes[i]
		}
	}
	return nil
}
