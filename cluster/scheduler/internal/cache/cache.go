// Package cache is the scheduler's picture of the cluster, after upstream's
// scheduler cache: the nodes and the pods bound to them, as the informers
// report them, plus the pods the scheduler has assumed onto a node but not
// yet seen bound.
//
// Assuming is what lets the scheduler decide the next pod while the last
// one's binding is still on its way to the API server: the assumed pod
// already counts against its node. A pod's life in the cache:
//
//	AssumePod ──> binding ──> AddPod (the informer saw it bound: confirmed)
//	                 └──────> ForgetPod (the binding failed)
//
// Upstream also records when a binding call returns (FinishBinding), to
// expire an assumed pod whose binding never shows up; klab's bindings
// always end in success or failure, so nothing expires and that step is
// left out.
//
// Each scheduling cycle reads a Snapshot, a copy of the cache taken with
// UpdateSnapshot that only copies the nodes that changed since the last one.
package cache

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// Cache holds nodes and pods. It is safe for concurrent use: informer
// handlers write to it while the scheduling loop snapshots it.
type Cache struct {
	mu sync.Mutex
	// nodes holds a NodeInfo per node name. A NodeInfo without a node
	// keeps the pods of a node that was deleted (or not yet seen) until
	// they go too, as upstream does.
	nodes       map[string]*framework.NodeInfo
	tree        *nodeTree
	podStates   map[types.UID]*podState
	assumedPods map[types.UID]bool
	// imageNodes says which nodes have each image, for ImageLocality's
	// ImageStateSummary.NumNodes.
	imageNodes map[string]map[string]struct{}

	// generation numbers every change. NodeInfo counts its own changes per
	// node, which is not enough to tell a snapshot's copy of a deleted and
	// re-created node from the new one, so the cache stamps each changed
	// NodeInfo with the next number of a counter shared by all nodes, as
	// upstream does.
	generation       int64
	imagesGeneration int64
}

type podState struct {
	pod *v1.Pod
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{
		nodes:       make(map[string]*framework.NodeInfo),
		tree:        newNodeTree(),
		podStates:   make(map[types.UID]*podState),
		assumedPods: make(map[types.UID]bool),
		imageNodes:  make(map[string]map[string]struct{}),
	}
}

func podName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// touch stamps ni as changed.
func (c *Cache) touch(ni *framework.NodeInfo) {
	c.generation++
	ni.Generation = c.generation
}

// AssumePod adds a pod the scheduler has just placed (pod.Spec.NodeName
// set) before its binding is confirmed.
func (c *Cache) AssumePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("pod %v(%v) has no node to be assumed on", pod.UID, podName(pod))
	}
	if _, ok := c.podStates[pod.UID]; ok {
		return fmt.Errorf("pod %v(%v) is in the cache, so can't be assumed", pod.UID, podName(pod))
	}
	c.addPod(pod)
	c.podStates[pod.UID] = &podState{pod: pod}
	c.assumedPods[pod.UID] = true
	return nil
}

// ForgetPod removes an assumed pod whose binding failed.
func (c *Cache) ForgetPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.podStates[pod.UID]
	if !ok || !c.assumedPods[pod.UID] {
		return fmt.Errorf("pod %v(%v) wasn't assumed so cannot be forgotten", pod.UID, podName(pod))
	}
	if st.pod.Spec.NodeName != pod.Spec.NodeName {
		return fmt.Errorf("pod %v(%v) was assumed on %v but assigned to %v", pod.UID, podName(pod), st.pod.Spec.NodeName, pod.Spec.NodeName)
	}
	if err := c.removePod(st.pod); err != nil {
		return err
	}
	delete(c.podStates, pod.UID)
	delete(c.assumedPods, pod.UID)
	return nil
}

// AddPod adds a pod the informer shows bound to a node. For an assumed pod
// this is the confirmation: it stops being assumed.
func (c *Cache) AddPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.podStates[pod.UID]
	switch {
	case ok && c.assumedPods[pod.UID]:
		// The informer's copy wins, also if it landed elsewhere.
		if err := c.removePod(st.pod); err != nil {
			return err
		}
		c.addPod(pod)
		delete(c.assumedPods, pod.UID)
		st.pod = pod
	case !ok:
		c.addPod(pod)
		c.podStates[pod.UID] = &podState{pod: pod}
	default:
		return fmt.Errorf("pod %v(%v) was already in added state", pod.UID, podName(pod))
	}
	return nil
}

// UpdatePod replaces a bound pod.
func (c *Cache) UpdatePod(oldPod, newPod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.podStates[oldPod.UID]
	if !ok || c.assumedPods[oldPod.UID] {
		return fmt.Errorf("pod %v(%v) is not added to scheduler cache, so cannot be updated", oldPod.UID, podName(oldPod))
	}
	if err := c.removePod(st.pod); err != nil {
		return err
	}
	c.addPod(newPod)
	st.pod = newPod
	return nil
}

// RemovePod removes a bound pod that was deleted (or finished: the
// scheduler's informer does not list terminated pods).
func (c *Cache) RemovePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.podStates[pod.UID]
	if !ok {
		return fmt.Errorf("pod %v(%v) is not found in scheduler cache, so cannot be removed from it", pod.UID, podName(pod))
	}
	// The cached copy says where its resources were counted.
	if err := c.removePod(st.pod); err != nil {
		return err
	}
	delete(c.podStates, pod.UID)
	delete(c.assumedPods, pod.UID)
	return nil
}

// IsAssumedPod reports whether the pod is assumed and not yet confirmed.
func (c *Cache) IsAssumedPod(pod *v1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.assumedPods[pod.UID]
}

func (c *Cache) addPod(pod *v1.Pod) {
	ni, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		ni = framework.NewNodeInfo()
		c.nodes[pod.Spec.NodeName] = ni
	}
	ni.AddPod(pod)
	c.touch(ni)
}

func (c *Cache) removePod(pod *v1.Pod) error {
	ni, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		return fmt.Errorf("node %v not found when trying to remove pod %v(%v)", pod.Spec.NodeName, pod.UID, podName(pod))
	}
	if err := ni.RemovePod(pod); err != nil {
		return err
	}
	c.touch(ni)
	if ni.Node() == nil && len(ni.Pods) == 0 {
		delete(c.nodes, pod.Spec.NodeName)
	}
	return nil
}

// AddNode adds a node, or updates it if the cache already has it.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni, ok := c.nodes[node.Name]
	if !ok {
		ni = framework.NewNodeInfo()
		c.nodes[node.Name] = ni
	}
	c.tree.update(ni.Node(), node)
	c.setNode(ni, node)
}

// UpdateNode replaces a node.
func (c *Cache) UpdateNode(oldNode, newNode *v1.Node) {
	c.AddNode(newNode)
}

// RemoveNode removes a node. Its pods stay counted until they are removed
// too, so that a node re-created under the same name does not look empty.
func (c *Cache) RemoveNode(node *v1.Node) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni, ok := c.nodes[node.Name]
	if !ok || ni.Node() == nil {
		return fmt.Errorf("node %v is not found", node.Name)
	}
	c.tree.remove(ni.Node())
	c.setImages(node.Name, ni.Node(), nil)
	if len(ni.Pods) == 0 {
		delete(c.nodes, node.Name)
		return nil
	}
	pods := make([]*v1.Pod, 0, len(ni.Pods))
	for _, pi := range ni.Pods {
		pods = append(pods, pi.Pod)
	}
	ghost := framework.NewNodeInfo(pods...)
	c.touch(ghost)
	c.nodes[node.Name] = ghost
	return nil
}

func (c *Cache) setNode(ni *framework.NodeInfo, node *v1.Node) {
	c.setImages(node.Name, ni.Node(), node)
	ni.SetNode(node)
	c.touch(ni)
}

// setImages moves the node's entries in imageNodes from oldNode's images
// to newNode's (either may be nil).
func (c *Cache) setImages(name string, oldNode, newNode *v1.Node) {
	changed := false
	if oldNode != nil {
		for _, img := range oldNode.Status.Images {
			for _, n := range img.Names {
				if nodes, ok := c.imageNodes[n]; ok {
					delete(nodes, name)
					if len(nodes) == 0 {
						delete(c.imageNodes, n)
					}
					changed = true
				}
			}
		}
	}
	if newNode != nil {
		for _, img := range newNode.Status.Images {
			for _, n := range img.Names {
				nodes, ok := c.imageNodes[n]
				if !ok {
					nodes = make(map[string]struct{})
					c.imageNodes[n] = nodes
				}
				nodes[name] = struct{}{}
				changed = true
			}
		}
	}
	if changed {
		c.imagesGeneration++
	}
}

// NodeCount returns the number of nodes (not counting deleted nodes whose
// pods are still cached).
func (c *Cache) NodeCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tree.numNodes
}

// PodCount returns the number of cached pods, assumed ones included, and
// how many of them are assumed.
func (c *Cache) PodCount() (pods, assumed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.podStates), len(c.assumedPods)
}
