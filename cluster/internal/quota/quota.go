// Package quota measures what objects consume of a ResourceQuota, as
// upstream's quota evaluators (pkg/quota/v1/evaluator/core and the generic
// object-count evaluator of k8s.io/apiserver) do. The API server's
// ResourceQuota admission charges a new object's usage with it; the
// resourcequota controller sums it over a namespace into status.used.
package quota

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	resourcehelper "k8s.io/component-helpers/resource"
)

var (
	podsGR     = schema.GroupResource{Resource: "pods"}
	servicesGR = schema.GroupResource{Resource: "services"}
)

// ObjectCountName is the count/<resource>[.<group>] name that counts
// objects of a resource, as generic.ObjectCountQuotaResourceNameFor.
func ObjectCountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// legacyCountNames are the names that counted objects of core kinds
// before count/<resource> existed, and still do.
var legacyCountNames = map[string]corev1.ResourceName{
	"configmaps":             corev1.ResourceConfigMaps,
	"secrets":                corev1.ResourceSecrets,
	"resourcequotas":         corev1.ResourceQuotas,
	"replicationcontrollers": corev1.ResourceReplicationControllers,
	"persistentvolumeclaims": corev1.ResourcePersistentVolumeClaims,
}

// podResources are what a pod can be charged for, besides hugepages and
// extended resources.
var podResources = []corev1.ResourceName{
	ObjectCountName(podsGR), corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage, corev1.ResourcePods,
}

var serviceResources = []corev1.ResourceName{
	ObjectCountName(servicesGR), corev1.ResourceServices, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

// MatchingResources returns those of names that objects of gr consume.
func MatchingResources(gr schema.GroupResource, names []corev1.ResourceName) []corev1.ResourceName {
	var own []corev1.ResourceName
	switch gr {
	case podsGR:
		own = podResources
	case servicesGR:
		own = serviceResources
	default:
		own = []corev1.ResourceName{ObjectCountName(gr)}
		if gr.Group == "" && legacyCountNames[gr.Resource] != "" {
			own = append(own, legacyCountNames[gr.Resource])
		}
	}
	var out []corev1.ResourceName
	for _, n := range names {
		switch {
		case slices.Contains(own, n):
		case gr == podsGR && (strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(n), corev1.ResourceRequestsHugePagesPrefix)):
		case gr == podsGR && isExtendedRequest(n):
		default:
			continue
		}
		out = append(out, n)
	}
	return out
}

// isExtendedRequest: requests.<domain>/<name>, the only way a quota may
// name an extended resource.
func isExtendedRequest(n corev1.ResourceName) bool {
	rest, ok := strings.CutPrefix(string(n), corev1.DefaultResourceRequestsPrefix)
	return ok && strings.Contains(rest, "/") && !strings.Contains(rest, "kubernetes.io/")
}

// Usage is what obj, of resource gr, consumes.
func Usage(gr schema.GroupResource, obj runtime.Object) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := corev1.ResourceList{ObjectCountName(gr): one}
	switch o := obj.(type) {
	case *corev1.Pod:
		// count/pods counts every pod in storage; "pods" and the
		// compute resources only those not yet finished.
		if Chargeable(o) {
			out = Add(out, computeUsage(
				resourcehelper.PodRequests(o, resourcehelper.PodResourcesOptions{}),
				resourcehelper.PodLimits(o, resourcehelper.PodResourcesOptions{})))
		}
	case *corev1.Service:
		out[corev1.ResourceServices] = one
		switch o.Spec.Type {
		case corev1.ServiceTypeNodePort:
			out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(int64(len(o.Spec.Ports)), resource.DecimalSI)
			out[corev1.ResourceServicesLoadBalancers] = resource.MustParse("0")
		case corev1.ServiceTypeLoadBalancer:
			out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(int64(len(o.Spec.Ports)), resource.DecimalSI)
			out[corev1.ResourceServicesLoadBalancers] = one
		default:
			out[corev1.ResourceServicesNodePorts] = resource.MustParse("0")
			out[corev1.ResourceServicesLoadBalancers] = resource.MustParse("0")
		}
	default:
		if gr.Group == "" && legacyCountNames[gr.Resource] != "" {
			out[legacyCountNames[gr.Resource]] = one
		}
	}
	return out
}

// Chargeable: a pod is charged for compute resources until it has
// finished (Succeeded or Failed); upstream also stops charging a pod whose
// grace period has run out, which klab's deletes never leave behind.
func Chargeable(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// computeUsage names a pod's (or one container's) requests and limits as
// a quota does: cpu and requests.cpu are the request, limits.cpu the limit.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := requests[r]; ok {
			out[r] = q
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(r))] = q
		}
		if q, ok := limits[r]; ok {
			out[corev1.ResourceName("limits."+string(r))] = q
		}
	}
	for r, q := range requests {
		if strings.HasPrefix(string(r), corev1.ResourceHugePagesPrefix) {
			out[r] = q
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(r))] = q
		} else if strings.Contains(string(r), "/") && !strings.Contains(string(r), "kubernetes.io/") {
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(r))] = q
		}
	}
	return out
}

// validationSet: a quota on these makes every container state them (a
// choice upstream keeps for compatibility and limits to these six).
var validationSet = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceRequestsCPU,
	corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
}

// Constraints refuses a pod with a container that does not state a
// resource the quota constrains, in upstream's words:
// "must specify limits.cpu for: app; limits.memory for: app".
func Constraints(required []corev1.ResourceName, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	missing := map[corev1.ResourceName][]string{}
	check := func(c *corev1.Container) {
		has := computeUsage(c.Resources.Requests, c.Resources.Limits)
		for _, r := range required {
			if !slices.Contains(validationSet, r) {
				continue
			}
			if _, ok := has[r]; !ok && !slices.Contains(missing[r], c.Name) {
				missing[r] = append(missing[r], c.Name)
			}
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for r := range missing {
		names = append(names, string(r))
	}
	sort.Strings(names)
	msgs := make([]string, 0, len(names))
	for _, r := range names {
		containers := missing[corev1.ResourceName(r)]
		sort.Strings(containers)
		msgs = append(msgs, fmt.Sprintf("%s for: %s", r, strings.Join(containers, ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
}

// scopeSelectors are a quota's scopes and scope selector together.
func scopeSelectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// Matches reports whether the quota constrains obj: it limits something
// obj's resource consumes and every scope of it takes obj in. Only pods
// fall within scopes.
func Matches(q *corev1.ResourceQuota, gr schema.GroupResource, obj runtime.Object) (bool, error) {
	if len(MatchingResources(gr, ResourceNames(q.Status.Hard))) == 0 {
		return false, nil
	}
	for _, sel := range scopeSelectors(q) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		in, err := podInScope(pod, sel)
		if err != nil || !in {
			return false, err
		}
	}
	return true, nil
}

func podInScope(pod *corev1.Pod, sel corev1.ScopedResourceSelectorRequirement) (bool, error) {
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0, nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return pod.Spec.ActiveDeadlineSeconds == nil || *pod.Spec.ActiveDeadlineSeconds < 0, nil
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		var op selection.Operator
		switch sel.Operator {
		case corev1.ScopeSelectorOpIn:
			op = selection.In
		case corev1.ScopeSelectorOpNotIn:
			op = selection.NotIn
		case corev1.ScopeSelectorOpDoesNotExist:
			op = selection.DoesNotExist
		default:
			return false, fmt.Errorf("%q is not a valid scope selector operator", sel.Operator)
		}
		req, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
		if err != nil {
			return false, fmt.Errorf("failed to parse and convert selector: %v", err)
		}
		var set labels.Set
		if pod.Spec.PriorityClassName != "" {
			set = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pod.Spec.PriorityClassName}
		}
		return labels.NewSelector().Add(*req).Matches(set), nil
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod), nil
	}
	return false, nil
}

func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) != 0 || t.NamespaceSelector != nil }
	var terms []*corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	return slices.ContainsFunc(terms, cross)
}

// Sum is the usage of objs (all of resource gr, in the quota's namespace)
// that falls under q, restricted to what q limits.
func Sum(q *corev1.ResourceQuota, gr schema.GroupResource, objs []runtime.Object) (corev1.ResourceList, error) {
	limited := MatchingResources(gr, ResourceNames(q.Spec.Hard))
	if len(limited) == 0 {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for _, r := range limited {
		out[r] = resource.MustParse("0")
	}
	probe := q.DeepCopy()
	probe.Status.Hard = q.Spec.Hard
	for _, obj := range objs {
		ok, err := Matches(probe, gr, obj)
		if err != nil {
			return nil, err
		}
		if ok {
			out = Add(out, Mask(Usage(gr, obj), limited))
		}
	}
	return out, nil
}

// ResourceFor is the group and resource a quota's resource name counts
// objects of, for count/<resource>[.<group>] and the legacy core names;
// compute names belong to pods, services.* to services.
func ResourceFor(name corev1.ResourceName) (schema.GroupResource, bool) {
	if rest, ok := strings.CutPrefix(string(name), "count/"); ok {
		res, group, _ := strings.Cut(rest, ".")
		return schema.GroupResource{Group: group, Resource: res}, true
	}
	for res, legacy := range legacyCountNames {
		if legacy == name {
			return schema.GroupResource{Resource: res}, true
		}
	}
	if len(MatchingResources(servicesGR, []corev1.ResourceName{name})) > 0 {
		return servicesGR, true
	}
	if len(MatchingResources(podsGR, []corev1.ResourceName{name})) > 0 {
		return podsGR, true
	}
	return schema.GroupResource{}, false
}

// The arithmetic on resource lists that quota needs (what upstream keeps in
// k8s.io/apiserver/pkg/quota/v1, whose package pulls in all of admission).

// Add is a+b, name by name.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range a {
		out[k] = v.DeepCopy()
	}
	for k, v := range b {
		q := out[k]
		q.Add(v)
		out[k] = q
	}
	return out
}

// Subtract is a-b, name by name, for the names of a.
func Subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range a {
		q := v.DeepCopy()
		if d, ok := b[k]; ok {
			q.Sub(d)
		}
		out[k] = q
	}
	return out
}

// Mask keeps the names of list that are in names.
func Mask(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if q, ok := list[n]; ok {
			out[n] = q.DeepCopy()
		}
	}
	return out
}

// ResourceNames lists the names of list.
func ResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(list))
	for k := range list {
		out = append(out, k)
	}
	return out
}

// LessThanOrEqual reports whether a is within b for every name both have,
// and the names where it is not.
func LessThanOrEqual(a, b corev1.ResourceList) (bool, []corev1.ResourceName) {
	var exceeded []corev1.ResourceName
	for k, v := range a {
		if limit, ok := b[k]; ok && v.Cmp(limit) > 0 {
			exceeded = append(exceeded, k)
		}
	}
	return len(exceeded) == 0, exceeded
}

// RemoveZeros drops the names whose amount is zero.
func RemoveZeros(list corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range list {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

// Equals reports whether a and b hold the same amounts under the same names.
func Equals(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// String prints a list as upstream's quota messages do: name=amount,
// sorted by name, comma-separated.
func String(list corev1.ResourceList) string {
	names := make([]string, 0, len(list))
	for k := range list {
		names = append(names, string(k))
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		q := list[corev1.ResourceName(n)]
		parts = append(parts, n+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// bestEffort: no container asks for or is limited in cpu or memory (the
// QoS class the API server recorded at create, when it is there).
func bestEffort(pod *corev1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == corev1.PodQOSBestEffort
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					if q, ok := l[r]; ok && !q.IsZero() {
						return false
					}
				}
			}
		}
	}
	return true
}
