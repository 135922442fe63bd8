package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateResourceRequirements checks a container's requests and limits:
// known resource names, no negative amounts, whole numbers where a resource
// cannot be split, and no request above its limit. Extended resources such as
// GPUs cannot be overcommitted, so their request must equal their limit.
func validateResourceRequirements(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	limCPUOrMemory, reqCPUOrMemory := false, false
	limHugePages, reqHugePages := false, false
	for name, q := range r.Limits {
		namePath := limPath.Key(string(name))
		allErrs = append(allErrs, validateContainerResourceName(name, namePath)...)
		allErrs = append(allErrs, validateResourceQuantity(name, q, namePath)...)
		limHugePages = limHugePages || isHugePages(name)
		limCPUOrMemory = limCPUOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
	}
	for name, q := range r.Requests {
		namePath := reqPath.Key(string(name))
		allErrs = append(allErrs, validateContainerResourceName(name, namePath)...)
		allErrs = append(allErrs, validateResourceQuantity(name, q, namePath)...)
		if limit, ok := r.Limits[name]; ok {
			if q.Cmp(limit) != 0 && !overcommitAllowed(name) {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			} else if q.Cmp(limit) > 0 {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !overcommitAllowed(name) {
			allErrs = append(allErrs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		reqHugePages = reqHugePages || isHugePages(name)
		reqCPUOrMemory = reqCPUOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
	}
	if !limCPUOrMemory && !reqCPUOrMemory && (limHugePages || reqHugePages) {
		allErrs = append(allErrs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return allErrs
}

// validateResourceQuantity rejects a negative amount, and a fraction of a
// resource that only comes in whole units.
func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if q.Cmp(resource.Quantity{}) < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.String(), "must be greater than or equal to 0"))
	}
	if isIntegerResource(name) && q.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q, "must be an integer"))
	}
	return allErrs
}

// The resource names Kubernetes itself defines, and which a container may
// ask for.
var (
	standardResources = map[corev1.ResourceName]bool{
		corev1.ResourceCPU: true, corev1.ResourceMemory: true, corev1.ResourceEphemeralStorage: true,
		corev1.ResourceRequestsCPU: true, corev1.ResourceRequestsMemory: true, corev1.ResourceRequestsEphemeralStorage: true,
		corev1.ResourceLimitsCPU: true, corev1.ResourceLimitsMemory: true, corev1.ResourceLimitsEphemeralStorage: true,
		corev1.ResourcePods: true, corev1.ResourceQuotas: true, corev1.ResourceServices: true,
		corev1.ResourceReplicationControllers: true, corev1.ResourceSecrets: true, corev1.ResourceConfigMaps: true,
		corev1.ResourcePersistentVolumeClaims: true, corev1.ResourceStorage: true, corev1.ResourceRequestsStorage: true,
		corev1.ResourceServicesNodePorts: true, corev1.ResourceServicesLoadBalancers: true,
	}
	standardContainerResources = map[corev1.ResourceName]bool{
		corev1.ResourceCPU: true, corev1.ResourceMemory: true, corev1.ResourceEphemeralStorage: true,
	}
	integerResources = map[corev1.ResourceName]bool{
		corev1.ResourcePods: true, corev1.ResourceQuotas: true, corev1.ResourceServices: true,
		corev1.ResourceReplicationControllers: true, corev1.ResourceSecrets: true, corev1.ResourceConfigMaps: true,
		corev1.ResourcePersistentVolumeClaims: true, corev1.ResourceServicesNodePorts: true, corev1.ResourceServicesLoadBalancers: true,
	}
)

// validateContainerResourceName accepts cpu, memory, ephemeral-storage and
// hugepages-<size>, and extended resources with a domain ("example.com/gpu").
func validateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := invalidResourceEach(fldPath, name, validation.IsQualifiedName(string(name)))
	if !strings.Contains(string(name), "/") {
		// Upstream skips the first check for a malformed name but still
		// makes the second.
		if len(allErrs) == 0 && !standardResources[name] && !isQuotaHugePages(name) {
			allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource type or fully qualified"))
		}
		if !standardContainerResources[name] && !isHugePages(name) {
			allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
		return allErrs
	}
	if !isNativeResource(name) && !isExtendedResource(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return allErrs
}

func invalidResourceEach(fldPath *field.Path, name corev1.ResourceName, msgs []string) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range msgs {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func isQuotaHugePages(name corev1.ResourceName) bool {
	return isHugePages(name) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

// isNativeResource: a name without a domain, or in kubernetes.io.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// isExtendedResource: a resource a device plugin or operator defines, such
// as "nvidia.com/gpu". It must still be a valid quota name once prefixed
// with "requests.".
func isExtendedResource(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func isIntegerResource(name corev1.ResourceName) bool {
	return integerResources[name] || isExtendedResource(name)
}

// overcommitAllowed: only native resources other than hugepages may be
// requested below their limit.
func overcommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePages(name)
}
