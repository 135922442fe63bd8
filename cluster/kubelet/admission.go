package kubelet

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// admissionFailure is why the kubelet refuses a pod the scheduler sent
// it: the pod fails with Reason and "Pod was rejected: "+Message.
type admissionFailure struct {
	Reason, Message string
}

// podRequests is what a pod asks for: the sum over its containers, or the
// largest init container if that is more (upstream's PodRequests without
// overhead or sidecars).
func podRequests(pod *v1.Pod) v1.ResourceList {
	out := v1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}

// admit is the resource part of upstream's lifecycle predicate admit
// handler: a pod fits when its requests and the pods already admitted
// stay within the node's allocatable cpu, memory and pod count. It
// catches what the scheduler could not see, such as a pod created with
// spec.nodeName set.
func admit(pod *v1.Pod, others []*v1.Pod, allocatable v1.ResourceList) *admissionFailure {
	usedPods := int64(len(others))
	if max := allocatable[v1.ResourcePods]; !max.IsZero() && usedPods+1 > max.Value() {
		return insufficient(v1.ResourcePods, 1, usedPods, max.Value())
	}
	want := podRequests(pod)
	used := v1.ResourceList{}
	for _, o := range others {
		for name, q := range podRequests(o) {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		req, ok := want[name]
		if !ok || req.IsZero() {
			continue
		}
		capacity, ok := allocatable[name]
		if !ok {
			continue
		}
		u := used[name]
		if value(name, req)+value(name, u) > value(name, capacity) {
			return insufficient(name, value(name, req), value(name, u), value(name, capacity))
		}
	}
	return nil
}

// value is a quantity as upstream's message counts it: millicores for
// cpu, bytes otherwise.
func value(name v1.ResourceName, q resource.Quantity) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func insufficient(name v1.ResourceName, requested, used, capacity int64) *admissionFailure {
	return &admissionFailure{
		Reason:  fmt.Sprintf("OutOf%s", name),
		Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity),
	}
}
