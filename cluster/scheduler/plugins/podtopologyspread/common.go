package podtopologyspread

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/helper"
)

// topologySpreadConstraint is a v1.TopologySpreadConstraint with its
// selector parsed and its optional fields defaulted.
type topologySpreadConstraint struct {
	MaxSkew            int32
	TopologyKey        string
	Selector           labels.Selector
	MinDomains         int32
	NodeAffinityPolicy v1.NodeInclusionPolicy
	NodeTaintsPolicy   v1.NodeInclusionPolicy
}

// matchNodeInclusionPolicies reports whether the node's domain counts for
// this constraint: by default (Honor) only nodes that pass the pod's node
// affinity and nodeSelector do; node taints are ignored unless the
// constraint says Honor.
func (c *topologySpreadConstraint) matchNodeInclusionPolicies(pod *v1.Pod, node *v1.Node, required nodeaffinity.RequiredNodeAffinity) bool {
	if c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor {
		// As upstream, a term that fails to parse simply does not match.
		if match, _ := required.Match(node); !match {
			return false
		}
	}
	if c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
		if _, untolerated := helper.FindMatchingUntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations, helper.DoNotScheduleTaintsFilterFunc()); untolerated {
			return false
		}
	}
	return true
}

// constraintsFor returns the pod's constraints with the given action, or,
// when it has none at all, the default constraints with that action.
func (pl *PodTopologySpread) constraintsFor(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]topologySpreadConstraint, error) {
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return filterTopologySpreadConstraints(pod.Spec.TopologySpreadConstraints, pod.Labels, action)
	}
	return pl.buildDefaultConstraints(pod, action)
}

// buildDefaultConstraints applies the default constraints with the
// selector of the pod's siblings (helper.DefaultSelector). A pod that no
// Service or workload selects gets none.
func (pl *PodTopologySpread) buildDefaultConstraints(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]topologySpreadConstraint, error) {
	constraints, err := filterTopologySpreadConstraints(pl.defaultConstraints, pod.Labels, action)
	if err != nil || len(constraints) == 0 {
		return nil, err
	}
	selector := helper.DefaultSelector(pod, pl.listers)
	if selector.Empty() {
		return nil, nil
	}
	for i := range constraints {
		constraints[i].Selector = selector
	}
	return constraints, nil
}

// filterTopologySpreadConstraints parses the constraints with the given
// action. matchLabelKeys add the pod's values for those keys to the
// selector; minDomains defaults to 1, nodeAffinityPolicy to Honor and
// nodeTaintsPolicy to Ignore, as upstream.
func filterTopologySpreadConstraints(constraints []v1.TopologySpreadConstraint, podLabels map[string]string, action v1.UnsatisfiableConstraintAction) ([]topologySpreadConstraint, error) {
	var out []topologySpreadConstraint
	for _, c := range constraints {
		if c.WhenUnsatisfiable != action {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, err
		}
		if len(c.MatchLabelKeys) > 0 {
			matchLabels := make(labels.Set)
			for _, key := range c.MatchLabelKeys {
				if value, ok := podLabels[key]; ok {
					matchLabels[key] = value
				}
			}
			if len(matchLabels) > 0 {
				selector = mergeLabelSetWithSelector(matchLabels, selector)
			}
		}
		tsc := topologySpreadConstraint{
			MaxSkew:            c.MaxSkew,
			TopologyKey:        c.TopologyKey,
			Selector:           selector,
			MinDomains:         1,
			NodeAffinityPolicy: v1.NodeInclusionPolicyHonor,
			NodeTaintsPolicy:   v1.NodeInclusionPolicyIgnore,
		}
		if c.MinDomains != nil {
			tsc.MinDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			tsc.NodeAffinityPolicy = *c.NodeAffinityPolicy
		}
		if c.NodeTaintsPolicy != nil {
			tsc.NodeTaintsPolicy = *c.NodeTaintsPolicy
		}
		out = append(out, tsc)
	}
	return out, nil
}

func mergeLabelSetWithSelector(matchLabels labels.Set, s labels.Selector) labels.Selector {
	merged := labels.SelectorFromSet(matchLabels)
	reqs, ok := s.Requirements()
	if !ok {
		return s
	}
	return merged.Add(reqs...)
}

// nodeLabelsMatchSpreadConstraints reports whether the node has every
// constraint's topology key.
func nodeLabelsMatchSpreadConstraints(nodeLabels map[string]string, constraints []topologySpreadConstraint) bool {
	for _, c := range constraints {
		if _, ok := nodeLabels[c.TopologyKey]; !ok {
			return false
		}
	}
	return true
}

// countPodsMatchSelector counts the pods in namespace ns that the selector
// matches, leaving out terminating pods: they are on their way out.
func countPodsMatchSelector(podInfos []*framework.PodInfo, selector labels.Selector, ns string) int {
	if selector.Empty() {
		return 0
	}
	count := 0
	for _, pi := range podInfos {
		p := pi.Pod
		if p.DeletionTimestamp != nil || p.Namespace != ns {
			continue
		}
		if selector.Matches(labels.Set(p.Labels)) {
			count++
		}
	}
	return count
}
