package scheduler

import (
	"context"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	frameworkruntime "github.com/klab-dev/klab/cluster/scheduler/framework/runtime"
	"github.com/klab-dev/klab/cluster/scheduler/internal/cache"
)

// Upstream's bounds on how many feasible nodes a cycle looks for.
const (
	// minFeasibleNodesToFind: below this many nodes every node is
	// filtered, and at least this many feasible nodes are looked for.
	minFeasibleNodesToFind = 100
	// minFeasibleNodesPercentageToFind: the adaptive percentage never
	// drops below this.
	minFeasibleNodesPercentageToFind = 5
)

// algorithm is the part of a scheduling cycle that picks a node: filter,
// score, select. It runs in the scheduling loop only, one cycle at a time.
type algorithm struct {
	fwk      *frameworkruntime.Framework
	snapshot *cache.Snapshot
	rng      *rand.Rand
	// nextStartNodeIndex is where the next cycle starts filtering, so that
	// every node gets its turn when cycles stop early.
	nextStartNodeIndex int
}

// numFeasibleNodesToFind is upstream's: every node in clusters under 100
// nodes; otherwise a percentage that shrinks as the cluster grows (50% minus
// one point per 125 nodes, at least 5%), and never fewer than 100 nodes.
func numFeasibleNodesToFind(numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	percentage := 50 - numAllNodes/125
	if percentage < minFeasibleNodesPercentageToFind {
		percentage = minFeasibleNodesPercentageToFind
	}
	numNodes := numAllNodes * percentage / 100
	if numNodes < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return numNodes
}

// schedulePod runs PreFilter, Filter, PreScore, Score and selection for
// pod on the snapshot, fills d with what each step said and returns the
// chosen node. It fails with errNoNodesAvailable, a *FitError when no node
// fits, or an error from a plugin.
func (a *algorithm) schedulePod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, d *Decision) (string, error) {
	allNodes, err := a.snapshot.List()
	if err != nil {
		return "", err
	}
	d.NumNodes = len(allNodes)
	if len(allNodes) == 0 {
		return "", errNoNodesAvailable
	}
	feasible, err := a.findNodesThatFitPod(ctx, state, pod, allNodes, d)
	if err != nil {
		return "", err
	}
	if len(feasible) == 1 {
		// Upstream does not score a single candidate.
		d.ScoringSkipped = "only one feasible node"
		return feasible[0].Node().Name, nil
	}
	scores, err := a.prioritizeNodes(ctx, state, pod, feasible, d)
	if err != nil {
		return "", err
	}
	host, tied := selectHost(scores, a.rng)
	d.Scores = ranking(scores, host)
	d.TiedNodes = tied
	return host, nil
}

// findNodesThatFitPod runs PreFilter, then Filter over the nodes. With no
// feasible node it returns a *FitError.
func (a *algorithm) findNodesThatFitPod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, allNodes []*framework.NodeInfo, d *Decision) ([]*framework.NodeInfo, error) {
	s, verdicts := a.fwk.RunPreFilterPlugins(ctx, state, pod, allNodes)
	d.PreFilter = verdicts
	if !s.IsSuccess() {
		if !s.IsRejected() {
			return nil, s.AsError()
		}
		return nil, &FitError{
			Pod: pod, NumAllNodes: len(allNodes), PreFilterMsg: s.Message(),
			UnschedulablePlugins: []string{s.Plugin()},
		}
	}
	feasible, rejected, err := a.findNodesThatPassFilters(ctx, state, pod, allNodes, d)
	if err != nil {
		return nil, err
	}
	if len(feasible) == 0 {
		fitErr := &FitError{Pod: pod, NumAllNodes: len(allNodes), NodeToStatus: rejected}
		for _, st := range rejected {
			if p := st.Plugin(); p != "" && !slices.Contains(fitErr.UnschedulablePlugins, p) {
				fitErr.UnschedulablePlugins = append(fitErr.UnschedulablePlugins, p)
			}
		}
		sort.Strings(fitErr.UnschedulablePlugins)
		return nil, fitErr
	}
	return feasible, nil
}

// filterResult is what Filter said about one node.
type filterResult struct {
	node     *framework.NodeInfo
	status   *framework.Status
	verdicts []frameworkruntime.PluginVerdict
	feasible bool
}

// findNodesThatPassFilters filters the nodes in parallel, starting where
// the last cycle stopped, until enough feasible nodes are found. It returns
// the feasible nodes and the rejected nodes' statuses.
func (a *algorithm) findNodesThatPassFilters(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, d *Decision) ([]*framework.NodeInfo, map[string]*framework.Status, error) {
	numAllNodes := len(nodes)
	numNodesToFind := numFeasibleNodesToFind(numAllNodes)
	if !a.fwk.HasScorePlugins() {
		// Nothing will rank the candidates: the first one found will do.
		numNodesToFind = 1
	}
	start := a.nextStartNodeIndex % numAllNodes
	results := make([]filterResult, numAllNodes)

	if !a.fwk.HasFilterPlugins() {
		for i := range numNodesToFind {
			results[i] = filterResult{node: nodes[(start+i)%numAllNodes], feasible: true}
		}
	} else {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var (
			found    atomic.Int32
			errOnce  sync.Once
			firstErr error
		)
		a.fwk.Parallelizer().Until(ctx, numAllNodes, func(i int) {
			ni := nodes[(start+i)%numAllNodes]
			s, verdicts := a.fwk.RunFilterPlugins(ctx, state, pod, ni)
			if s.Code() == framework.Error {
				errOnce.Do(func() { firstErr = s.AsError(); cancel() })
				return
			}
			if s.IsSuccess() {
				if found.Add(1) > int32(numNodesToFind) {
					// Enough found elsewhere; this one is left out, as
					// if it had not been looked at.
					cancel()
					found.Add(-1)
					return
				}
			}
			results[i] = filterResult{node: ni, status: s, verdicts: verdicts, feasible: s.IsSuccess()}
		})
		if firstErr != nil {
			return nil, nil, firstErr
		}
	}

	var feasible []*framework.NodeInfo
	rejected := map[string]*framework.Status{}
	for _, r := range results {
		if r.node == nil {
			continue
		}
		d.Filter = append(d.Filter, NodeFilter{Node: r.node.Node().Name, Feasible: r.feasible, Plugins: r.verdicts})
		if r.feasible {
			feasible = append(feasible, r.node)
		} else {
			rejected[r.node.Node().Name] = r.status
		}
	}
	processed := len(feasible) + len(rejected)
	a.nextStartNodeIndex = (start + processed) % numAllNodes
	d.EvaluatedNodes, d.FeasibleNodes = processed, len(feasible)
	return feasible, rejected, nil
}

// prioritizeNodes runs PreScore and Score. Without score plugins every
// node scores 1, as upstream.
func (a *algorithm) prioritizeNodes(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, d *Decision) ([]frameworkruntime.NodePluginScores, error) {
	if !a.fwk.HasScorePlugins() {
		d.ScoringSkipped = "no score plugins"
		out := make([]frameworkruntime.NodePluginScores, len(nodes))
		for i, ni := range nodes {
			out[i] = frameworkruntime.NodePluginScores{Node: ni.Node().Name, TotalScore: 1}
		}
		return out, nil
	}
	s, verdicts := a.fwk.RunPreScorePlugins(ctx, state, pod, nodes)
	d.PreScore = verdicts
	if !s.IsSuccess() {
		return nil, s.AsError()
	}
	scores, s := a.fwk.RunScorePlugins(ctx, state, pod, nodes)
	if !s.IsSuccess() {
		return nil, s.AsError()
	}
	return scores, nil
}

// selectHost returns the node with the highest total and how many nodes
// share that total. Ties are broken by reservoir sampling, as upstream's
// selectHost: the k-th tied node seen replaces the choice with probability
// 1/k, so every tied node is equally likely to win.
func selectHost(scores []frameworkruntime.NodePluginScores, rng *rand.Rand) (string, int) {
	if len(scores) == 0 {
		return "", 0
	}
	selected, maxScore, tied := 0, scores[0].TotalScore, 1
	for i := 1; i < len(scores); i++ {
		switch total := scores[i].TotalScore; {
		case total > maxScore:
			selected, maxScore, tied = i, total, 1
		case total == maxScore:
			tied++
			if rng.IntN(tied) == 0 {
				selected = i
			}
		}
	}
	return scores[selected].Node, tied
}

// ranking orders the scores for the record: the chosen node first, then
// by total (highest first), then by name.
func ranking(scores []frameworkruntime.NodePluginScores, chosen string) []frameworkruntime.NodePluginScores {
	out := slices.Clone(scores)
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Node == chosen) != (out[j].Node == chosen) {
			return out[i].Node == chosen
		}
		if out[i].TotalScore != out[j].TotalScore {
			return out[i].TotalScore > out[j].TotalScore
		}
		return out[i].Node < out[j].Node
	})
	return out
}
