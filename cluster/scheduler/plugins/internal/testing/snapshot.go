package testing

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// NewNodeInfos builds a NodeInfo per node and adds each pod to the node
// its spec.nodeName names (pods naming no listed node are dropped). As a
// snapshot does, it sets every image's NumNodes to the number of nodes
// holding it, which ImageLocality reads.
func NewNodeInfos(nodes []*v1.Node, pods []*v1.Pod) []*framework.NodeInfo {
	byName := make(map[string]*framework.NodeInfo, len(nodes))
	out := make([]*framework.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		byName[n.Name] = ni
		out = append(out, ni)
	}
	for _, p := range pods {
		if ni, ok := byName[p.Spec.NodeName]; ok {
			ni.AddPod(p)
		}
	}
	holders := map[string]int{}
	for _, ni := range out {
		for name := range ni.ImageStates {
			holders[name]++
		}
	}
	for _, ni := range out {
		for name, state := range ni.ImageStates {
			state.NumNodes = holders[name]
		}
	}
	return out
}

// Handle is a framework.Handle over a fixed list of NodeInfos and an
// optional informer factory.
type Handle struct {
	lister    *lister
	informers framework.SharedInformerFactory
}

var _ framework.Handle = &Handle{}

// NewHandle returns a Handle listing nodeInfos. informers may be nil, as
// when the scheduler runs without Service and workload informers.
func NewHandle(nodeInfos []*framework.NodeInfo, informers framework.SharedInformerFactory) *Handle {
	return &Handle{lister: &lister{nodeInfos: nodeInfos}, informers: informers}
}

// SnapshotSharedLister lists the NodeInfos.
func (h *Handle) SnapshotSharedLister() framework.NodeInfoLister { return h.lister }

// SharedInformerFactory returns the factory given to NewHandle.
func (h *Handle) SharedInformerFactory() framework.SharedInformerFactory { return h.informers }

type lister struct{ nodeInfos []*framework.NodeInfo }

func (l *lister) List() ([]*framework.NodeInfo, error) { return l.nodeInfos, nil }

func (l *lister) Get(name string) (*framework.NodeInfo, error) {
	for _, ni := range l.nodeInfos {
		if ni.Node() != nil && ni.Node().Name == name {
			return ni, nil
		}
	}
	return nil, fmt.Errorf("nodeinfo not found for node name %q", name)
}

func (l *lister) HavePodsWithAffinityList() ([]*framework.NodeInfo, error) {
	var out []*framework.NodeInfo
	for _, ni := range l.nodeInfos {
		if len(ni.PodsWithAffinity) > 0 {
			out = append(out, ni)
		}
	}
	return out, nil
}

func (l *lister) HavePodsWithRequiredAntiAffinityList() ([]*framework.NodeInfo, error) {
	var out []*framework.NodeInfo
	for _, ni := range l.nodeInfos {
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			out = append(out, ni)
		}
	}
	return out, nil
}
