package podtopologyspread

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

const (
	preScoreStateKey framework.StateKey = "PreScore" + Name
	invalidScore                        = -1
)

// preScoreState is, per ScheduleAnyway constraint, how many matching pods
// each domain of the filtered nodes holds.
type preScoreState struct {
	Constraints []topologySpreadConstraint
	// IgnoredNodes lack a topology key the constraints need; they score 0.
	IgnoredNodes sets.Set[string]
	// TopologyValueToPodCounts[i] maps each domain of Constraints[i] among
	// the filtered nodes to its matching pods. Hostname domains are not
	// listed: Score counts the node's own pods.
	TopologyValueToPodCounts []map[string]*int64
	// TopologyNormalizingWeight[i] is log(domains + 2): with many small
	// domains a pod count weighs more than with a few big ones.
	TopologyNormalizingWeight []float64
}

// Clone returns the state itself: it is never changed after PreScore.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore counts the pods matching each ScheduleAnyway constraint (the
// pod's, or the system defaults) per domain, over all nodes, for the
// domains of the nodes that passed filtering. It asks to be skipped when
// there is nothing to spread.
func (pl *PodTopologySpread) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, filteredNodes []*framework.NodeInfo) *framework.Status {
	allNodes, err := pl.allNodes()
	if err != nil {
		return framework.AsStatus(fmt.Errorf("getting all nodes: %w", err))
	}
	if len(allNodes) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{IgnoredNodes: sets.New[string]()}
	// Only the pod's own constraints require nodes to carry every topology
	// key: with the system defaults a node without a zone label still
	// takes part in hostname spreading.
	requireAllTopologies := len(pod.Spec.TopologySpreadConstraints) > 0 || !pl.systemDefaulted
	if err := pl.initPreScoreState(s, pod, filteredNodes, requireAllTopologies); err != nil {
		return framework.AsStatus(fmt.Errorf("calculating preScoreState: %w", err))
	}
	if len(s.Constraints) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, nodeInfo := range allNodes {
		node := nodeInfo.Node()
		if node == nil {
			continue
		}
		if requireAllTopologies && !nodeLabelsMatchSpreadConstraints(node.Labels, s.Constraints) {
			continue
		}
		for i := range s.Constraints {
			c := &s.Constraints[i]
			if !c.matchNodeInclusionPolicies(pod, node, required) {
				continue
			}
			// Domains no filtered node is in do not matter.
			count := s.TopologyValueToPodCounts[i][node.Labels[c.TopologyKey]]
			if count == nil {
				continue
			}
			*count += int64(countPodsMatchSelector(nodeInfo.Pods, c.Selector, pod.Namespace))
		}
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// initPreScoreState finds the constraints, the ignored nodes and, from the
// filtered nodes, the domains to count and their weights.
func (pl *PodTopologySpread) initPreScoreState(s *preScoreState, pod *v1.Pod, filteredNodes []*framework.NodeInfo, requireAllTopologies bool) error {
	var err error
	s.Constraints, err = pl.constraintsFor(pod, v1.ScheduleAnyway)
	if err != nil || len(s.Constraints) == 0 {
		return err
	}
	s.TopologyValueToPodCounts = make([]map[string]*int64, len(s.Constraints))
	for i := range s.Constraints {
		s.TopologyValueToPodCounts[i] = make(map[string]*int64)
	}
	topoSize := make([]int, len(s.Constraints))
	for _, nodeInfo := range filteredNodes {
		node := nodeInfo.Node()
		if node == nil {
			continue
		}
		if requireAllTopologies && !nodeLabelsMatchSpreadConstraints(node.Labels, s.Constraints) {
			s.IgnoredNodes.Insert(node.Name)
			continue
		}
		for i, c := range s.Constraints {
			if c.TopologyKey == v1.LabelHostname {
				continue
			}
			value := node.Labels[c.TopologyKey]
			if s.TopologyValueToPodCounts[i][value] == nil {
				s.TopologyValueToPodCounts[i][value] = new(int64)
				topoSize[i]++
			}
		}
	}
	s.TopologyNormalizingWeight = make([]float64, len(s.Constraints))
	for i, c := range s.Constraints {
		size := topoSize[i]
		if c.TopologyKey == v1.LabelHostname {
			size = len(filteredNodes) - len(s.IgnoredNodes)
		}
		s.TopologyNormalizingWeight[i] = topologyNormalizingWeight(size)
	}
	return nil
}

// Score sums, over the constraints, the matching pods in the node's domain
// times the domain weight, plus maxSkew-1 (a larger maxSkew blurs the
// differences). More matching pods means a higher raw score, which
// NormalizeScore turns into a lower final one.
func (pl *PodTopologySpread) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(fmt.Errorf("node not found"))
	}
	s, err := getPreScoreState(state)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	if s.IgnoredNodes.Has(node.Name) {
		return 0, nil
	}
	var score float64
	for i, c := range s.Constraints {
		value, ok := node.Labels[c.TopologyKey]
		if !ok {
			continue
		}
		var count int64
		if c.TopologyKey == v1.LabelHostname {
			count = int64(countPodsMatchSelector(nodeInfo.Pods, c.Selector, pod.Namespace))
		} else if p := s.TopologyValueToPodCounts[i][value]; p != nil {
			count = *p
		}
		score += scoreForCount(count, c.MaxSkew, s.TopologyNormalizingWeight[i])
	}
	return int64(math.Round(score)), nil
}

// ScoreExtensions returns the plugin, which normalises its scores.
func (pl *PodTopologySpread) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps raw scores onto 0..100 reversed:
// 100 * (max + min - score) / max, so the least crowded node gets 100.
// Ignored nodes get 0.
func (pl *PodTopologySpread) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	s, err := getPreScoreState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	var minScore int64 = math.MaxInt64
	var maxScore int64
	for i, score := range scores {
		if s.IgnoredNodes.Has(score.Name) {
			scores[i].Score = invalidScore
			continue
		}
		minScore = min(minScore, score.Score)
		maxScore = max(maxScore, score.Score)
	}
	for i := range scores {
		switch {
		case scores[i].Score == invalidScore:
			scores[i].Score = 0
		case maxScore == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (maxScore + minScore - scores[i].Score) / maxScore
		}
	}
	return nil
}

func getPreScoreState(state *framework.CycleState) (*preScoreState, error) {
	data, err := state.Read(preScoreStateKey)
	if err != nil {
		return nil, err
	}
	s, ok := data.(*preScoreState)
	if !ok {
		return nil, fmt.Errorf("%s: cycle state holds %T, not the PreScore state", Name, data)
	}
	return s, nil
}

// topologyNormalizingWeight is log(size + 2), size being the number of
// domains among the filtered nodes.
func topologyNormalizingWeight(size int) float64 {
	return math.Log(float64(size + 2))
}

// scoreForCount is count * weight + (maxSkew - 1).
func scoreForCount(count int64, maxSkew int32, weight float64) float64 {
	return float64(count)*weight + float64(maxSkew-1)
}
