package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
	"slices"
)

// validateServiceUpdate adds the change rules: a cluster IP, once set, stays
// (a secondary one may be added or released), and so does the primary IP
// family; a LoadBalancer keeps its class and health-check port.
func validateServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&svc.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateClusterIPsUpdate(old, svc)...)
	allErrs = append(allErrs, validateIPFamiliesUpdate(old, svc)...)
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && old.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		!equalStringPtr(svc.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("loadBalancerClass"), svc.Spec.LoadBalancerClass, "may not change once set"))
	}
	if needsHealthCheck(old) && needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort != old.Spec.HealthCheckNodePort {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("healthCheckNodePort"), "field is immutable"))
	}
	return append(allErrs, validateService(svc)...)
}

func equalStringPtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func validateClusterIPsUpdate(old, svc *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if isHeadless(old) && isHeadless(svc) {
		return nil
	}
	var allErrs field.ErrorList
	oldIPs, newIPs := old.Spec.ClusterIPs, svc.Spec.ClusterIPs
	ipsPath := specPath.Child("clusterIPs")
	switch {
	case len(oldIPs) == len(newIPs):
		for i, ip := range oldIPs {
			if ip != newIPs[i] {
				allErrs = append(allErrs, field.Invalid(ipsPath.Index(i), newIPs, "may not change once set"))
			}
		}
	case len(oldIPs) > len(newIPs):
		if len(newIPs) == 0 {
			allErrs = append(allErrs, field.Invalid(ipsPath.Index(0), newIPs, "primary clusterIP can not be unset"))
		}
		if len(oldIPs) > 0 && len(newIPs) > 0 && newIPs[0] != oldIPs[0] {
			allErrs = append(allErrs, field.Invalid(ipsPath.Index(0), newIPs, "may not change once set"))
		}
		if len(newIPs) == 1 && (svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack) {
			allErrs = append(allErrs, field.Invalid(specPath.Child("ipFamilyPolicy"), svc.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary clusterIP"))
		}
	default:
		if len(oldIPs) > 0 && newIPs[0] != oldIPs[0] {
			allErrs = append(allErrs, field.Invalid(ipsPath.Index(0), newIPs, "may not change once set"))
		}
	}
	return allErrs
}

// validateIPFamiliesUpdate mirrors validateClusterIPsUpdate for ipFamilies.
// Its value in two of the errors is clusterIPs, as upstream's is.
func validateIPFamiliesUpdate(old, svc *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if isHeadless(old) || isHeadless(svc) {
		return nil
	}
	var allErrs field.ErrorList
	oldFams, newFams := old.Spec.IPFamilies, svc.Spec.IPFamilies
	famPath := specPath.Child("ipFamilies").Index(0)
	switch {
	case len(oldFams) == len(newFams):
		for i := range oldFams {
			if oldFams[i] != newFams[i] {
				allErrs = append(allErrs, field.Invalid(famPath, newFams, "may not change once set"))
			}
		}
	case len(oldFams) > len(newFams):
		if len(svc.Spec.ClusterIPs) == 0 {
			allErrs = append(allErrs, field.Invalid(famPath, newFams, "primary ipFamily can not be unset"))
		}
		if len(newFams) > 0 && newFams[0] != oldFams[0] {
			allErrs = append(allErrs, field.Invalid(famPath, svc.Spec.ClusterIPs, "may not change once set"))
		}
		if len(newFams) == 1 && (svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack) {
			allErrs = append(allErrs, field.Invalid(specPath.Child("ipFamilyPolicy"), svc.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary ipFamily"))
		}
	default:
		if len(oldFams) > 0 && newFams[0] != oldFams[0] {
			allErrs = append(allErrs, field.Invalid(famPath, svc.Spec.ClusterIPs, "may not change once set"))
		}
	}
	return allErrs
}

// validateServiceStatusUpdate checks a load balancer's reported addresses.
func validateServiceStatusUpdate(svc, old *corev1.Service) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&svc.ObjectMeta, &old.ObjectMeta)
	ingressPath := statusPath.Child("loadBalancer", "ingress")
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) != 0 {
		return append(allErrs, field.Forbidden(ingressPath, "may only be used when `spec.type` is 'LoadBalancer'"))
	}
	for i, ing := range svc.Status.LoadBalancer.Ingress {
		idxPath := ingressPath.Index(i)
		if ing.IP != "" {
			allErrs = append(allErrs, validation.IsValidIPForLegacyField(idxPath.Child("ip"), ing.IP, true, nil)...)
		}
		modes := []corev1.LoadBalancerIPMode{corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP}
		switch {
		case ing.IPMode == nil && ing.IP != "":
			allErrs = append(allErrs, field.Required(idxPath.Child("ipMode"), "must be specified when `ip` is set"))
		case ing.IPMode != nil && ing.IP == "":
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("ipMode"), "may not be specified when `ip` is not set"))
		case ing.IPMode != nil && !slices.Contains(modes, *ing.IPMode):
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("ipMode"), ing.IPMode, modes))
		}
		if ing.Hostname != "" {
			allErrs = append(allErrs, validateDNS1123Subdomain(ing.Hostname, idxPath.Child("hostname"))...)
			if netutils.ParseIPSloppy(ing.Hostname) != nil {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("hostname"), ing.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return allErrs
}
