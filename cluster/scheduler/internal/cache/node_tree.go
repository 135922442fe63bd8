package cache

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// nodeTree orders node names the way upstream's does: nodes are grouped by
// zone, and the list takes one node from each zone in turn, so that a
// scheduling cycle that stops early (large clusters) still looks at every
// zone. Within a zone nodes keep the order they were added in.
type nodeTree struct {
	tree     map[string][]string // zone key -> node names
	zones    []string            // zone keys, in the order first seen
	numNodes int
}

func newNodeTree() *nodeTree {
	return &nodeTree{tree: make(map[string][]string)}
}

// zoneKey is upstream's zone key: region and zone from the well-known
// topology labels (the deprecated failure-domain labels as fallback),
// empty when the node has neither.
func zoneKey(node *v1.Node) string {
	labels := node.Labels
	zone, ok := labels[v1.LabelTopologyZone]
	if !ok {
		zone = labels[v1.LabelFailureDomainBetaZone]
	}
	region, ok := labels[v1.LabelTopologyRegion]
	if !ok {
		region = labels[v1.LabelFailureDomainBetaRegion]
	}
	if region == "" && zone == "" {
		return ""
	}
	// The NUL byte keeps "a:b" + "c" apart from "a" + "b:c".
	return region + ":\x00:" + zone
}

func (t *nodeTree) add(node *v1.Node) {
	zone := zoneKey(node)
	names, ok := t.tree[zone]
	if slices.Contains(names, node.Name) {
		return
	}
	if !ok {
		t.zones = append(t.zones, zone)
	}
	t.tree[zone] = append(names, node.Name)
	t.numNodes++
}

func (t *nodeTree) remove(node *v1.Node) {
	zone := zoneKey(node)
	names := t.tree[zone]
	i := slices.Index(names, node.Name)
	if i < 0 {
		return
	}
	names = slices.Delete(names, i, i+1)
	t.numNodes--
	if len(names) > 0 {
		t.tree[zone] = names
		return
	}
	delete(t.tree, zone)
	if j := slices.Index(t.zones, zone); j >= 0 {
		t.zones = slices.Delete(t.zones, j, j+1)
	}
}

func (t *nodeTree) update(oldNode, newNode *v1.Node) {
	if oldNode != nil && zoneKey(oldNode) == zoneKey(newNode) {
		return
	}
	if oldNode != nil {
		t.remove(oldNode)
	}
	t.add(newNode)
}

// list returns every node name, taking the i-th node of each zone in turn.
func (t *nodeTree) list() []string {
	out := make([]string, 0, t.numNodes)
	for i := 0; ; i++ {
		added := false
		for _, zone := range t.zones {
			if names := t.tree[zone]; i < len(names) {
				out = append(out, names[i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}
