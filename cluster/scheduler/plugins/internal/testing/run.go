package testing

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// Result is a Status reduced to what a test compares: nil reads as
// Success with no reasons.
type Result struct {
	Code    framework.Code
	Reasons []string
}

// Summary reduces a status to a Result.
func Summary(s *framework.Status) Result {
	return Result{Code: s.Code(), Reasons: s.Reasons()}
}

// Reject is the Result of a rejection with the given code and reasons.
func Reject(code framework.Code, reasons ...string) Result {
	return Result{Code: code, Reasons: reasons}
}

// RunFilter runs the plugin's PreFilter (if it has one) over all nodes
// and then its Filter on each node, as the framework does for one pod.
// It returns PreFilter's result and one Filter result per node; when
// PreFilter skips or rejects, no Filter runs and every node gets
// PreFilter's result, Skip reading as Success.
func RunFilter(ctx context.Context, pl framework.Plugin, pod *v1.Pod, nodes []*framework.NodeInfo) (Result, []Result, error) {
	f, ok := pl.(framework.FilterPlugin)
	if !ok {
		return Result{}, nil, fmt.Errorf("%s is not a filter plugin", pl.Name())
	}
	state := framework.NewCycleState()
	var pre *framework.Status
	if p, ok := pl.(framework.PreFilterPlugin); ok {
		pre = p.PreFilter(ctx, state, pod, nodes)
	}
	out := make([]Result, len(nodes))
	if !pre.IsSuccess() {
		for i := range out {
			if !pre.IsSkip() {
				out[i] = Summary(pre)
			}
		}
		return Summary(pre), out, nil
	}
	for i, n := range nodes {
		out[i] = Summary(f.Filter(ctx, state, pod, n))
	}
	return Summary(pre), out, nil
}

// RunScore runs the plugin's PreScore (if it has one), its Score on each
// node and its NormalizeScore (if it has one), as the framework does for
// one pod. It returns PreScore's result, the raw scores and the
// normalised ones; on Skip both score lists are nil.
func RunScore(ctx context.Context, pl framework.Plugin, pod *v1.Pod, nodes []*framework.NodeInfo) (Result, []int64, []int64, error) {
	state := framework.NewCycleState()
	var pre *framework.Status
	if p, ok := pl.(framework.PreScorePlugin); ok {
		pre = p.PreScore(ctx, state, pod, nodes)
	}
	if pre.IsSkip() {
		return Summary(pre), nil, nil, nil
	}
	if !pre.IsSuccess() {
		return Summary(pre), nil, nil, fmt.Errorf("PreScore: %w", pre.AsError())
	}
	s, ok := pl.(framework.ScorePlugin)
	if !ok {
		return Summary(pre), nil, nil, fmt.Errorf("%s is not a score plugin", pl.Name())
	}
	list := make(framework.NodeScoreList, len(nodes))
	raw := make([]int64, len(nodes))
	for i, n := range nodes {
		score, st := s.Score(ctx, state, pod, n)
		if !st.IsSuccess() {
			return Summary(pre), nil, nil, fmt.Errorf("Score on %s: %w", n.Node().Name, st.AsError())
		}
		list[i] = framework.NodeScore{Name: n.Node().Name, Score: score}
		raw[i] = score
	}
	if ext := s.ScoreExtensions(); ext != nil {
		if st := ext.NormalizeScore(ctx, state, pod, list); !st.IsSuccess() {
			return Summary(pre), nil, nil, fmt.Errorf("NormalizeScore: %w", st.AsError())
		}
	}
	normalized := make([]int64, len(list))
	for i, ns := range list {
		normalized[i] = ns.Score
	}
	return Summary(pre), raw, normalized, nil
}
