package interpodaffinity

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

const preScoreStateKey framework.StateKey = "PreScore" + Name

// scoreMap holds, per topology key and value, the summed term weights.
type scoreMap map[string]map[string]int64

func (m scoreMap) add(key, value string, weight int64) {
	if m[key] == nil {
		m[key] = map[string]int64{}
	}
	m[key][value] += weight
}

type preScoreState struct {
	topologyScore scoreMap
}

// Clone returns the state itself: it is never changed after PreScore.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore adds up, per domain, the weights of every preferred term that
// pairs the incoming pod with a pod in that domain: the incoming pod's
// preferred affinity (+weight) and anti-affinity (-weight) over existing
// pods, and existing pods' required affinity (+1), preferred affinity
// (+weight) and preferred anti-affinity (-weight) over the incoming pod.
// It asks to be skipped when nothing scored.
func (pl *InterPodAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, filteredNodes []*framework.NodeInfo) *framework.Status {
	if len(filteredNodes) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	lister := pl.handle.SnapshotSharedLister()
	if lister == nil {
		return framework.AsStatus(fmt.Errorf("%s: no snapshot lister", Name))
	}
	terms, err := parsePodTerms(pod)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("parsing pod: %w", err))
	}
	hasPreferred := len(terms.PreferredAffinity) > 0 || len(terms.PreferredAntiAffinity) > 0

	// Without preferred terms of its own, only pods with affinity terms can
	// score the incoming pod, so only their nodes need a look.
	var nodes []*framework.NodeInfo
	if hasPreferred {
		nodes, err = lister.List()
	} else {
		nodes, err = lister.HavePodsWithAffinityList()
	}
	if err != nil {
		return framework.AsStatus(fmt.Errorf("listing nodes: %w", err))
	}

	nsLabels := pl.newNamespaceLabelCache()
	podNSLabels := nsLabels.get(pod.Namespace)
	scores := scoreMap{}
	for _, nodeInfo := range nodes {
		node := nodeInfo.Node()
		if node == nil || len(node.Labels) == 0 {
			continue
		}
		existingPods := nodeInfo.PodsWithAffinity
		if hasPreferred {
			existingPods = nodeInfo.Pods
		}
		for _, existing := range existingPods {
			// Incoming pod's preferences over the existing pod.
			existingNSLabels := nsLabels.get(existing.Pod.Namespace)
			scores.processWeightedTerms(terms.PreferredAffinity, existing.Pod, existingNSLabels, node, 1)
			scores.processWeightedTerms(terms.PreferredAntiAffinity, existing.Pod, existingNSLabels, node, -1)

			// The existing pod's terms over the incoming pod.
			if existing.Pod.Spec.Affinity == nil {
				continue
			}
			existingTerms, err := parsePodTerms(existing.Pod)
			if err != nil {
				continue
			}
			for i := range existingTerms.RequiredAffinity {
				scores.processTerm(&existingTerms.RequiredAffinity[i], hardPodAffinityWeight, pod, podNSLabels, node, 1)
			}
			scores.processWeightedTerms(existingTerms.PreferredAffinity, pod, podNSLabels, node, 1)
			scores.processWeightedTerms(existingTerms.PreferredAntiAffinity, pod, podNSLabels, node, -1)
		}
	}
	if len(scores) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreStateKey, &preScoreState{topologyScore: scores})
	return nil
}

// processTerm adds weight*multiplier to the domain of node when the term
// matches pod.
func (m scoreMap) processTerm(t *affinityTerm, weight int32, pod *v1.Pod, nsLabels labels.Set, node *v1.Node, multiplier int32) {
	if !t.matches(pod, nsLabels) {
		return
	}
	if value, ok := node.Labels[t.TopologyKey]; ok {
		m.add(t.TopologyKey, value, int64(weight*multiplier))
	}
}

func (m scoreMap) processWeightedTerms(terms []weightedAffinityTerm, pod *v1.Pod, nsLabels labels.Set, node *v1.Node, multiplier int32) {
	for i := range terms {
		m.processTerm(&terms[i].affinityTerm, terms[i].Weight, pod, nsLabels, node, multiplier)
	}
}

// Score sums the weights of the node's domains. It may be negative;
// NormalizeScore rescales.
func (pl *InterPodAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(fmt.Errorf("node not found"))
	}
	s, err := getPreScoreState(state)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	var score int64
	for key, values := range s.topologyScore {
		if v, ok := node.Labels[key]; ok {
			score += values[v]
		}
	}
	return score, nil
}

// ScoreExtensions returns the plugin, which normalises its scores.
func (pl *InterPodAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps raw scores onto 0..100 by min-max:
// 100 * (score - min) / (max - min); all 0 when every node scored alike.
func (pl *InterPodAffinity) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	s, err := getPreScoreState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(s.topologyScore) == 0 {
		return nil
	}
	var minCount int64 = math.MaxInt64
	var maxCount int64 = math.MinInt64
	for _, score := range scores {
		minCount = min(minCount, score.Score)
		maxCount = max(maxCount, score.Score)
	}
	diff := maxCount - minCount
	for i := range scores {
		var f float64
		if diff > 0 {
			f = float64(framework.MaxNodeScore) * float64(scores[i].Score-minCount) / float64(diff)
		}
		scores[i].Score = int64(f)
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
