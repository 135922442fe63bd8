// Package framework is the shape of klab's scheduler, after the
// kube-scheduler framework: one interface per extension point, plugins that
// implement some of them, a Status that says why a plugin said no, and a
// NodeInfo per node that the plugins read.
//
// A scheduling cycle for one pod runs, in order: PreFilter (each plugin
// once, to precompute from the whole snapshot), Filter (each plugin for
// each node; a node survives when every plugin returns success), PreScore,
// Score (each plugin for each surviving node), NormalizeScore (each score
// plugin maps its raw scores to 0..MaxNodeScore), then each plugin's
// normalised score is multiplied by its weight and the weighted scores are
// summed per node. The node with the highest total wins; ties are broken at
// random.
package framework

import (
	"context"
	"errors"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
)

// Code is a Status's code.
type Code int

// Codes, as upstream's.
const (
	// Success means the plugin accepts the pod (or the node).
	Success Code = iota
	// Error is an internal error: the pod is retried with backoff.
	Error
	// Unschedulable rejects the node for now; preemption or a change in the
	// cluster could make it fit.
	Unschedulable
	// UnschedulableAndUnresolvable rejects the node whatever happens to
	// other pods (a node selector that does not match, say).
	UnschedulableAndUnresolvable
	// Skip, from PreFilter or PreScore, means the plugin has nothing to do
	// for this pod; its Filter or Score is then not called.
	Skip
)

var codeNames = [...]string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Skip"}

// String returns upstream's name of the code.
func (c Code) String() string {
	if c < 0 || int(c) >= len(codeNames) {
		return "Unknown"
	}
	return codeNames[c]
}

// Status is a plugin's result. A nil *Status means Success.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus returns a status with the code and reasons. The reasons are
// what a student reads in the FailedScheduling message, so they use
// upstream's wording ("Insufficient cpu").
func NewStatus(code Code, reasons ...string) *Status {
	s := &Status{code: code, reasons: reasons}
	if code == Error {
		s.err = errors.New(s.Message())
	}
	return s
}

// AsStatus wraps an internal error.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the code; Success for a nil status.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// IsSuccess reports whether the status is nil or Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip reports whether the plugin asked to be skipped.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports whether the status rejects the node.
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// Reasons returns the reasons.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Message joins the reasons with ", ".
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// AsError returns the status as an error; nil for success and skip.
func (s *Status) AsError() error {
	if s.IsSuccess() || s.IsSkip() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

// Plugin returns the name of the plugin that produced the status, once
// the framework has recorded it.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the plugin that produced the status and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// Score bounds: every score plugin normalises to [MinNodeScore, MaxNodeScore].
const (
	MinNodeScore int64 = 0
	MaxNodeScore int64 = 100
)

// NodeScore is one node's score from one plugin.
type NodeScore struct {
	Name  string
	Score int64
}

// NodeScoreList is a plugin's scores for the nodes being scored, in the
// same order as the nodes passed to Score.
type NodeScoreList []NodeScore

// Plugin is what every plugin implements.
type Plugin interface {
	// Name is the plugin's upstream name ("NodeResourcesFit").
	Name() string
}

// PreFilterPlugin precomputes what Filter needs, once per pod. It may
// return Skip to say its Filter has nothing to check for this pod, or
// UnschedulableAndUnresolvable to reject the pod on every node at once.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// FilterPlugin decides whether the pod can run on one node.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
}

// PreScorePlugin precomputes what Score needs, once per pod, given the
// nodes that passed filtering. It may return Skip.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// ScorePlugin ranks one node that passed filtering. Raw scores may use any
// range when the plugin has ScoreExtensions; otherwise they must already be
// within [MinNodeScore, MaxNodeScore].
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) (int64, *Status)
	// ScoreExtensions returns nil when the plugin needs no normalisation.
	ScoreExtensions() ScoreExtensions
}

// ScoreExtensions normalises a score plugin's raw scores in place.
type ScoreExtensions interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores NodeScoreList) *Status
}

// Handle is what the framework gives plugins when it builds them.
type Handle interface {
	// SnapshotSharedLister lists the nodes (with their pods) of the
	// snapshot the current cycle runs on.
	SnapshotSharedLister() NodeInfoLister
	// SharedInformerFactory returns the scheduler's informers, for plugins
	// that need Services or ReplicaSets (PodTopologySpread's default
	// constraints select a pod's siblings through them).
	SharedInformerFactory() SharedInformerFactory
}

// NodeInfoLister lists a snapshot's nodes.
type NodeInfoLister interface {
	// List returns every node, in a stable order.
	List() ([]*NodeInfo, error)
	// Get returns the named node.
	Get(name string) (*NodeInfo, error)
	// HavePodsWithAffinityList returns the nodes with at least one pod that
	// has pod affinity or anti-affinity terms.
	HavePodsWithAffinityList() ([]*NodeInfo, error)
	// HavePodsWithRequiredAntiAffinityList returns the nodes with at least
	// one pod that has required anti-affinity terms.
	HavePodsWithRequiredAntiAffinityList() ([]*NodeInfo, error)
}

// SharedInformerFactory is client-go's.
type SharedInformerFactory = informers.SharedInformerFactory

// PluginFactory builds a plugin.
type PluginFactory func(ctx context.Context, h Handle) (Plugin, error)
