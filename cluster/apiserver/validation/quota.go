package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceQuotas and LimitRanges, as upstream's ValidateResourceQuota and
// ValidateLimitRange.

// standardQuotaResources are the names a quota may limit besides
// hugepages and count/<resource>.
var standardQuotaResources = map[corev1.ResourceName]bool{
	corev1.ResourceCPU: true, corev1.ResourceMemory: true, corev1.ResourceEphemeralStorage: true,
	corev1.ResourceRequestsCPU: true, corev1.ResourceRequestsMemory: true, corev1.ResourceRequestsStorage: true,
	corev1.ResourceRequestsEphemeralStorage: true, corev1.ResourceLimitsCPU: true, corev1.ResourceLimitsMemory: true,
	corev1.ResourceLimitsEphemeralStorage: true, corev1.ResourcePods: true, corev1.ResourceQuotas: true,
	corev1.ResourceServices: true, corev1.ResourceReplicationControllers: true, corev1.ResourceSecrets: true,
	corev1.ResourcePersistentVolumeClaims: true, corev1.ResourceConfigMaps: true,
	corev1.ResourceServicesNodePorts: true, corev1.ResourceServicesLoadBalancers: true,
}

// podScopedQuotaResources are what a quota with pod scopes may limit.
var podScopedQuotaResources = map[corev1.ResourceName]bool{
	corev1.ResourcePods: true, corev1.ResourceRequestsCPU: true, corev1.ResourceRequestsMemory: true,
	corev1.ResourceLimitsCPU: true, corev1.ResourceLimitsMemory: true, corev1.ResourceCPU: true, corev1.ResourceMemory: true,
	corev1.ResourceRequestsEphemeralStorage: true, corev1.ResourceLimitsEphemeralStorage: true, corev1.ResourceEphemeralStorage: true,
}

// validateResourceName: a qualified name, and a standard one unless it
// has a domain.
func validateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := invalidResourceEach(fldPath, name, validation.IsQualifiedName(string(name)))
	if len(allErrs) > 0 {
		return allErrs
	}
	if !strings.Contains(string(name), "/") && !standardResources[name] && !isQuotaHugePages(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource type or fully qualified"))
	}
	return allErrs
}

func validateQuotaResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := validateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") && !standardQuotaResources[name] && !isQuotaHugePages(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource for quota"))
	}
	return allErrs
}

func validateQuotaList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for name, q := range list {
		p := fldPath.Key(string(name))
		allErrs = append(allErrs, validateQuotaResourceName(name, p)...)
		allErrs = append(allErrs, validateResourceQuantity(name, q, p)...)
	}
	return allErrs
}

var (
	podQuotaScopes = map[corev1.ResourceQuotaScope]bool{
		corev1.ResourceQuotaScopeTerminating: true, corev1.ResourceQuotaScopeNotTerminating: true,
		corev1.ResourceQuotaScopeBestEffort: true, corev1.ResourceQuotaScopeNotBestEffort: true,
		corev1.ResourceQuotaScopePriorityClass: true, corev1.ResourceQuotaScopeCrossNamespacePodAffinity: true,
	}
	conflictingScopes = [][2]corev1.ResourceQuotaScope{
		{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating},
		{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort},
	}
)

func validateQuotaScopes(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	scopes := map[corev1.ResourceQuotaScope]bool{}
	check := func(scope corev1.ResourceQuotaScope, p *field.Path) {
		if !podQuotaScopes[scope] {
			allErrs = append(allErrs, field.Invalid(p, scope, "unsupported scope"))
			return
		}
		for name := range spec.Hard {
			valid := name == corev1.ResourcePods || name == "count/pods"
			if scope != corev1.ResourceQuotaScopeBestEffort {
				// A BestEffort pod asks for nothing but to exist.
				valid = valid || podScopedQuotaResources[name]
			}
			if !valid {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("hard"), spec.Hard, "unsupported scope applied to resource"))
				break
			}
		}
		scopes[scope] = true
	}
	for i, s := range spec.Scopes {
		check(s, fldPath.Child("scopes").Index(i))
	}
	if spec.ScopeSelector != nil {
		for i, req := range spec.ScopeSelector.MatchExpressions {
			p := fldPath.Child("scopeSelector", "matchExpressions").Index(i)
			check(req.ScopeName, p.Child("scopeName"))
			switch req.Operator {
			case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
				if len(req.Values) == 0 {
					allErrs = append(allErrs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
				}
			case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
				if len(req.Values) != 0 {
					allErrs = append(allErrs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
				}
			default:
				allErrs = append(allErrs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
			}
		}
	}
	for _, pair := range conflictingScopes {
		if scopes[pair[0]] && scopes[pair[1]] {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("scopes"), spec.Scopes, "conflicting scopes"))
		}
	}
	return allErrs
}

func validateResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	allErrs := validateObjectMeta(&q.ObjectMeta, true, nameIsDNSSubdomain)
	allErrs = append(allErrs, validateQuotaList(q.Spec.Hard, field.NewPath("spec", "hard"))...)
	allErrs = append(allErrs, validateQuotaScopes(&q.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateQuotaList(q.Status.Hard, field.NewPath("status", "hard"))...)
	allErrs = append(allErrs, validateQuotaList(q.Status.Used, field.NewPath("status", "used"))...)
	return allErrs
}

func validateResourceQuotaUpdate(q, old *corev1.ResourceQuota) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&q.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateQuotaList(q.Spec.Hard, field.NewPath("spec", "hard"))...)
	allErrs = append(allErrs, validateQuotaScopes(&q.Spec, field.NewPath("spec"))...)
	if len(q.Spec.Scopes) != len(old.Spec.Scopes) || fmt.Sprint(q.Spec.Scopes) != fmt.Sprint(old.Spec.Scopes) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "scopes"), q.Spec.Scopes, "field is immutable"))
	}
	return allErrs
}

func validateResourceQuotaStatusUpdate(q, old *corev1.ResourceQuota) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&q.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateQuotaList(q.Status.Hard, field.NewPath("status", "hard"))...)
	allErrs = append(allErrs, validateQuotaList(q.Status.Used, field.NewPath("status", "used"))...)
	return allErrs
}

// validateLimitRange checks each limit's type, its resource names and
// amounts, and that min <= defaultRequest <= default <= max and the
// ratio fit together, with upstream's messages.
func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	allErrs := validateObjectMeta(&lr.ObjectMeta, true, nameIsDNSSubdomain)
	seen := map[corev1.LimitType]bool{}
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		p := field.NewPath("spec", "limits").Index(i)
		if seen[item.Type] {
			allErrs = append(allErrs, field.Duplicate(p.Child("type"), item.Type))
		}
		seen[item.Type] = true
		for _, l := range []struct {
			name string
			list corev1.ResourceList
		}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}} {
			for name, q := range l.list {
				kp := p.Child(l.name).Key(string(name))
				allErrs = append(allErrs, validateResourceName(name, kp)...)
				allErrs = append(allErrs, validateResourceQuantity(name, q, kp)...)
			}
		}
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				allErrs = append(allErrs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				allErrs = append(allErrs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		}
		names := map[corev1.ResourceName]bool{}
		for _, l := range []corev1.ResourceList{item.Max, item.Min, item.Default, item.DefaultRequest, item.MaxLimitRequestRatio} {
			for n := range l {
				names[n] = true
			}
		}
		for n := range names {
			maxQ, hasMax := item.Max[n]
			minQ, hasMin := item.Min[n]
			defQ, hasDef := item.Default[n]
			reqQ, hasReq := item.DefaultRequest[n]
			ratio, hasRatio := item.MaxLimitRequestRatio[n]
			if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("min").Key(string(n)), minQ, fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
			}
			if hasReq && hasMin && minQ.Cmp(reqQ) > 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("defaultRequest").Key(string(n)), reqQ, fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), reqQ.String())))
			}
			if hasReq && hasMax && reqQ.Cmp(maxQ) > 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("defaultRequest").Key(string(n)), reqQ, fmt.Sprintf("default request value %s is greater than max value %s", reqQ.String(), maxQ.String())))
			}
			if hasReq && hasDef && reqQ.Cmp(defQ) > 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("defaultRequest").Key(string(n)), reqQ, fmt.Sprintf("default request value %s is greater than default limit value %s", reqQ.String(), defQ.String())))
			}
			if hasDef && hasMin && minQ.Cmp(defQ) > 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("default").Key(string(n)), defQ, fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), defQ.String())))
			}
			if hasDef && hasMax && defQ.Cmp(maxQ) > 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("default").Key(string(n)), defQ, fmt.Sprintf("default value %s is greater than max value %s", defQ.String(), maxQ.String())))
			}
			if hasRatio && ratio.Cmp(resource.MustParse("1")) < 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("maxLimitRequestRatio").Key(string(n)), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
			}
			if hasRatio && hasMax && hasMin && !minQ.IsZero() {
				maxRatio := float64(maxQ.MilliValue()) / float64(minQ.MilliValue())
				if float64(ratio.MilliValue())/1000 > maxRatio {
					allErrs = append(allErrs, field.Invalid(p.Child("maxLimitRequestRatio").Key(string(n)), ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), maxRatio)))
				}
			}
		}
	}
	return allErrs
}

func validateLimitRangeUpdate(lr, old *corev1.LimitRange) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&lr.ObjectMeta, &old.ObjectMeta)
	meta := lr.ObjectMeta
	lr.ObjectMeta = old.ObjectMeta // the metadata was checked as an update
	spec := validateLimitRange(lr)
	lr.ObjectMeta = meta
	return append(allErrs, spec...)
}
