// Package podtopologyspread spreads pods across topology domains (zones,
// nodes) as their spec.topologySpreadConstraints ask. A DoNotSchedule
// constraint filters: a node is rejected when placing the pod there would
// make its domain hold more than maxSkew matching pods above the emptiest
// domain. A ScheduleAnyway constraint only scores, favouring domains with
// fewer matching pods. A pod without constraints gets the system default
// ones (ScheduleAnyway over hostname and zone) when a Service or workload
// selects it, so replicas spread even when nobody asked.
package podtopologyspread

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/helper"
)

// Name is the plugin's name in profiles and FailedScheduling messages.
const Name = "PodTopologySpread"

// Reasons, worded as upstream's.
const (
	// ErrReasonConstraintsNotMatch is the reason when the skew would grow
	// beyond maxSkew.
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	// ErrReasonNodeLabelNotMatch is the reason when the node lacks a
	// constraint's topology key.
	ErrReasonNodeLabelNotMatch = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// systemDefaultConstraints are upstream's defaults for pods without
// constraints (DefaultingType: System).
var systemDefaultConstraints = []v1.TopologySpreadConstraint{
	{TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 5},
}

// PodTopologySpread filters and scores nodes by topology spread.
type PodTopologySpread struct {
	handle             framework.Handle
	defaultConstraints []v1.TopologySpreadConstraint
	// systemDefaulted says the defaults are upstream's system ones; then a
	// node without a zone label still takes part in hostname spreading.
	systemDefaulted bool
	// listers find the Services and workloads selecting a pod; all nil
	// without an informer factory, and then no defaults apply.
	listers helper.SpreadListers
}

var (
	_ framework.PreFilterPlugin = &PodTopologySpread{}
	_ framework.FilterPlugin    = &PodTopologySpread{}
	_ framework.PreScorePlugin  = &PodTopologySpread{}
	_ framework.ScorePlugin     = &PodTopologySpread{}
)

// New builds the plugin with the system default constraints. It reads the
// snapshot through h and, when h has an informer factory, registers
// Service and ReplicaSet informers with it (the caller starts the factory
// after building the plugins). Upstream also follows ReplicationControllers
// and StatefulSets; klab's API server serves neither, so their listers stay
// nil and such owners are not looked up.
func New(_ context.Context, h framework.Handle) (framework.Plugin, error) {
	if h == nil {
		return nil, fmt.Errorf("%s needs a framework handle", Name)
	}
	pl := &PodTopologySpread{
		handle:             h,
		defaultConstraints: systemDefaultConstraints,
		systemDefaulted:    true,
	}
	if f := h.SharedInformerFactory(); f != nil {
		pl.listers = helper.SpreadListers{
			Services:    f.Core().V1().Services().Lister(),
			ReplicaSets: f.Apps().V1().ReplicaSets().Lister(),
		}
	}
	return pl, nil
}

// Name returns the plugin's name.
func (pl *PodTopologySpread) Name() string { return Name }

// allNodes lists every node of the current snapshot.
func (pl *PodTopologySpread) allNodes() ([]*framework.NodeInfo, error) {
	lister := pl.handle.SnapshotSharedLister()
	if lister == nil {
		return nil, fmt.Errorf("%s: no snapshot lister", Name)
	}
	return lister.List()
}
