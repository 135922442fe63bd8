package lab

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/local"
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

// schedulerSpec and controllerManagerSpec describe master n's scheduler
// and controller manager, each talking to its own master's API server as
// kubeadm sets them up; they elect their leaders among themselves.
func (b *bringUp) schedulerSpec(n runtime.Node) (runtime.ComponentSpec, error) {
	client, err := b.clientSpec("https://"+hostPort(n, "apiserver"), n, runtime.ComponentScheduler, auth.KubeScheduler)
	if err != nil {
		return runtime.ComponentSpec{}, err
	}
	return runtime.ComponentSpec{Scheduler: &runtime.SchedulerSpec{ClientSpec: client, DebugListen: hostPort(n, "scheduler")}}, nil
}

func (b *bringUp) controllerManagerSpec(n runtime.Node) (runtime.ComponentSpec, error) {
	client, err := b.clientSpec("https://"+hostPort(n, "apiserver"), n, runtime.ComponentControllerManager, auth.KubeControllerManager)
	if err != nil {
		return runtime.ComponentSpec{}, err
	}
	return runtime.ComponentSpec{ControllerManager: &runtime.ControllerManagerSpec{ClientSpec: client, DebugListen: hostPort(n, "controller-manager")}}, nil
}

// podCIDR is the range node n's pods take their addresses from: the one
// the runtime gave the node, else the local runtime's for it.
func (b *bringUp) podCIDR(n runtime.Node) (string, error) {
	if n.PodCIDR != "" {
		return n.PodCIDR, nil
	}
	cidr, err := local.PodCIDR(b.c.spec.Name, n.Name)
	if err != nil {
		return "", i18n.Wrap(err, "lab.err.pod-addresses", n.Name)
	}
	return cidr, nil
}

// kubeletSpec describes node n's kubelet, talking to the cluster's API
// server endpoint (the load balancer when there is one). A master's
// kubelet registers it tainted for the control plane and reports its
// components as mirror pods.
func (b *bringUp) kubeletSpec(n runtime.Node) (runtime.ComponentSpec, error) {
	cidr, err := b.podCIDR(n)
	if err != nil {
		return runtime.ComponentSpec{}, err
	}
	client, err := b.clientSpec(b.server(), n, runtime.ComponentKubelet, auth.NodeUser(n.Name))
	if err != nil {
		return runtime.ComponentSpec{}, err
	}
	spec := &runtime.KubeletSpec{
		ClientSpec: client, Listen: hostPort(n, "kubelet"), NodeIP: n.Host, PodCIDR: cidr,
		ControlPlane: n.Role == runtime.RoleMaster, CPU: nodeCPU, Memory: nodeMemory, Pods: nodePods,
	}
	if n.Role == runtime.RoleMaster {
		spec.StaticPods = []runtime.StaticPodSpec{
			{Name: runtime.ComponentEtcd, Image: nodeImage, HealthURL: b.etcdHealthURL(n)},
			{Name: runtime.ComponentAPIServer, Image: nodeImage, HealthURL: "https://" + hostPort(n, "apiserver") + "/livez"},
			{Name: runtime.ComponentControllerManager, Image: nodeImage, HealthURL: "http://" + hostPort(n, "controller-manager") + "/healthz"},
			{Name: runtime.ComponentScheduler, Image: nodeImage, HealthURL: "http://" + hostPort(n, "scheduler") + "/healthz"},
		}
		if n.Ports["dns"] != 0 {
			spec.StaticPods = append(spec.StaticPods, dnsStaticPod(n))
		}
	}
	return runtime.ComponentSpec{Kubelet: spec}, nil
}

// startAll starts components concurrently; one in stoodDown (a restore
// stood it down in its container) is stood up there instead.
func (c *Cluster) startAll(ctx context.Context, refs []runtime.Ref, stoodDown map[runtime.Ref]bool) error {
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sb, ok := c.rt.(runtime.StandBy); ok && stoodDown[ref] {
				errs[i] = sb.StandUp(ctx, ref)
			} else {
				errs[i] = c.rt.Start(ctx, ref)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitNodesReady waits for every node to be Ready.
func (b *bringUp) waitNodesReady(ctx context.Context) error {
	timeout := b.opts.NodesReadyTimeout
	if timeout == 0 {
		timeout = DefaultNodesReadyTimeout
	}
	if err := waitNodesReady(ctx, b.certs, b.c.spec.Name, b.hostServer(), len(nodes(b)), timeout); err != nil {
		return err
	}
	return b.markControlPlane(ctx)
}

// markControlPlane labels each master node-role.kubernetes.io/control-plane
// with the admin's credentials, as kubeadm's mark-control-plane phase
// does: the NodeRestriction admission plugin keeps a kubelet from setting
// that label on its own Node. A master's kubelet registers it with the
// control-plane taint itself (kubeadm's --register-with-taints).
func (b *bringUp) markControlPlane(ctx context.Context) error {
	if len(b.masters) == 0 {
		return nil
	}
	cfg, err := b.certs.RESTConfig(b.c.spec.Name, b.hostServer(), auth.AdminUser)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	patch := []byte(`{"metadata":{"labels":{"` + LabelControlPlane + `":""}}}`)
	for _, n := range b.masters {
		if _, err := client.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("mark %s as a control-plane node: %w", n.Name, err)
		}
	}
	return nil
}

// LabelControlPlane marks a control-plane node (kubeadm's
// constants.LabelNodeRoleControlPlane).
const LabelControlPlane = "node-role.kubernetes.io/control-plane"

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
