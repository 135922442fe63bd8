package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/local"
)

// Upstream ports of the control loop's components.
const (
	kubeletPort           = 10250
	controllerManagerPort = 10257
	schedulerPort         = 10259
)

// Node capacity every kubelet reports: a small laptop-sized node, so that
// a pod asking for more than any node has stays Pending, as lessons show.
const (
	nodeCPU    = "2"
	nodeMemory = "4Gi"
	nodePods   = 110
)

// nodeImage is the image the mirror pods of the control plane name.
const nodeImage = "klab/node:latest"

// DefaultNodesReadyTimeout bounds the wait for every node to be Ready.
const DefaultNodesReadyTimeout = 60 * time.Second

func masterPorts() []runtime.Port {
	return []runtime.Port{
		{Name: "etcd-client", Default: etcdClientPort}, {Name: "etcd-peer", Default: etcdPeerPort},
		{Name: "apiserver", Default: apiServerPort}, {Name: "kubelet", Default: kubeletPort},
		{Name: "scheduler", Default: schedulerPort}, {Name: "controller-manager", Default: controllerManagerPort},
		{Name: "proxy", Default: kubeProxyPort},
	}
}

func workerPorts() []runtime.Port {
	return []runtime.Port{{Name: "kubelet", Default: kubeletPort}, {Name: "proxy", Default: kubeProxyPort}}
}

// createWorkers creates the worker nodes.
func (c *Cluster) createWorkers(ctx context.Context, workers []runtime.Node, prev *Info) error {
	for i := range workers {
		spec := runtime.NodeSpec{
			Name:  runtime.RoleWorker + "-" + strconv.Itoa(i+1),
			Role:  runtime.RoleWorker,
			Index: i + 1,
			Ports: workerPorts(),
		}
		if prev != nil {
			spec.Reuse = &prev.Nodes[c.spec.Masters+i]
		}
		n, err := c.rt.CreateNode(ctx, spec)
		if err != nil {
			return err
		}
		workers[i] = n
	}
	return nil
}

func hostPort(n runtime.Node, port string) string {
	return net.JoinHostPort(n.Host, strconv.Itoa(n.Ports[port]))
}

func (c *Cluster) clientSpec(server string) runtime.ClientSpec {
	return runtime.ClientSpec{Cluster: c.spec.Name, APIServer: server, PKIDir: filepath.Join(c.dir, pkiDirName), Speed: c.spec.Speed}
}

// startControlLoop runs a scheduler and a controller manager on every
// master, each talking to its own master's API server as kubeadm sets
// them up; they elect their leaders among themselves.
func (c *Cluster) startControlLoop(ctx context.Context, masters []runtime.Node) error {
	var refs []runtime.Ref
	for _, n := range masters {
		server := "https://" + hostPort(n, "apiserver")
		sched := runtime.Ref{Node: n.Name, Component: runtime.ComponentScheduler}
		if err := c.rt.CreateComponent(ctx, runtime.ComponentSpec{Ref: sched, Scheduler: &runtime.SchedulerSpec{
			ClientSpec: c.clientSpec(server), DebugListen: hostPort(n, "scheduler"),
		}}); err != nil {
			return err
		}
		cm := runtime.Ref{Node: n.Name, Component: runtime.ComponentControllerManager}
		if err := c.rt.CreateComponent(ctx, runtime.ComponentSpec{Ref: cm, ControllerManager: &runtime.ControllerManagerSpec{
			ClientSpec: c.clientSpec(server), DebugListen: hostPort(n, "controller-manager"),
		}}); err != nil {
			return err
		}
		refs = append(refs, sched, cm)
	}
	return c.startAll(ctx, refs)
}

// startKubelets runs a kubelet on every node, talking to the cluster's
// API server endpoint (the load balancer when there is one). A master's
// kubelet registers it tainted for the control plane and reports its
// components as mirror pods.
func (c *Cluster) startKubelets(ctx context.Context, masters, workers []runtime.Node, server string) error {
	var refs []runtime.Ref
	for _, n := range append(append([]runtime.Node(nil), masters...), workers...) {
		cidr := n.PodCIDR
		if cidr == "" {
			var err error
			if cidr, err = local.PodCIDR(c.spec.Name, n.Name); err != nil {
				return i18n.Wrap(err, "lab.err.pod-addresses", n.Name)
			}
		}
		spec := &runtime.KubeletSpec{
			ClientSpec: c.clientSpec(server), Listen: hostPort(n, "kubelet"), NodeIP: n.Host, PodCIDR: cidr,
			ControlPlane: n.Role == runtime.RoleMaster, CPU: nodeCPU, Memory: nodeMemory, Pods: nodePods,
		}
		if n.Role == runtime.RoleMaster {
			spec.StaticPods = []runtime.StaticPodSpec{
				{Name: runtime.ComponentEtcd, Image: nodeImage, HealthURL: n.URL("etcd-peer") + "/health"},
				{Name: runtime.ComponentAPIServer, Image: nodeImage, HealthURL: "https://" + hostPort(n, "apiserver") + "/livez"},
				{Name: runtime.ComponentControllerManager, Image: nodeImage, HealthURL: "http://" + hostPort(n, "controller-manager") + "/healthz"},
				{Name: runtime.ComponentScheduler, Image: nodeImage, HealthURL: "http://" + hostPort(n, "scheduler") + "/healthz"},
			}
		}
		ref := runtime.Ref{Node: n.Name, Component: runtime.ComponentKubelet}
		if err := c.rt.CreateComponent(ctx, runtime.ComponentSpec{Ref: ref, Kubelet: spec}); err != nil {
			return err
		}
		refs = append(refs, ref)
	}
	return c.startAll(ctx, refs)
}

// startAll starts components concurrently.
func (c *Cluster) startAll(ctx context.Context, refs []runtime.Ref) error {
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.rt.Start(ctx, ref)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitNodesReady waits until every node reports Ready, watching the Node
// objects.
func waitNodesReady(ctx context.Context, p *pki.PKI, cluster, server string, want int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg, err := p.RESTConfig(cluster, server, auth.AdminUser)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ready := map[string]bool{}
	for {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range list.Items {
				ready[list.Items[i].Name] = nodeReady(&list.Items[i])
			}
			if countTrue(ready) >= want {
				return nil
			}
			err = watchNodesReady(ctx, client, list.ResourceVersion, ready, want)
			if err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return i18n.Wrap(fmt.Errorf("%d of %d nodes Ready: %w", countTrue(ready), want, ctx.Err()), "lab.err.nodes-ready", timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// watchNodesReady follows node changes from rv until want nodes are Ready;
// it returns an error when the watch ends first.
func watchNodesReady(ctx context.Context, client kubernetes.Interface, rv string, ready map[string]bool, want int) error {
	w, err := client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: rv, FieldSelector: fields.Everything().String()})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		n, ok := ev.Object.(*corev1.Node)
		if !ok {
			continue
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			ready[n.Name] = nodeReady(n)
		case watch.Deleted:
			delete(ready, n.Name)
		}
		if countTrue(ready) >= want {
			return nil
		}
	}
	return errors.New("watch ended")
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}
