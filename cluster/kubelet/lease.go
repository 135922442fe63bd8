package kubelet

import (
	"context"
	"fmt"
	"math"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/timing"
)

// leaseRetryInitial and leaseRetryMax bound the retries of a failed
// renewal (upstream's lease controller: 200 ms doubling to 7 s), before
// the next regular renewal.
const (
	leaseRetryInitial = 200 * time.Millisecond
	leaseRetryMax     = 7 * time.Second
)

// leaseDurationSeconds is the duration written into the Lease: 40 s
// divided by the speed, at least 1 s (the field holds whole seconds).
func (k *Kubelet) leaseDurationSeconds() int32 {
	return int32(max(1, math.Round(k.scaled(timing.NodeLeaseDuration).Seconds())))
}

// leaseLoop renews the node's Lease in kube-node-lease every
// node-lease-renew-interval (scaled): the cheap heartbeat the node
// lifecycle controller watches, while the full node status is written
// only when it changes.
func (k *Kubelet) leaseLoop() {
	interval := k.scaled(timing.NodeLeaseRenewInterval)
	var lease *coordinationv1.Lease
	for {
		delay := leaseRetryInitial
		for {
			var err error
			lease, err = k.renewLease(k.ctx, lease)
			if err == nil || k.ctx.Err() != nil {
				break
			}
			k.log.Warn("failed to update lease", "err", err)
			lease = nil // read it again next time
			if !k.sleep(min(delay, interval)) {
				return
			}
			delay = min(delay*2, leaseRetryMax)
		}
		if !k.sleep(interval) {
			return
		}
	}
}

// renewLease updates the Lease (known is the last one written, nil to
// read it), creating it the first time.
func (k *Kubelet) renewLease(ctx context.Context, known *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	leases := k.client.CoordinationV1().Leases(v1.NamespaceNodeLease)
	if known == nil {
		got, err := leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			created, err := leases.Create(ctx, k.newLease(nil), metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("create lease: %w", err)
			}
			k.leaseRenewed(created)
			return created, nil
		case err != nil:
			return nil, fmt.Errorf("get lease: %w", err)
		}
		known = got
	}
	updated, err := leases.Update(ctx, k.newLease(known), metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update lease: %w", err)
	}
	k.leaseRenewed(updated)
	return updated, nil
}

func (k *Kubelet) leaseRenewed(l *coordinationv1.Lease) {
	k.nodeMu.Lock()
	k.lastLeaseRenew = k.clock.Now()
	k.nodeMu.Unlock()
	k.rec.step(nil, "", StepLeaseRenewed, "")
}

// newLease is the Lease to write: held by the node, owned by the Node
// object (so it goes when the Node is deleted), renewed now.
func (k *Kubelet) newLease(base *coordinationv1.Lease) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Namespace: v1.NamespaceNodeLease}}
	if base != nil {
		lease = base.DeepCopy()
	}
	lease.Spec.HolderIdentity = ptr.To(k.cfg.NodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To(k.leaseDurationSeconds())
	lease.Spec.RenewTime = &metav1.MicroTime{Time: k.clock.Now()}
	if len(lease.OwnerReferences) == 0 {
		if uid := k.nodeUID(); uid != "" {
			lease.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: k.cfg.NodeName, UID: uid,
			}}
		}
	}
	return lease
}
