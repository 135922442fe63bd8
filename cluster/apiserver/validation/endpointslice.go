package validation

import (
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"slices"
)

// Limits that keep one EndpointSlice small; a Service with more endpoints
// gets more slices.
const (
	maxSliceTopologyLabels = 16
	maxSliceAddresses      = 100
	maxSlicePorts          = 100
	maxSliceEndpoints      = 1000
)

var sliceAddressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}

func validateEndpointSlice(slice *discoveryv1.EndpointSlice) field.ErrorList {
	allErrs := validateObjectMeta(&slice.ObjectMeta, true, nameIsDNSSubdomain)
	allErrs = append(allErrs, validateEnum(slice.AddressType, sliceAddressTypes, field.NewPath("addressType"))...)
	allErrs = append(allErrs, validateSliceEndpoints(slice.Endpoints, slice.AddressType, field.NewPath("endpoints"))...)
	return append(allErrs, validateSlicePorts(slice.Ports, field.NewPath("ports"))...)
}

// validateEndpointSliceUpdate: a slice holds one address family for life.
func validateEndpointSliceUpdate(slice, old *discoveryv1.EndpointSlice) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&slice.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateEndpointSlice(slice)...)
	return append(allErrs, validateImmutable(slice.AddressType, old.AddressType, field.NewPath("addressType"))...)
}

func validateSliceEndpoints(endpoints []discoveryv1.Endpoint, addrType discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	if len(endpoints) > maxSliceEndpoints {
		return field.ErrorList{field.TooMany(fldPath, len(endpoints), maxSliceEndpoints)}
	}
	var allErrs field.ErrorList
	for i, ep := range endpoints {
		idxPath := fldPath.Index(i)
		addrPath := idxPath.Child("addresses")
		if len(ep.Addresses) == 0 {
			allErrs = append(allErrs, field.Required(addrPath, "must contain at least 1 address"))
		} else if len(ep.Addresses) > maxSliceAddresses {
			allErrs = append(allErrs, field.TooMany(addrPath, len(ep.Addresses), maxSliceAddresses))
		}
		for j, addr := range ep.Addresses {
			allErrs = append(allErrs, validateSliceAddress(addr, addrType, addrPath.Index(j))...)
		}
		topologyPath := idxPath.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxSliceTopologyLabels {
			allErrs = append(allErrs, field.TooMany(topologyPath, len(ep.DeprecatedTopology), maxSliceTopologyLabels))
		}
		allErrs = append(allErrs, metav1validation.ValidateLabels(ep.DeprecatedTopology, topologyPath)...)
		if ep.Hostname != nil {
			allErrs = append(allErrs, validateDNS1123Label(*ep.Hostname, idxPath.Child("hostname"))...)
		}
		if ep.NodeName != nil {
			allErrs = append(allErrs, validateNameWith(nameIsDNSSubdomain, *ep.NodeName, idxPath.Child("nodeName"))...)
		}
	}
	return allErrs
}

// validateSliceAddress checks an address against the slice's family. An
// address type the server does not know passes unchecked, as upstream's does.
func validateSliceAddress(addr string, addrType discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	switch addrType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		if errs := validation.IsValidIPForLegacyField(fldPath, addr, true, nil); len(errs) > 0 {
			return errs
		}
		var allErrs field.ErrorList
		if v6 := isIPv6(addr); addrType == discoveryv1.AddressTypeIPv4 && v6 {
			allErrs = append(allErrs, field.Invalid(fldPath, addr, "must be an IPv4 address"))
		} else if addrType == discoveryv1.AddressTypeIPv6 && !v6 {
			allErrs = append(allErrs, field.Invalid(fldPath, addr, "must be an IPv6 address"))
		}
		return append(allErrs, validateEndpointIP(addr, fldPath)...)
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(fldPath, addr)
	}
	return nil
}

func validateSlicePorts(ports []discoveryv1.EndpointPort, fldPath *field.Path) field.ErrorList {
	if len(ports) > maxSlicePorts {
		return field.ErrorList{field.TooMany(fldPath, len(ports), maxSlicePorts)}
	}
	var allErrs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		idxPath := fldPath.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			allErrs = append(allErrs, validateDNS1123Label(name, idxPath.Child("name"))...)
		}
		if names[name] {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), name))
		}
		names[name] = true
		if port.Protocol == nil {
			allErrs = append(allErrs, field.Required(idxPath.Child("protocol"), ""))
		} else if !slices.Contains(supportedPortProtocols, *port.Protocol) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("protocol"), *port.Protocol, supportedPortProtocols))
		}
		if port.AppProtocol != nil {
			allErrs = append(allErrs, validateQualifiedName(*port.AppProtocol, idxPath.Child("appProtocol"))...)
		}
	}
	return allErrs
}
