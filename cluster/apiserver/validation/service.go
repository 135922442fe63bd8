package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxClientIPAffinitySeconds is the longest ClientIP session affinity: a day.
const maxClientIPAffinitySeconds = 86400

// validateService checks a Service on create, and as a whole on update.
func validateService(svc *corev1.Service) field.ErrorList {
	allErrs := validateObjectMeta(&svc.ObjectMeta, true, nameIsDNS1035Label)
	spec := &svc.Spec
	headless := isHeadless(svc)

	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		allErrs = append(allErrs, field.Required(specPath.Child("ports"), ""))
	}
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		if headless {
			allErrs = append(allErrs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0], "may not be set to 'None' for LoadBalancer services"))
		}
	case corev1.ServiceTypeNodePort:
		if headless {
			allErrs = append(allErrs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0], "may not be set to 'None' for NodePort services"))
		}
	case corev1.ServiceTypeExternalName:
		// An ExternalName Service is only a DNS CNAME: no IPs at all.
		if len(spec.ClusterIPs) > 0 {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname != "" {
			allErrs = append(allErrs, validateDNS1123Subdomain(cname, specPath.Child("externalName"))...)
		} else {
			allErrs = append(allErrs, field.Required(specPath.Child("externalName"), ""))
		}
	}

	portNames := map[string]bool{}
	for i := range spec.Ports {
		allErrs = append(allErrs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, portNames, specPath.Child("ports").Index(i))...)
	}
	if spec.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}
	affinities := []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}
	allErrs = append(allErrs, validateEnum(spec.SessionAffinity, affinities, specPath.Child("sessionAffinity"))...)
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityClientIP:
		allErrs = append(allErrs, validateClientIPAffinityConfig(spec.SessionAffinityConfig, specPath.Child("sessionAffinityConfig"))...)
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("sessionAffinityConfig"), fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone)))
		}
	}
	allErrs = append(allErrs, validateClusterIPFields(svc)...)
	for i, ip := range spec.ExternalIPs {
		idxPath := specPath.Child("externalIPs").Index(i)
		if errs := validation.IsValidIPForLegacyField(idxPath, ip, true, nil); len(errs) != 0 {
			allErrs = append(allErrs, errs...)
		} else {
			allErrs = append(allErrs, validateNonSpecialIP(ip, idxPath)...)
		}
	}
	types := []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}
	allErrs = append(allErrs, validateEnum(spec.Type, types, specPath.Child("type"))...)
	if spec.Type == corev1.ServiceTypeClusterIP {
		for i, port := range spec.Ports {
			if port.NodePort != 0 {
				allErrs = append(allErrs, field.Forbidden(specPath.Child("ports").Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}
	// The same node port, or the same service port, twice for one protocol.
	nodePorts := map[corev1.ServicePort]bool{}
	ports := map[corev1.ServicePort]bool{}
	for i, port := range spec.Ports {
		portPath := specPath.Child("ports").Index(i)
		if port.NodePort != 0 {
			key := corev1.ServicePort{Protocol: port.Protocol, NodePort: port.NodePort}
			if nodePorts[key] {
				allErrs = append(allErrs, field.Duplicate(portPath.Child("nodePort"), port.NodePort))
			}
			nodePorts[key] = true
		}
		key := corev1.ServicePort{Protocol: port.Protocol, Port: port.Port}
		if ports[key] {
			allErrs = append(allErrs, field.Duplicate(portPath, key))
		}
		ports[key] = true
	}
	if len(spec.LoadBalancerSourceRanges) > 0 {
		// Upstream's path keeps the Go field name here.
		rangesPath := specPath.Child("LoadBalancerSourceRanges")
		if spec.Type != corev1.ServiceTypeLoadBalancer {
			allErrs = append(allErrs, field.Forbidden(rangesPath, "may only be used when `type` is 'LoadBalancer'"))
		}
		for i, cidr := range spec.LoadBalancerSourceRanges {
			allErrs = append(allErrs, validation.IsValidCIDR(rangesPath.Index(i), strings.TrimSpace(cidr))...)
		}
	}
	if spec.AllocateLoadBalancerNodePorts != nil && spec.Type != corev1.ServiceTypeLoadBalancer {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		allErrs = append(allErrs, field.Required(field.NewPath("allocateLoadBalancerNodePorts"), ""))
	}
	if spec.LoadBalancerClass != nil {
		if spec.Type == corev1.ServiceTypeLoadBalancer {
			allErrs = append(allErrs, validateQualifiedName(*spec.LoadBalancerClass, specPath.Child("loadBalancerClass"))...)
		} else {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
		}
	}
	allErrs = append(allErrs, validateTrafficPolicies(svc)...)
	return allErrs
}

func validateServicePort(sp *corev1.ServicePort, requireName bool, names map[string]bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if requireName && sp.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	} else if sp.Name != "" {
		allErrs = append(allErrs, validateDNS1123Label(sp.Name, fldPath.Child("name"))...)
		if names[sp.Name] {
			allErrs = append(allErrs, field.Duplicate(fldPath.Child("name"), sp.Name))
		}
		names[sp.Name] = true
	}
	allErrs = append(allErrs, invalidPortNum(fldPath.Child("port"), sp.Port)...)
	allErrs = append(allErrs, validateProtocol(sp.Protocol, fldPath.Child("protocol"))...)
	allErrs = append(allErrs, validatePortNumOrName(sp.TargetPort, fldPath.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		allErrs = append(allErrs, validateQualifiedName(*sp.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return allErrs
}

func validateClientIPAffinityConfig(cfg *corev1.SessionAffinityConfig, fldPath *field.Path) field.ErrorList {
	when := fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP)
	switch {
	case cfg == nil:
		return field.ErrorList{field.Required(fldPath, when)}
	case cfg.ClientIP == nil:
		return field.ErrorList{field.Required(fldPath.Child("clientIP"), when)}
	case cfg.ClientIP.TimeoutSeconds == nil:
		return field.ErrorList{field.Required(fldPath.Child("clientIP", "timeoutSeconds"), when)}
	}
	if t := *cfg.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPAffinitySeconds {
		return field.ErrorList{field.Invalid(fldPath.Child("clientIP", "timeoutSeconds"), t, fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds))}
	}
	return nil
}

// validateTrafficPolicies: externalTrafficPolicy only for Services reachable
// from outside, a health-check node port only for LoadBalancers that keep
// traffic on the local node, internalTrafficPolicy for the rest.
func validateTrafficPolicies(svc *corev1.Service) field.ErrorList {
	var allErrs field.ErrorList
	spec := &svc.Spec
	external := []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
	if !externallyAccessible(svc) {
		if spec.ExternalTrafficPolicy != "" {
			allErrs = append(allErrs, field.Invalid(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	} else {
		allErrs = append(allErrs, validateEnum(spec.ExternalTrafficPolicy, external, specPath.Child("externalTrafficPolicy"))...)
	}
	if !needsHealthCheck(svc) {
		if spec.HealthCheckNodePort != 0 {
			allErrs = append(allErrs, field.Invalid(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		}
	} else if spec.HealthCheckNodePort == 0 {
		allErrs = append(allErrs, field.Required(specPath.Child("healthCheckNodePort"), ""))
	} else {
		allErrs = append(allErrs, invalidPortNum(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort)...)
	}
	switch spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		if spec.InternalTrafficPolicy == nil {
			allErrs = append(allErrs, field.Required(specPath.Child("internalTrafficPolicy"), ""))
		}
	}
	internal := []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}
	if p := spec.InternalTrafficPolicy; p != nil && !slices.Contains(internal, *p) {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("internalTrafficPolicy"), *p, internal))
	}
	distributions := []string{corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameNode, corev1.ServiceTrafficDistributionPreferSameZone}
	if d := spec.TrafficDistribution; d != nil && !slices.Contains(distributions, *d) {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("trafficDistribution"), *d, distributions))
	}
	return allErrs
}

func externallyAccessible(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeClusterIP:
		return len(svc.Spec.ExternalIPs) > 0
	}
	return false
}

func needsHealthCheck(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func isHeadless(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

// validateClusterIPFields checks clusterIP, clusterIPs, ipFamilies and
// ipFamilyPolicy together: clusterIPs[0] is clusterIP, "None" stands alone,
// at most one IP per family, and each IP of the family listed for it.
func validateClusterIPFields(svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var allErrs field.ErrorList
	ipsPath := specPath.Child("clusterIPs")
	familiesPath := specPath.Child("ipFamilies")
	if spec.ClusterIP != "" {
		if len(spec.ClusterIPs) == 0 {
			allErrs = append(allErrs, field.Required(ipsPath, ""))
		} else if spec.ClusterIPs[0] != spec.ClusterIP {
			allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(spec.ClusterIPs) != 0 {
		allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	families := []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	seen := map[corev1.IPFamily]bool{}
	for i, family := range spec.IPFamilies {
		if !slices.Contains(families, family) {
			allErrs = append(allErrs, field.NotSupported(familiesPath.Index(i), family, families))
		}
		if seen[family] {
			allErrs = append(allErrs, field.Duplicate(familiesPath.Index(i), family))
		}
		seen[family] = true
	}
	policies := []corev1.IPFamilyPolicy{corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}
	if p := spec.IPFamilyPolicy; p != nil && !slices.Contains(policies, *p) {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("ipFamilyPolicy"), p, policies))
	}
	invalidIPs := false
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				invalidIPs = true
				allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		errs := validation.IsValidIPForLegacyField(ipsPath.Index(i), ip, true, nil)
		invalidIPs = invalidIPs || len(errs) != 0
		allErrs = append(allErrs, errs...)
	}
	if len(spec.ClusterIPs) > 2 {
		allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	// Further checks on bad IPs would only confuse.
	if invalidIPs {
		return allErrs
	}
	if len(spec.ClusterIPs) > 1 && !isDualStack(spec.ClusterIPs) {
		allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "may specify no more than one IP for each IP family"))
	}
	if !isHeadless(svc) {
		for i, ip := range spec.ClusterIPs {
			if i >= len(spec.IPFamilies) {
				break
			}
			v6 := isIPv6(ip)
			if spec.IPFamilies[i] == corev1.IPv4Protocol && v6 {
				allErrs = append(allErrs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv4 value as indicated by `ipFamilies[%v]`", i)))
			}
			if spec.IPFamilies[i] == corev1.IPv6Protocol && !v6 {
				allErrs = append(allErrs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv6 value as indicated by `ipFamilies[%v]`", i)))
			}
		}
	}
	return allErrs
}
