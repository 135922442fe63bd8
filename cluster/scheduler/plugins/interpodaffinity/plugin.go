// Package interpodaffinity places pods relative to other pods: pod
// affinity asks to run in the same topology domain (node, zone) as pods
// matching a selector, anti-affinity asks to stay out of such domains.
// Required terms filter, in both directions: the incoming pod's terms, and
// existing pods' anti-affinity terms that the incoming pod would violate.
// Preferred terms score, again in both directions.
package interpodaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// Name is the plugin's name in profiles and FailedScheduling messages.
const Name = "InterPodAffinity"

// hardPodAffinityWeight is upstream's default HardPodAffinityWeight: an
// existing pod's required affinity term that the incoming pod matches
// also draws the incoming pod towards it, with this weight.
const hardPodAffinityWeight int32 = 1

// InterPodAffinity filters and scores nodes by pod (anti-)affinity.
type InterPodAffinity struct {
	handle framework.Handle
	// nsLister resolves namespaceSelectors; nil without an informer
	// factory, and then namespaces have no labels.
	nsLister corelisters.NamespaceLister
}

var (
	_ framework.PreFilterPlugin = &InterPodAffinity{}
	_ framework.FilterPlugin    = &InterPodAffinity{}
	_ framework.PreScorePlugin  = &InterPodAffinity{}
	_ framework.ScorePlugin     = &InterPodAffinity{}
)

// New builds the plugin. It reads the snapshot through h and, when h has
// an informer factory, registers a Namespace informer with it (the caller
// starts the factory after building the plugins).
func New(_ context.Context, h framework.Handle) (framework.Plugin, error) {
	if h == nil {
		return nil, fmt.Errorf("%s needs a framework handle", Name)
	}
	pl := &InterPodAffinity{handle: h}
	if f := h.SharedInformerFactory(); f != nil {
		pl.nsLister = f.Core().V1().Namespaces().Lister()
	}
	return pl, nil
}

// Name returns the plugin's name.
func (pl *InterPodAffinity) Name() string { return Name }

// namespaceLabels returns a namespace's labels, nil when unknown.
func (pl *InterPodAffinity) namespaceLabels(name string) labels.Set {
	if pl.nsLister == nil {
		return nil
	}
	ns, err := pl.nsLister.Get(name)
	if err != nil {
		return nil
	}
	return ns.Labels
}

// namespaceLabelCache looks each namespace up once per cycle.
type namespaceLabelCache struct {
	pl    *InterPodAffinity
	known map[string]labels.Set
}

func (pl *InterPodAffinity) newNamespaceLabelCache() *namespaceLabelCache {
	return &namespaceLabelCache{pl: pl, known: map[string]labels.Set{}}
}

func (c *namespaceLabelCache) get(name string) labels.Set {
	if l, ok := c.known[name]; ok {
		return l
	}
	l := c.pl.namespaceLabels(name)
	c.known[name] = l
	return l
}

// affinityTerm is a v1.PodAffinityTerm with its selectors parsed.
type affinityTerm struct {
	// Namespaces are the namespaces named by the term; with neither
	// namespaces nor a namespaceSelector, the owning pod's namespace.
	Namespaces        sets.Set[string]
	Selector          labels.Selector
	TopologyKey       string
	NamespaceSelector labels.Selector
}

// matches reports whether the pod, in a namespace with labels nsLabels,
// is one the term selects.
func (t *affinityTerm) matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if t.Namespaces.Has(pod.Namespace) || t.NamespaceSelector.Matches(nsLabels) {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

type weightedAffinityTerm struct {
	affinityTerm
	Weight int32
}

// newAffinityTerm parses a term of owner. A nil labelSelector selects no
// pod and a nil namespaceSelector no namespace; an empty one ({}) selects
// all.
func newAffinityTerm(owner *v1.Pod, term *v1.PodAffinityTerm) (affinityTerm, error) {
	selector, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return affinityTerm{}, err
	}
	nsSelector, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
	if err != nil {
		return affinityTerm{}, err
	}
	namespaces := sets.New(term.Namespaces...)
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		namespaces.Insert(owner.Namespace)
	}
	return affinityTerm{Namespaces: namespaces, Selector: selector, TopologyKey: term.TopologyKey, NamespaceSelector: nsSelector}, nil
}

// podTerms are a pod's four kinds of terms, parsed.
type podTerms struct {
	RequiredAffinity      []affinityTerm
	RequiredAntiAffinity  []affinityTerm
	PreferredAffinity     []weightedAffinityTerm
	PreferredAntiAffinity []weightedAffinityTerm
}

func parsePodTerms(pod *v1.Pod) (*podTerms, error) {
	out := &podTerms{}
	a := pod.Spec.Affinity
	if a == nil {
		return out, nil
	}
	var err error
	if a.PodAffinity != nil {
		if out.RequiredAffinity, err = parseTerms(pod, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			return nil, err
		}
		if out.PreferredAffinity, err = parseWeightedTerms(pod, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution); err != nil {
			return nil, err
		}
	}
	if a.PodAntiAffinity != nil {
		if out.RequiredAntiAffinity, err = parseTerms(pod, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			return nil, err
		}
		if out.PreferredAntiAffinity, err = parseWeightedTerms(pod, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseTerms(owner *v1.Pod, terms []v1.PodAffinityTerm) ([]affinityTerm, error) {
	out := make([]affinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(owner, &terms[i])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func parseWeightedTerms(owner *v1.Pod, terms []v1.WeightedPodAffinityTerm) ([]weightedAffinityTerm, error) {
	out := make([]weightedAffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(owner, &terms[i].PodAffinityTerm)
		if err != nil {
			return nil, err
		}
		out = append(out, weightedAffinityTerm{affinityTerm: t, Weight: terms[i].Weight})
	}
	return out, nil
}

// topologyPair is a domain: a topology key and one of its values.
type topologyPair struct {
	key   string
	value string
}
