package defaults

import corev1 "k8s.io/api/core/v1"

// defaultLimitRange fills a Container limit's default from its max, and
// its defaultRequest from its default or else its min, as upstream's
// SetDefaults_LimitRangeItem: a LimitRange that only caps a resource still
// gives containers that name none a limit within the cap.
func defaultLimitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		if item.Default == nil {
			item.Default = corev1.ResourceList{}
		}
		if item.DefaultRequest == nil {
			item.DefaultRequest = corev1.ResourceList{}
		}
		for name, q := range item.Max {
			if _, ok := item.Default[name]; !ok {
				item.Default[name] = q.DeepCopy()
			}
		}
		for name, q := range item.Default {
			if _, ok := item.DefaultRequest[name]; !ok {
				item.DefaultRequest[name] = q.DeepCopy()
			}
		}
		for name, q := range item.Min {
			if _, ok := item.DefaultRequest[name]; !ok {
				item.DefaultRequest[name] = q.DeepCopy()
			}
		}
	}
}

// PodQOSClass recomputes a pod's QoS class after admission changed its
// containers' resources (the LimitRanger's defaults), as upstream sets
// it only after admission.
func PodQOSClass(pod *corev1.Pod) corev1.PodQOSClass { return podQOSClass(&pod.Spec) }
