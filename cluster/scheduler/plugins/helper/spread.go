package helper

import (
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

var (
	rcKind = v1.SchemeGroupVersion.WithKind("ReplicationController")
	rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	ssKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// SpreadListers are the listers DefaultSelector reads. A nil lister is
// skipped, as if it listed nothing.
type SpreadListers struct {
	Services               corelisters.ServiceLister
	ReplicationControllers corelisters.ReplicationControllerLister
	ReplicaSets            appslisters.ReplicaSetLister
	StatefulSets           appslisters.StatefulSetLister
}

// DefaultSelector returns the selector that finds a pod's siblings: the
// union of the selectors of the Services that select the pod, and of the
// ReplicationController, ReplicaSet or StatefulSet that controls it (its
// controller owner reference). Default topology spreading counts the pods
// this selector matches. It is empty when nothing selects the pod.
func DefaultSelector(pod *v1.Pod, l SpreadListers) labels.Selector {
	labelSet := make(labels.Set)
	// Everything here selects the same pod, so the label sets cannot
	// disagree on a key and merging them is safe.
	for _, svc := range PodServices(l.Services, pod) {
		labelSet = labels.Merge(labelSet, svc.Spec.Selector)
	}
	selector := labelSet.AsSelector()

	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return selector
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return selector
	}
	switch gv.WithKind(owner.Kind) {
	case rcKind:
		if l.ReplicationControllers == nil {
			break
		}
		if rc, err := l.ReplicationControllers.ReplicationControllers(pod.Namespace).Get(owner.Name); err == nil {
			labelSet = labels.Merge(labelSet, rc.Spec.Selector)
			selector = labelSet.AsSelector()
		}
	case rsKind:
		if l.ReplicaSets == nil {
			break
		}
		if rs, err := l.ReplicaSets.ReplicaSets(pod.Namespace).Get(owner.Name); err == nil {
			selector = addRequirements(selector, rs.Spec.Selector)
		}
	case ssKind:
		if l.StatefulSets == nil {
			break
		}
		if ss, err := l.StatefulSets.StatefulSets(pod.Namespace).Get(owner.Name); err == nil {
			selector = addRequirements(selector, ss.Spec.Selector)
		}
	}
	return selector
}

// addRequirements adds a workload's label selector to selector; a selector
// that does not parse adds nothing.
func addRequirements(selector labels.Selector, ls *metav1.LabelSelector) labels.Selector {
	other, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return selector
	}
	if reqs, ok := other.Requirements(); ok {
		selector = selector.Add(reqs...)
	}
	return selector
}

// PodServices returns the Services in the pod's namespace whose selector
// matches the pod. A Service without a selector matches nothing.
func PodServices(sl corelisters.ServiceLister, pod *v1.Pod) []*v1.Service {
	if sl == nil {
		return nil
	}
	all, err := sl.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*v1.Service
	for _, svc := range all {
		if svc.Spec.Selector == nil {
			continue
		}
		if labels.Set(svc.Spec.Selector).AsSelectorPreValidated().Matches(labels.Set(pod.Labels)) {
			out = append(out, svc)
		}
	}
	return out
}
