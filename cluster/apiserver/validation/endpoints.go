package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateEndpoints checks a hand-written or controller-written Endpoints.
func validateEndpoints(ep *corev1.Endpoints) field.ErrorList {
	allErrs := validateObjectMeta(&ep.ObjectMeta, true, nameIsDNSSubdomain)
	subsetsPath := field.NewPath("subsets")
	for i := range ep.Subsets {
		ss := &ep.Subsets[i]
		idxPath := subsetsPath.Index(i)
		// A headless Service's endpoints may have no ports, but every
		// subset needs an address.
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			allErrs = append(allErrs, field.Required(idxPath, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			allErrs = append(allErrs, validateEndpointAddress(&ss.Addresses[j], idxPath.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			allErrs = append(allErrs, validateEndpointAddress(&ss.NotReadyAddresses[j], idxPath.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			allErrs = append(allErrs, validateEndpointPort(&ss.Ports[j], len(ss.Ports) > 1, idxPath.Child("ports").Index(j))...)
		}
	}
	return allErrs
}

func validateEndpointsUpdate(ep, old *corev1.Endpoints) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&ep.ObjectMeta, &old.ObjectMeta)
	return append(allErrs, validateEndpoints(ep)...)
}

func validateEndpointAddress(addr *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	allErrs := validation.IsValidIPForLegacyField(fldPath.Child("ip"), addr.IP, true, nil)
	if addr.Hostname != "" {
		allErrs = append(allErrs, validateDNS1123Label(addr.Hostname, fldPath.Child("hostname"))...)
	}
	if addr.NodeName != nil {
		allErrs = append(allErrs, validateNameWith(nameIsDNSSubdomain, *addr.NodeName, fldPath.Child("nodeName"))...)
	}
	return append(allErrs, validateEndpointIP(addr.IP, fldPath.Child("ip"))...)
}

func validateEndpointPort(port *corev1.EndpointPort, requireName bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if requireName && port.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	} else if port.Name != "" {
		allErrs = append(allErrs, validateDNS1123Label(port.Name, fldPath.Child("name"))...)
	}
	allErrs = append(allErrs, invalidPortNum(fldPath.Child("port"), port.Port)...)
	allErrs = append(allErrs, validateProtocol(port.Protocol, fldPath.Child("protocol"))...)
	if port.AppProtocol != nil {
		allErrs = append(allErrs, validateQualifiedName(*port.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return allErrs
}
