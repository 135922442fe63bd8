package kubelet

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node labels, annotations and taints the kubelet (and kubeadm, for the
// control-plane role) set.
const (
	labelHostname     = "kubernetes.io/hostname"
	labelOS           = "kubernetes.io/os"
	labelArch         = "kubernetes.io/arch"
	labelBetaOS       = "beta.kubernetes.io/os"
	labelBetaArch     = "beta.kubernetes.io/arch"
	labelControlPlane = "node-role.kubernetes.io/control-plane"
	// annotationAttachDetach says the attach/detach controller, not the
	// kubelet, attaches this node's volumes (upstream's default).
	annotationAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"
	nodeOS                 = "linux"
)

// registration retry delays, as upstream's registerWithAPIServer: 100 ms
// doubling to 7 s.
const (
	registerRetryInitial = 100 * time.Millisecond
	registerRetryMax     = 7 * time.Second
)

// initialNode is the Node the kubelet registers: identity, labels, the
// control-plane taint, the pod CIDR, and a first status.
func (k *Kubelet) initialNode(ctx context.Context) *v1.Node {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        k.cfg.NodeName,
			Labels:      k.defaultLabels(),
			Annotations: map[string]string{annotationAttachDetach: "true"},
		},
	}
	if k.cfg.ControlPlane {
		node.Spec.Taints = []v1.Taint{{Key: labelControlPlane, Effect: v1.TaintEffectNoSchedule}}
	}
	if k.cfg.PodCIDR != "" {
		node.Spec.PodCIDR, node.Spec.PodCIDRs = k.cfg.PodCIDR, []string{k.cfg.PodCIDR}
	}
	k.setNodeStatus(ctx, node)
	return node
}

// defaultLabels are the labels the kubelet owns on its Node.
func (k *Kubelet) defaultLabels() map[string]string {
	l := map[string]string{
		labelHostname: k.cfg.NodeName,
		labelOS:       nodeOS,
		labelArch:     runtime.GOARCH,
		labelBetaOS:   nodeOS,
		labelBetaArch: runtime.GOARCH,
	}
	maps.Copy(l, k.cfg.Labels)
	return l
}

// registerWithAPIServer creates the Node, or, when it exists (the kubelet
// restarted), brings the labels the kubelet owns and the pod CIDR up to
// date on it. It retries until it succeeds or ctx ends.
func (k *Kubelet) registerWithAPIServer(ctx context.Context) error {
	delay := registerRetryInitial
	for {
		node, err := k.tryRegister(ctx)
		if err == nil {
			k.nodeMu.Lock()
			k.node = node
			k.nodeStatusPosted = k.clock.Now()
			k.nodeMu.Unlock()
			k.rec.step(nil, "", StepRegistered, "Successfully registered node "+k.cfg.NodeName)
			k.log.Info("node registered", "uid", node.UID)
			return nil
		}
		k.log.Warn("unable to register node with API server", "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("kubelet %s: register node: %w (last error: %v)", k.cfg.NodeName, ctx.Err(), err)
		case <-t.C:
		}
		delay = min(delay*2, registerRetryMax)
	}
}

func (k *Kubelet) tryRegister(ctx context.Context) (*v1.Node, error) {
	want := k.initialNode(ctx)
	created, err := k.client.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create node: %w", err)
	}
	existing, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get existing node: %w", err)
	}
	updated := existing.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	maps.Copy(updated.Labels, want.Labels)
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	maps.Copy(updated.Annotations, want.Annotations)
	if updated.Spec.PodCIDR == "" && k.cfg.PodCIDR != "" {
		updated.Spec.PodCIDR, updated.Spec.PodCIDRs = want.Spec.PodCIDR, want.Spec.PodCIDRs
	}
	if !maps.Equal(updated.Labels, existing.Labels) || !maps.Equal(updated.Annotations, existing.Annotations) ||
		updated.Spec.PodCIDR != existing.Spec.PodCIDR {
		if updated, err = k.client.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("update existing node: %w", err)
		}
	}
	return updated, nil
}
