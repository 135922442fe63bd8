package cache

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// Snapshot is a copy of the cache that one scheduling cycle reads: plugins
// see the same nodes from PreFilter to Score however the cluster moves
// meanwhile. It implements framework.NodeInfoLister. A Snapshot is
// updated in place by UpdateSnapshot and read by one cycle at a time; it
// is not safe for concurrent updates and reads.
type Snapshot struct {
	nodeInfoMap                      map[string]*framework.NodeInfo
	nodeInfoList                     []*framework.NodeInfo
	havePodsWithAffinity             []*framework.NodeInfo
	havePodsWithRequiredAntiAffinity []*framework.NodeInfo
	// generation and imagesGeneration are the cache's counters when the
	// snapshot was last updated.
	generation       int64
	imagesGeneration int64
}

var _ framework.NodeInfoLister = (*Snapshot)(nil)

// NewEmptySnapshot returns a snapshot with no nodes, to be filled by
// Cache.UpdateSnapshot.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{nodeInfoMap: make(map[string]*framework.NodeInfo)}
}

// NewSnapshot returns a snapshot of the nodes with the pods placed on them
// (by pod.Spec.NodeName), for tests of plugins and of the scheduler.
func NewSnapshot(pods []*v1.Pod, nodes []*v1.Node) *Snapshot {
	c := New()
	for _, n := range nodes {
		c.AddNode(n)
	}
	for _, p := range pods {
		// A pod listed twice, or without a node, is the test's mistake;
		// it is left out rather than failing the snapshot.
		_ = c.AddPod(p)
	}
	s := NewEmptySnapshot()
	c.UpdateSnapshot(s)
	return s
}

// List returns the nodes, zone by zone in turn (see nodeTree).
func (s *Snapshot) List() ([]*framework.NodeInfo, error) { return s.nodeInfoList, nil }

// Get returns the named node.
func (s *Snapshot) Get(name string) (*framework.NodeInfo, error) {
	if ni, ok := s.nodeInfoMap[name]; ok && ni.Node() != nil {
		return ni, nil
	}
	return nil, fmt.Errorf("nodeinfo not found for node name %q", name)
}

// HavePodsWithAffinityList returns the nodes that run a pod with pod
// affinity or anti-affinity.
func (s *Snapshot) HavePodsWithAffinityList() ([]*framework.NodeInfo, error) {
	return s.havePodsWithAffinity, nil
}

// HavePodsWithRequiredAntiAffinityList returns the nodes that run a pod
// with required pod anti-affinity.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() ([]*framework.NodeInfo, error) {
	return s.havePodsWithRequiredAntiAffinity, nil
}

// NumNodes returns the number of nodes.
func (s *Snapshot) NumNodes() int { return len(s.nodeInfoList) }

// UpdateSnapshot brings s up to date: it copies the nodes that changed since
// s was last updated, drops the deleted ones, refreshes every node's
// ImageStateSummary.NumNodes when images moved, and rebuilds the lists when
// anything changed.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := map[string]bool{}
	for name, ni := range c.nodes {
		if ni.Node() == nil || ni.Generation <= s.generation {
			continue
		}
		s.nodeInfoMap[name] = ni.Clone()
		changed[name] = true
	}
	removed := false
	for name := range s.nodeInfoMap {
		if ni, ok := c.nodes[name]; !ok || ni.Node() == nil {
			delete(s.nodeInfoMap, name)
			removed = true
		}
	}
	if imagesMoved := c.imagesGeneration != s.imagesGeneration; imagesMoved || len(changed) > 0 {
		for name, ni := range s.nodeInfoMap {
			if imagesMoved || changed[name] {
				for image, st := range ni.ImageStates {
					st.NumNodes = len(c.imageNodes[image])
				}
			}
		}
	}
	if len(changed) > 0 || removed || s.nodeInfoList == nil {
		c.rebuildLists(s)
	}
	s.generation = c.generation
	s.imagesGeneration = c.imagesGeneration
}

func (c *Cache) rebuildLists(s *Snapshot) {
	names := c.tree.list()
	s.nodeInfoList = make([]*framework.NodeInfo, 0, len(names))
	// New slices, not truncated old ones: a plugin may still hold the
	// lists of the last cycle.
	s.havePodsWithAffinity = nil
	s.havePodsWithRequiredAntiAffinity = nil
	for _, name := range names {
		ni, ok := s.nodeInfoMap[name]
		if !ok {
			continue
		}
		s.nodeInfoList = append(s.nodeInfoList, ni)
		if len(ni.PodsWithAffinity) > 0 {
			s.havePodsWithAffinity = append(s.havePodsWithAffinity, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			s.havePodsWithRequiredAntiAffinity = append(s.havePodsWithRequiredAntiAffinity, ni)
		}
	}
}
