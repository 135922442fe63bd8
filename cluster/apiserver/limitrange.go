package apiserver

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/klab-dev/klab/cluster/apiserver/defaults"
	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/apiserver/storage"
)

// The LimitRanger admission plugin, as upstream's: a new pod's containers
// get the default requests and limits of the namespace's LimitRanges for
// what they leave out (noted in the kubernetes.io/limit-ranger
// annotation), and a pod whose containers (or whole) fall outside a
// range's min, max or maxLimitRequestRatio is refused. Pods are checked
// on create only: their containers' resources do not change afterwards.

var limitRangesGVR = schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}

// limitRangerAnnotation records what the plugin set.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// namespaceLimitRanges lists the LimitRanges of a namespace.
func (s *Server) namespaceLimitRanges(ctx context.Context, namespace string) ([]corev1.LimitRange, error) {
	res, _ := s.reg.Lookup(limitRangesGVR)
	list, err := s.store.List(ctx, res, namespace, storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	return list.(*corev1.LimitRangeList).Items, nil
}

// admitLimitRanges defaults then checks a new pod's resources.
func (s *Server) admitLimitRanges(ctx context.Context, res *registry.Resource, pod *corev1.Pod) error {
	ranges, err := s.namespaceLimitRanges(ctx, pod.Namespace)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("error listing limit ranges: %w", err))
	}
	if len(ranges) == 0 {
		return nil
	}
	// Each range in turn gives its defaults, then holds the pod to its
	// bounds.
	var errs []error
	for i := range ranges {
		applyLimitRangeDefaults(&ranges[i], pod)
		errs = append(errs, checkLimitRange(&ranges[i], pod)...)
	}
	// The class follows the resources as admission left them.
	pod.Status.QOSClass = defaults.PodQOSClass(pod)
	if len(errs) > 0 {
		return apierrors.NewForbidden(res.GroupResource(), pod.Name, utilerrors.NewAggregate(errs))
	}
	return nil
}

// applyLimitRangeDefaults gives each container the range's Container
// default (as limits) and defaultRequest (as requests) for the resources
// it does not state.
func applyLimitRangeDefaults(lr *corev1.LimitRange, pod *corev1.Pod) {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range item.DefaultRequest {
			requests[k] = v.DeepCopy()
		}
		for k, v := range item.Default {
			limits[k] = v.DeepCopy()
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return
	}
	var notes []string
	merge := func(c *corev1.Container, kind string) {
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		var setLimits, setRequests []string
		for k, v := range limits {
			if _, ok := c.Resources.Limits[k]; !ok {
				c.Resources.Limits[k] = v.DeepCopy()
				setLimits = append(setLimits, string(k))
			}
		}
		for k, v := range requests {
			if _, ok := c.Resources.Requests[k]; !ok {
				c.Resources.Requests[k] = v.DeepCopy()
				setRequests = append(setRequests, string(k))
			}
		}
		if len(setRequests) > 0 {
			sort.Strings(setRequests)
			notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(setRequests, ", "), kind, c.Name))
		}
		if len(setLimits) > 0 {
			sort.Strings(setLimits)
			notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(setLimits, ", "), kind, c.Name))
		}
	}
	for i := range pod.Spec.Containers {
		merge(&pod.Spec.Containers[i], "container")
	}
	for i := range pod.Spec.InitContainers {
		merge(&pod.Spec.InitContainers[i], "init container")
	}
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
}

// checkLimitRange holds each container (Container items) and the pod as a
// whole (Pod items) to the range's min, max and maxLimitRequestRatio.
func checkLimitRange(lr *corev1.LimitRange, pod *corev1.Pod) []error {
	var errs []error
	check := func(item *corev1.LimitRangeItem, requests, limits corev1.ResourceList) {
		kind := string(item.Type)
		for _, k := range sortedNames(item.Min) {
			if err := minConstraint(kind, k, item.Min[k], requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
		for _, k := range sortedNames(item.Max) {
			if err := maxConstraint(kind, k, item.Max[k], requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
		for _, k := range sortedNames(item.MaxLimitRequestRatio) {
			if err := ratioConstraint(kind, k, item.MaxLimitRequestRatio[k], requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for j := range cs {
					check(item, cs[j].Resources.Requests, cs[j].Resources.Limits)
				}
			}
		case corev1.LimitTypePod:
			var requests, limits []corev1.ResourceList
			for _, c := range pod.Spec.Containers {
				requests, limits = append(requests, c.Resources.Requests), append(limits, c.Resources.Limits)
			}
			check(item, sumAll(requests), sumAll(limits))
		}
	}
	return errs
}

func sortedNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for k := range list {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

func minConstraint(kind string, name corev1.ResourceName, min resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	if !hasReq {
		return fmt.Errorf("Minimum %s usage per %s is %s.  No request is specified.", name, kind, min.String())
	}
	if req.Cmp(min) < 0 {
		return fmt.Errorf("Minimum %s usage per %s is %s, but request is %s.", name, kind, min.String(), req.String())
	}
	if hasLim && lim.Cmp(min) < 0 {
		return fmt.Errorf("Minimum %s usage per %s is %s, but limit is %s.", name, kind, min.String(), lim.String())
	}
	return nil
}

func maxConstraint(kind string, name corev1.ResourceName, max resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	if !hasLim {
		return fmt.Errorf("Maximum %s usage per %s is %s.  No limit is specified.", name, kind, max.String())
	}
	if lim.Cmp(max) > 0 {
		return fmt.Errorf("Maximum %s usage per %s is %s, but limit is %s.", name, kind, max.String(), lim.String())
	}
	if hasReq && req.Cmp(max) > 0 {
		return fmt.Errorf("Maximum %s usage per %s is %s, but request is %s.", name, kind, max.String(), req.String())
	}
	return nil
}

func ratioConstraint(kind string, name corev1.ResourceName, ratio resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	if !hasReq || req.MilliValue() == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0.", name, kind, ratio.String())
	}
	if !hasLim || lim.MilliValue() == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0.", name, kind, ratio.String())
	}
	observed := float64(lim.MilliValue()) / float64(req.MilliValue())
	if observed > float64(ratio.MilliValue())/1000 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f.", name, kind, ratio.String(), observed)
	}
	return nil
}

// sumAll totals each resource over the containers' lists, leaving out a
// resource some container does not state (the pod as a whole then has no
// amount of it): cpu in millicores, the rest in whole units.
func sumAll(lists []corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, list := range lists {
		for name := range list {
			if _, done := out[name]; done {
				continue
			}
			var total int64
			all := true
			for _, l := range lists {
				q, ok := l[name]
				if !ok {
					all = false
					break
				}
				if name == corev1.ResourceCPU {
					total += q.MilliValue()
				} else {
					total += q.Value()
				}
			}
			if !all {
				continue
			}
			if name == corev1.ResourceCPU {
				out[name] = *resource.NewMilliQuantity(total, resource.DecimalSI)
			} else {
				out[name] = *resource.NewQuantity(total, resource.DecimalSI)
			}
		}
	}
	return out
}
