package defaults

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podQOSClass computes a Pod's quality-of-service class from the CPU and
// memory its containers ask for, as the kubelet's qos helper does
// (pkg/apis/core/v1/helper/qos):
//
//   - BestEffort: no container sets a CPU or memory request or limit;
//   - Guaranteed: every container limits both CPU and memory, and the
//     summed requests equal the summed limits;
//   - Burstable: anything in between.
//
// The class decides which Pods the kubelet evicts first when a node runs
// short of memory, so it is fixed when the Pod is created.
func podQOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range containers {
		addQOSResources(requests, c.Resources.Requests)
		found := addQOSResources(limits, c.Resources.Limits)
		if !found[corev1.ResourceCPU] || !found[corev1.ResourceMemory] {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// addQOSResources adds the positive CPU and memory quantities of from to sum
// and reports which of the two it found.
func addQOSResources(sum, from corev1.ResourceList) map[corev1.ResourceName]bool {
	found := map[corev1.ResourceName]bool{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := from[name]
		if !ok || q.Cmp(resource.Quantity{}) <= 0 {
			continue
		}
		found[name] = true
		total := q.DeepCopy()
		if prev, ok := sum[name]; ok {
			total.Add(prev)
		}
		sum[name] = total
	}
	return found
}
