package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Non-zero defaults, as upstream's: when scoring, a container without a
// request counts as asking this much, so that a node full of pods that
// request nothing does not look empty.
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

// Resource is an amount of compute resources.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is the node's pod capacity (allocatable only).
	AllowedPodNumber int
	// ScalarResources holds extended resources by name.
	ScalarResources map[v1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl v1.ResourceList) *Resource {
	r := &Resource{}
	r.Add(rl)
	return r
}

// Add adds a ResourceList.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += int(q.Value())
		default:
			if r.ScalarResources == nil {
				r.ScalarResources = make(map[v1.ResourceName]int64)
			}
			r.ScalarResources[name] += q.Value()
		}
	}
}

// Clone copies r.
func (r *Resource) Clone() *Resource {
	out := *r
	if r.ScalarResources != nil {
		out.ScalarResources = make(map[v1.ResourceName]int64, len(r.ScalarResources))
		for k, v := range r.ScalarResources {
			out.ScalarResources[k] = v
		}
	}
	return &out
}

// PodRequests returns what a pod asks for, as upstream computes it: the
// larger of the sum of its containers' requests and each init container's
// (restartable init containers, sidecars, add to both), plus the pod's
// overhead.
func PodRequests(pod *v1.Pod) v1.ResourceList {
	reqs := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		addList(reqs, pod.Spec.Containers[i].Resources.Requests)
	}
	sidecars := v1.ResourceList{}
	initMax := v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if isSidecar(c) {
			addList(reqs, c.Resources.Requests)
			addList(sidecars, c.Resources.Requests)
			continue
		}
		// A regular init container runs beside the sidecars started before it.
		need := v1.ResourceList{}
		addList(need, sidecars)
		addList(need, c.Resources.Requests)
		maxList(initMax, need)
	}
	maxList(reqs, initMax)
	addList(reqs, pod.Spec.Overhead)
	return reqs
}

// PodNonZeroRequests returns the pod's cpu and memory requests with the
// non-zero defaults standing in for containers that request nothing.
func PodNonZeroRequests(pod *v1.Pod) (milliCPU, memory int64) {
	for i := range pod.Spec.Containers {
		cpu, mem := nonZero(pod.Spec.Containers[i].Resources.Requests)
		milliCPU += cpu
		memory += mem
	}
	var initCPU, initMem, sidecarCPU, sidecarMem int64
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cpu, mem := nonZero(c.Resources.Requests)
		if isSidecar(c) {
			// A sidecar runs beside the app containers and after it
			// starts, beside every later init container.
			milliCPU, memory = milliCPU+cpu, memory+mem
			sidecarCPU, sidecarMem = sidecarCPU+cpu, sidecarMem+mem
			continue
		}
		initCPU, initMem = max(initCPU, sidecarCPU+cpu), max(initMem, sidecarMem+mem)
	}
	milliCPU, memory = max(milliCPU, initCPU), max(memory, initMem)
	if cpu, ok := pod.Spec.Overhead[v1.ResourceCPU]; ok {
		milliCPU += cpu.MilliValue()
	}
	if mem, ok := pod.Spec.Overhead[v1.ResourceMemory]; ok {
		memory += mem.Value()
	}
	return milliCPU, memory
}

// isSidecar reports whether an init container is a sidecar: restartable,
// running for the pod's whole life.
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

func nonZero(rl v1.ResourceList) (milliCPU, memory int64) {
	milliCPU, memory = DefaultMilliCPURequest, DefaultMemoryRequest
	if q, ok := rl[v1.ResourceCPU]; ok {
		milliCPU = q.MilliValue()
	}
	if q, ok := rl[v1.ResourceMemory]; ok {
		memory = q.Value()
	}
	return milliCPU, memory
}

func addList(dst, src v1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; ok {
			cur.Add(q)
			dst[name] = cur
		} else {
			dst[name] = q.DeepCopy()
		}
	}
}

func maxList(dst, src v1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

// PodInfo is a pod on a node, as the scheduler sees it.
type PodInfo struct {
	Pod *v1.Pod
}

// ImageStateSummary says how big an image is and on how many nodes it is,
// for ImageLocality.
type ImageStateSummary struct {
	Size     int64
	NumNodes int
}

// HostPort is one host port in use on a node.
type HostPort struct {
	IP       string
	Protocol v1.Protocol
	Port     int32
}

// NodeInfo is one node and what is on it: the pods bound to it and those
// the scheduler has assumed there but not yet seen bound.
type NodeInfo struct {
	node *v1.Node

	// Pods are the node's pods; PodsWithAffinity and
	// PodsWithRequiredAntiAffinity the subsets with pod (anti-)affinity.
	Pods                         []*PodInfo
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo

	// UsedPorts are the host ports the pods use.
	UsedPorts []HostPort

	// Requested sums the pods' requests; NonZeroRequested likewise with
	// the non-zero defaults (for scoring). Allocatable is the node's.
	Requested        *Resource
	NonZeroRequested *Resource
	Allocatable      *Resource

	// ImageStates are the images on the node, by every name they have.
	ImageStates map[string]*ImageStateSummary

	// Generation increases on every change, so a snapshot can tell which
	// nodes to copy again.
	Generation int64
}

// NewNodeInfo returns a NodeInfo holding the pods, without a node.
func NewNodeInfo(pods ...*v1.Pod) *NodeInfo {
	ni := &NodeInfo{
		Requested:        &Resource{},
		NonZeroRequested: &Resource{},
		Allocatable:      &Resource{},
		ImageStates:      make(map[string]*ImageStateSummary),
	}
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// Node returns the node, or nil.
func (n *NodeInfo) Node() *v1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// SetNode sets the node and takes its allocatable resources and images.
// ImageStateSummary.NumNodes is left at 1; a snapshot that knows all nodes
// sets it.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.Allocatable = NewResource(node.Status.Allocatable)
	n.ImageStates = make(map[string]*ImageStateSummary)
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			n.ImageStates[name] = &ImageStateSummary{Size: img.SizeBytes, NumNodes: 1}
		}
	}
	n.Generation++
}

// AddPod adds a pod's requests, ports and affinity to the node.
func (n *NodeInfo) AddPod(pod *v1.Pod) {
	pi := &PodInfo{Pod: pod}
	n.Pods = append(n.Pods, pi)
	if hasAffinity(pod) {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if hasRequiredAntiAffinity(pod) {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.update(pod, 1)
	n.Generation++
}

// RemovePod removes a pod (matched by UID) from the node.
func (n *NodeInfo) RemovePod(pod *v1.Pod) error {
	idx := -1
	for i, pi := range n.Pods {
		if pi.Pod.UID == pod.UID {
			idx = i
			break
		}
	}
	if idx < 0 {
		return fmt.Errorf("pod %s/%s is not on node %s", pod.Namespace, pod.Name, n.nodeName())
	}
	old := n.Pods[idx].Pod
	n.Pods = append(n.Pods[:idx], n.Pods[idx+1:]...)
	n.PodsWithAffinity = removeUID(n.PodsWithAffinity, pod)
	n.PodsWithRequiredAntiAffinity = removeUID(n.PodsWithRequiredAntiAffinity, pod)
	n.update(old, -1)
	n.Generation++
	return nil
}

func (n *NodeInfo) nodeName() string {
	if n.node == nil {
		return "<none>"
	}
	return n.node.Name
}

func removeUID(list []*PodInfo, pod *v1.Pod) []*PodInfo {
	for i, pi := range list {
		if pi.Pod.UID == pod.UID {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// update adds (sign 1) or removes (sign -1) a pod's resources and ports.
func (n *NodeInfo) update(pod *v1.Pod, sign int64) {
	req := NewResource(PodRequests(pod))
	n.Requested.MilliCPU += sign * req.MilliCPU
	n.Requested.Memory += sign * req.Memory
	n.Requested.EphemeralStorage += sign * req.EphemeralStorage
	for name, v := range req.ScalarResources {
		if n.Requested.ScalarResources == nil {
			n.Requested.ScalarResources = make(map[v1.ResourceName]int64)
		}
		n.Requested.ScalarResources[name] += sign * v
	}
	cpu, mem := PodNonZeroRequests(pod)
	n.NonZeroRequested.MilliCPU += sign * cpu
	n.NonZeroRequested.Memory += sign * mem
	containers := pod.Spec.Containers
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			containers = append(containers[:len(containers):len(containers)], pod.Spec.InitContainers[i])
		}
	}
	for _, c := range containers {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := HostPort{IP: p.HostIP, Protocol: p.Protocol, Port: p.HostPort}
			if hp.IP == "" {
				hp.IP = "0.0.0.0"
			}
			if hp.Protocol == "" {
				hp.Protocol = v1.ProtocolTCP
			}
			if sign > 0 {
				n.UsedPorts = append(n.UsedPorts, hp)
				continue
			}
			for i, u := range n.UsedPorts {
				if u == hp {
					n.UsedPorts = append(n.UsedPorts[:i], n.UsedPorts[i+1:]...)
					break
				}
			}
		}
	}
}

// Clone copies the NodeInfo; the pods themselves are shared (never
// mutated) and the slices are new.
func (n *NodeInfo) Clone() *NodeInfo {
	out := &NodeInfo{
		node:                         n.node,
		Pods:                         append([]*PodInfo(nil), n.Pods...),
		PodsWithAffinity:             append([]*PodInfo(nil), n.PodsWithAffinity...),
		PodsWithRequiredAntiAffinity: append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...),
		UsedPorts:                    append([]HostPort(nil), n.UsedPorts...),
		Requested:                    n.Requested.Clone(),
		NonZeroRequested:             n.NonZeroRequested.Clone(),
		Allocatable:                  n.Allocatable.Clone(),
		ImageStates:                  make(map[string]*ImageStateSummary, len(n.ImageStates)),
		Generation:                   n.Generation,
	}
	for k, v := range n.ImageStates {
		c := *v
		out.ImageStates[k] = &c
	}
	return out
}

func hasAffinity(pod *v1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)
}

func hasRequiredAntiAffinity(pod *v1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}
