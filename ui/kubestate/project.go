package kubestate

import (
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/runtime"
)

// The role labels kubeadm puts on a control-plane node (the second one
// before Kubernetes 1.24), which klab's kubelet puts there too.
const (
	labelControlPlane = "node-role.kubernetes.io/control-plane"
	labelMaster       = "node-role.kubernetes.io/master"
)

// nodeOf keeps what the TUI shows of a Node. Nothing that changes on every
// heartbeat is kept, so a heartbeat is no change.
func nodeOf(n *corev1.Node) Node {
	out := Node{
		Name:          n.Name,
		Role:          runtime.RoleWorker,
		Unschedulable: n.Spec.Unschedulable,
		PodCIDR:       n.Spec.PodCIDR,
		Deleting:      n.DeletionTimestamp != nil,
	}
	if isControlPlane(n) {
		out.Role = runtime.RoleMaster
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready, out.ReadyReason, out.ReadySince = c.Status, c.Reason, c.LastTransitionTime.Time
		}
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out.InternalIP = a.Address
			break
		}
	}
	return out
}

func isControlPlane(n *corev1.Node) bool {
	if _, ok := n.Labels[labelControlPlane]; ok {
		return true
	}
	if _, ok := n.Labels[labelMaster]; ok {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Key == labelControlPlane || t.Key == labelMaster {
			return true
		}
	}
	return false
}

// podOf keeps what the TUI shows of a Pod.
func podOf(p *corev1.Pod) Pod {
	out := Pod{
		Namespace: p.Namespace,
		Name:      p.Name,
		Node:      p.Spec.NodeName,
		Phase:     p.Status.Phase,
		Deleting:  p.DeletionTimestamp != nil,
		Reason:    p.Status.Reason,
		Created:   p.CreationTimestamp.Time,
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		out.Restarts += cs.RestartCount
		if out.Reason != "" {
			continue
		}
		switch {
		case cs.State.Waiting != nil:
			out.Reason = cs.State.Waiting.Reason
		case cs.State.Terminated != nil && p.Status.Phase != corev1.PodSucceeded:
			out.Reason = cs.State.Terminated.Reason
		}
	}
	return out
}

// leaseOf keeps what the TUI shows of a Lease. The renew time, which
// changes every few seconds while the holder lives, is left out.
func leaseOf(l *coordinationv1.Lease) Lease {
	out := Lease{Name: l.Name}
	if l.Spec.HolderIdentity != nil {
		out.Holder = *l.Spec.HolderIdentity
		out.Node = HolderNode(out.Holder)
	}
	if l.Spec.LeaseTransitions != nil {
		out.Transitions = *l.Spec.LeaseTransitions
	}
	if l.Spec.AcquireTime != nil {
		out.AcquiredAt = l.Spec.AcquireTime.Time
	}
	return out
}

// HolderNode returns the node in a leader-election identity: klab's
// components, like upstream's, campaign as "<hostname>_<uuid>", and a
// node's name is its hostname.
func HolderNode(identity string) string {
	node, _, _ := strings.Cut(identity, "_")
	return node
}

// proxyConfigOf reads the mode from the kube-proxy ConfigMap. A ConfigMap
// without a mode runs the default, as kube-proxy does.
func proxyConfigOf(cm *corev1.ConfigMap) ProxyConfig {
	out := ProxyConfig{Exists: true}
	cfg, err := proxy.DecodeConfiguration(cm.Data[proxy.ConfigMapKey])
	if err != nil {
		out.Err = err.Error()
		return out
	}
	out.Mode, out.IPVSScheduler = string(cfg.Mode), cfg.IPVS.Scheduler
	if out.Mode == "" {
		out.Mode = lab.DefaultProxyMode
	}
	return out
}
