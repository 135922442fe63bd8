package lab

import (
	"context"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
)

// ChaosOp is a way to break (or mend) the cluster on purpose.
type ChaosOp string

// Chaos operations. Kill, restart, pause and resume act on the components of
// their targets; partition and heal act on the network between nodes.
const (
	OpKill      ChaosOp = "kill"
	OpRestart   ChaosOp = "restart"
	OpPause     ChaosOp = "pause"
	OpResume    ChaosOp = "resume"
	OpPartition ChaosOp = "partition"
	OpHeal      ChaosOp = "heal"
)

// ChaosOps lists every operation, in the order help shows them.
var ChaosOps = []ChaosOp{OpKill, OpRestart, OpPause, OpResume, OpPartition, OpHeal}

// ChaosRequest is one chaos operation. Targets are written as the user
// writes them: "etcd-2", "master-2", "master-2/etcd" or "leader".
type ChaosRequest struct {
	Op      ChaosOp  `json:"op"`
	Targets []string `json:"targets,omitempty"`
	// From is, for a partition, the other side; empty means every node not
	// among the targets.
	From []string `json:"from,omitempty"`
}

// ChaosResult says what an operation acted on, targets resolved.
type ChaosResult struct {
	Op      ChaosOp  `json:"op"`
	Targets []Target `json:"targets,omitempty"`
	// Side and From are the two sides of a partition, as node names.
	Side []string `json:"side,omitempty"`
	From []string `json:"from,omitempty"`
	// LeaderTerm is the term in which the resolved "leader" led.
	LeaderTerm uint64 `json:"leaderTerm,omitempty"`
}

// Chaos runs one chaos operation. Operations are serialised: each sees the
// cluster as the previous one left it, and "leader" is resolved at the
// moment the operation runs.
func (c *Cluster) Chaos(ctx context.Context, req ChaosRequest) (*ChaosResult, error) {
	if phase := c.Phase(); phase != PhaseReady {
		return nil, i18n.NewError("lab.err.starting", c.spec.Name, phase)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if !slices.Contains(ChaosOps, req.Op) {
		return nil, i18n.NewError("chaos.err.unknown-op", string(req.Op), joinOps())
	}
	res := &ChaosResult{Op: req.Op}
	if req.Op == OpHeal {
		if len(req.Targets) > 0 || len(req.From) > 0 {
			return nil, i18n.NewError("chaos.err.heal-args")
		}
		if err := c.rt.Heal(ctx); err != nil {
			return nil, i18n.Wrap(err, "chaos.err.failed", string(req.Op))
		}
		return res, nil
	}
	if len(req.Targets) == 0 {
		return nil, i18n.NewError("chaos.err.no-targets", string(req.Op))
	}
	if req.Op != OpPartition && len(req.From) > 0 {
		return nil, i18n.NewError("chaos.err.from-only-partition")
	}
	targets, term, err := c.resolveAll(ctx, req.Targets)
	if err != nil {
		return nil, err
	}
	res.Targets, res.LeaderTerm = targets, term
	if req.Op == OpPartition {
		return c.partition(ctx, req, res)
	}
	for _, t := range targets {
		for _, ref := range refsOf(t, c.topo) {
			if err := c.apply(ctx, req.Op, ref); err != nil {
				return nil, i18n.Wrap(err, "chaos.err.on", string(req.Op), ref.String())
			}
		}
	}
	return res, nil
}

// resolveAll resolves targets, asking the members who leads only if one of
// the targets is "leader".
func (c *Cluster) resolveAll(ctx context.Context, names []string) ([]Target, uint64, error) {
	var term uint64
	leader := func(component string) (string, error) {
		if component != runtime.ComponentEtcd {
			return c.leaseHolder(ctx, component)
		}
		answers := fetchAll(ctx, c.members)
		i, ok := leaderOf(answers)
		if !ok {
			return "", i18n.NewError("lab.err.no-leader", c.spec.Name)
		}
		term = answers[i].status.Term
		return c.members[i].Name, nil
	}
	var out []Target
	for _, n := range names {
		t, err := resolveTarget(n, c.topo, leader)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, t)
	}
	return out, term, nil
}

func (c *Cluster) apply(ctx context.Context, op ChaosOp, ref runtime.Ref) error {
	switch op {
	case OpKill:
		return c.rt.Kill(ctx, ref)
	case OpPause:
		return c.rt.Pause(ctx, ref)
	case OpResume:
		return c.rt.Resume(ctx, ref)
	case OpRestart:
		// As docker restart: a graceful stop, then a start on the same data.
		if err := c.rt.Stop(ctx, ref); err != nil {
			return err
		}
		return c.rt.Start(ctx, ref)
	}
	return i18n.NewError("chaos.err.unknown-op", string(op), joinOps())
}

func (c *Cluster) partition(ctx context.Context, req ChaosRequest, res *ChaosResult) (*ChaosResult, error) {
	for _, t := range res.Targets {
		if !slices.Contains(res.Side, t.Node) {
			res.Side = append(res.Side, t.Node)
		}
	}
	if len(req.From) > 0 {
		from, _, err := c.resolveAll(ctx, req.From)
		if err != nil {
			return nil, err
		}
		for _, t := range from {
			if slices.Contains(res.Side, t.Node) {
				return nil, i18n.NewError("chaos.err.both-sides", t.Node)
			}
			if !slices.Contains(res.From, t.Node) {
				res.From = append(res.From, t.Node)
			}
		}
	} else {
		for _, n := range c.topo {
			if !slices.Contains(res.Side, n.Node) {
				res.From = append(res.From, n.Node)
			}
		}
	}
	if len(res.From) == 0 {
		return nil, i18n.NewError("chaos.err.nothing-left")
	}
	if err := c.rt.Partition(ctx, res.Side, res.From); err != nil {
		return nil, i18n.Wrap(err, "chaos.err.failed", string(req.Op))
	}
	return res, nil
}

func joinOps() string {
	names := make([]string, len(ChaosOps))
	for i, op := range ChaosOps {
		names[i] = string(op)
	}
	return strings.Join(names, ", ")
}

// leaseHolder returns the node whose component holds the component's
// leader Lease, kube-system/<component>: its holderIdentity is
// "<node>_<uuid>", as the leader elector writes it.
func (c *Cluster) leaseHolder(ctx context.Context, component string) (string, error) {
	client, err := adminClient(c.Info())
	if err != nil {
		return "", err
	}
	lease, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, component, metav1.GetOptions{})
	if err != nil {
		return "", i18n.Wrap(err, "lab.err.lease-unreadable", metav1.NamespaceSystem+"/"+component)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	node, _, _ := strings.Cut(holder, "_")
	for _, n := range c.topo {
		if n.Node == node && slices.Contains(n.Components, component) {
			return node, nil
		}
	}
	return "", i18n.NewError("lab.err.no-lease-holder", metav1.NamespaceSystem+"/"+component, holder)
}
