// Package statsapi holds the part of the kubelet's Summary API
// (k8s.io/kubelet/pkg/apis/stats/v1alpha1, served at /stats/summary) that
// klab's kubelet fills: per node and per container, CPU and memory. Field
// names and JSON are upstream's, so a reader of the real kubelet's summary
// reads klab's.
package statsapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Summary is a node's usage and the usage of the pods on it.
type Summary struct {
	Node NodeStats  `json:"node"`
	Pods []PodStats `json:"pods"`
}

// NodeStats is the node's usage as a whole.
type NodeStats struct {
	NodeName  string       `json:"nodeName"`
	StartTime metav1.Time  `json:"startTime"`
	CPU       *CPUStats    `json:"cpu,omitempty"`
	Memory    *MemoryStats `json:"memory,omitempty"`
}

// PodReference names a pod.
type PodReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

// PodStats is one pod's usage: its containers', and their sum.
type PodStats struct {
	PodRef     PodReference     `json:"podRef"`
	StartTime  metav1.Time      `json:"startTime"`
	Containers []ContainerStats `json:"containers"`
	CPU        *CPUStats        `json:"cpu,omitempty"`
	Memory     *MemoryStats     `json:"memory,omitempty"`
}

// ContainerStats is one running container's usage.
type ContainerStats struct {
	Name      string       `json:"name"`
	StartTime metav1.Time  `json:"startTime"`
	CPU       *CPUStats    `json:"cpu,omitempty"`
	Memory    *MemoryStats `json:"memory,omitempty"`
}

// CPUStats is CPU usage at Time.
type CPUStats struct {
	Time metav1.Time `json:"time"`
	// UsageNanoCores is the average rate since the kubelet's previous
	// sample, in billionths of a core; absent on the first sample.
	UsageNanoCores *uint64 `json:"usageNanoCores,omitempty"`
	// UsageCoreNanoSeconds is the cumulative CPU time, in nanoseconds.
	UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds,omitempty"`
}

// MemoryStats is memory usage at Time.
type MemoryStats struct {
	Time metav1.Time `json:"time"`
	// WorkingSetBytes is the memory in use that the kernel cannot
	// reclaim: what eviction and `kubectl top` look at.
	WorkingSetBytes *uint64 `json:"workingSetBytes,omitempty"`
}
