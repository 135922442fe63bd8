package interpodaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

const preFilterStateKey framework.StateKey = "PreFilter" + Name

// Reasons, worded as upstream's.
const (
	// ErrReasonExistingAntiAffinityRulesNotMatch: an existing pod's
	// anti-affinity forbids the incoming pod in the node's domain.
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	// ErrReasonAffinityRulesNotMatch: the incoming pod's affinity finds no
	// matching pod in the node's domain.
	ErrReasonAffinityRulesNotMatch = "node(s) didn't match pod affinity rules"
	// ErrReasonAntiAffinityRulesNotMatch: the incoming pod's anti-affinity
	// finds a matching pod in the node's domain.
	ErrReasonAntiAffinityRulesNotMatch = "node(s) didn't match pod anti-affinity rules"
)

// preFilterState counts, per domain, the pods that matter to Filter.
type preFilterState struct {
	terms *podTerms
	// existingAntiAffinityCounts: existing pods' required anti-affinity
	// terms that match the incoming pod, by the domain of their node.
	existingAntiAffinityCounts map[topologyPair]int64
	// affinityCounts: existing pods matching all of the incoming pod's
	// required affinity terms, by domain.
	affinityCounts map[topologyPair]int64
	// antiAffinityCounts: existing pods matching one of the incoming pod's
	// required anti-affinity terms, by domain.
	antiAffinityCounts map[topologyPair]int64
	// selfMatch says the incoming pod matches all its own affinity terms.
	selfMatch bool
}

// Clone returns the state itself: it is never changed after PreFilter
// (klab's framework has no PreFilter extensions that would add or remove
// pods hypothetically, as upstream's preemption does).
func (s *preFilterState) Clone() framework.StateData { return s }

// PreFilter walks the snapshot once and counts, per domain, the pods the
// incoming pod's required terms match and the existing pods whose
// required anti-affinity the incoming pod matches. It asks to be skipped
// when neither the pod nor any existing pod has required terms.
func (pl *InterPodAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	terms, err := parsePodTerms(pod)
	if err != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("parsing pod: %v", err))
	}
	var withRequiredAntiAffinity []*framework.NodeInfo
	for _, n := range nodes {
		if len(n.PodsWithRequiredAntiAffinity) > 0 {
			withRequiredAntiAffinity = append(withRequiredAntiAffinity, n)
		}
	}
	if len(withRequiredAntiAffinity) == 0 && len(terms.RequiredAffinity) == 0 && len(terms.RequiredAntiAffinity) == 0 {
		return framework.NewStatus(framework.Skip)
	}

	nsLabels := pl.newNamespaceLabelCache()
	s := &preFilterState{
		terms:                      terms,
		existingAntiAffinityCounts: map[topologyPair]int64{},
		affinityCounts:             map[topologyPair]int64{},
		antiAffinityCounts:         map[topologyPair]int64{},
	}
	podNSLabels := nsLabels.get(pod.Namespace)
	for _, nodeInfo := range withRequiredAntiAffinity {
		node := nodeInfo.Node()
		if node == nil {
			continue
		}
		for _, existing := range nodeInfo.PodsWithRequiredAntiAffinity {
			existingTerms, err := parsePodTerms(existing.Pod)
			if err != nil {
				// A pod that was admitted with a term that does not parse
				// cannot constrain others.
				continue
			}
			for i := range existingTerms.RequiredAntiAffinity {
				t := &existingTerms.RequiredAntiAffinity[i]
				if value, ok := node.Labels[t.TopologyKey]; ok && t.matches(pod, podNSLabels) {
					s.existingAntiAffinityCounts[topologyPair{t.TopologyKey, value}]++
				}
			}
		}
	}

	if len(terms.RequiredAffinity) > 0 || len(terms.RequiredAntiAffinity) > 0 {
		for _, nodeInfo := range nodes {
			node := nodeInfo.Node()
			if node == nil {
				continue
			}
			for _, existing := range nodeInfo.Pods {
				existingNSLabels := nsLabels.get(existing.Pod.Namespace)
				if matchesAll(terms.RequiredAffinity, existing.Pod, existingNSLabels) {
					for _, t := range terms.RequiredAffinity {
						if value, ok := node.Labels[t.TopologyKey]; ok {
							s.affinityCounts[topologyPair{t.TopologyKey, value}]++
						}
					}
				}
				for i := range terms.RequiredAntiAffinity {
					t := &terms.RequiredAntiAffinity[i]
					if value, ok := node.Labels[t.TopologyKey]; ok && t.matches(existing.Pod, existingNSLabels) {
						s.antiAffinityCounts[topologyPair{t.TopologyKey, value}]++
					}
				}
			}
		}
	}
	s.selfMatch = matchesAll(terms.RequiredAffinity, pod, podNSLabels)
	state.Write(preFilterStateKey, s)
	return nil
}

// matchesAll reports whether the pod matches every term; false for none.
func matchesAll(terms []affinityTerm, pod *v1.Pod, nsLabels labels.Set) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].matches(pod, nsLabels) {
			return false
		}
	}
	return true
}

// Filter checks, in upstream's order, the pod's affinity (no matching pod
// in the domain: UnschedulableAndUnresolvable, as evicting pods cannot add
// one), its anti-affinity and the existing pods' anti-affinity (both
// Unschedulable: evicting the matching pods would clear the domain).
func (pl *InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.AsStatus(fmt.Errorf("node not found"))
	}
	data, err := state.Read(preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s, ok := data.(*preFilterState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("%s: cycle state holds %T, not the PreFilter state", Name, data))
	}
	if !satisfyPodAffinity(s, node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	if !satisfyPodAntiAffinity(s, node) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
	}
	if !satisfyExistingPodsAntiAffinity(s, node) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
	}
	return nil
}

// satisfyPodAffinity requires, for every affinity term, the node's domain
// to hold a pod matching all the terms. The node must have every term's
// topology key.
func satisfyPodAffinity(s *preFilterState, node *v1.Node) bool {
	podsExist := true
	for _, t := range s.terms.RequiredAffinity {
		value, ok := node.Labels[t.TopologyKey]
		if !ok {
			return false
		}
		if s.affinityCounts[topologyPair{t.TopologyKey, value}] <= 0 {
			podsExist = false
		}
	}
	if podsExist {
		return true
	}
	// The first pod of a group with affinity to itself (a StatefulSet
	// whose replicas want to share a zone) would wait forever for a peer.
	// So when no pod anywhere matches the terms and the pod matches them
	// itself, any node carrying the topology keys will do.
	return len(s.affinityCounts) == 0 && s.selfMatch
}

// satisfyPodAntiAffinity requires no domain of the node to hold a pod
// matching one of the pod's anti-affinity terms.
func satisfyPodAntiAffinity(s *preFilterState, node *v1.Node) bool {
	for _, t := range s.terms.RequiredAntiAffinity {
		if value, ok := node.Labels[t.TopologyKey]; ok && s.antiAffinityCounts[topologyPair{t.TopologyKey, value}] > 0 {
			return false
		}
	}
	return true
}

// satisfyExistingPodsAntiAffinity requires that no existing pod's
// anti-affinity term, matching the incoming pod, covers one of the node's
// domains.
func satisfyExistingPodsAntiAffinity(s *preFilterState, node *v1.Node) bool {
	if len(s.existingAntiAffinityCounts) == 0 {
		return true
	}
	for key, value := range node.Labels {
		if s.existingAntiAffinityCounts[topologyPair{key, value}] > 0 {
			return false
		}
	}
	return true
}
