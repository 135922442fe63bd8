package endpointsliceutil

import (
	"reflect"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// ServicesForPod returns the keys (namespace/name) of the Services whose
// selector matches podLabels in namespace. A Service without a selector
// selects nothing: its endpoints are written by hand.
func ServicesForPod(lister corelisters.ServiceLister, namespace string, podLabels labels.Set) (sets.Set[string], error) {
	services, err := lister.Services(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	keys := sets.New[string]()
	for _, svc := range services {
		if svc.Spec.Selector == nil {
			continue
		}
		if labels.ValidatedSetSelector(svc.Spec.Selector).Matches(podLabels) {
			key, err := cache.MetaNamespaceKeyFunc(svc)
			if err != nil {
				return nil, err
			}
			keys.Insert(key)
		}
	}
	return keys, nil
}

// ServicesToUpdateOnPodChange returns the Services a pod update concerns.
// An update that changes nothing an endpoint shows (a resync, an
// annotation) concerns none. If only the pod's labels (or hostname and
// subdomain) changed, only the Services it joined or left need a sync; if
// its endpoint changed too (readiness, IPs, deletion), every Service that
// selected it before or after does.
func ServicesToUpdateOnPodChange(lister corelisters.ServiceLister, oldPod, newPod *corev1.Pod) (sets.Set[string], error) {
	if oldPod.ResourceVersion == newPod.ResourceVersion {
		return nil, nil
	}
	podChanged, labelsChanged := podEndpointsChanged(oldPod, newPod)
	if !podChanged && !labelsChanged {
		return nil, nil
	}
	current, err := ServicesForPod(lister, newPod.Namespace, newPod.Labels)
	if err != nil {
		return nil, err
	}
	if !labelsChanged {
		return current, nil
	}
	previous, err := ServicesForPod(lister, oldPod.Namespace, oldPod.Labels)
	if err != nil {
		return nil, err
	}
	if podChanged {
		return current.Union(previous), nil
	}
	return current.SymmetricDifference(previous), nil
}

// podEndpointsChanged reports whether the pod's endpoint may have changed,
// and whether the Services selecting it may have. Name, namespace and UID
// never change, and the node name is set before the pod has an IP.
func podEndpointsChanged(oldPod, newPod *corev1.Pod) (podChanged, labelsChanged bool) {
	labelsChanged = !reflect.DeepEqual(oldPod.Labels, newPod.Labels) ||
		oldPod.Spec.Hostname != newPod.Spec.Hostname || oldPod.Spec.Subdomain != newPod.Spec.Subdomain
	if (oldPod.DeletionTimestamp == nil) != (newPod.DeletionTimestamp == nil) {
		return true, labelsChanged
	}
	if controllerutil.IsPodReady(oldPod) != controllerutil.IsPodReady(newPod) {
		return true, labelsChanged
	}
	if oldPod.Status.PodIP != newPod.Status.PodIP || len(oldPod.Status.PodIPs) != len(newPod.Status.PodIPs) {
		return true, labelsChanged
	}
	for i := range oldPod.Status.PodIPs {
		if oldPod.Status.PodIPs[i].IP != newPod.Status.PodIPs[i].IP {
			return true, labelsChanged
		}
	}
	return false, labelsChanged
}
