package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// isIPv6 reports whether ip parses as an IPv6 (and not IPv4-mapped) address.
func isIPv6(ip string) bool {
	return netutils.IsIPv6String(ip)
}

// isDualStack reports whether the IPs include both an IPv4 and an IPv6
// address.
func isDualStack(ips []string) bool {
	dual, err := netutils.IsDualStackIPStrings(ips)
	return err == nil && dual
}

// validateNonSpecialIP refuses addresses that can never be a Service's or an
// endpoint's: unspecified, loopback and link-local ones.
func validateNonSpecialIP(ip string, fldPath *field.Path) field.ErrorList {
	return validateIPNotSpecial(ip, fldPath, false)
}

// validateEndpointIP is validateNonSpecialIP for an endpoint's address,
// which klab lets be a loopback one: in the local runtime every pod is a
// server on its own 127.x.y.z address (Linux routes all of 127.0.0.0/8 to
// the loopback interface), the in-process stand-in for a pod network.
// Upstream refuses them because on a real node 127.0.0.1 is every pod's
// own loopback.
func validateEndpointIP(ip string, fldPath *field.Path) field.ErrorList {
	return validateIPNotSpecial(ip, fldPath, true)
}

func validateIPNotSpecial(ip string, fldPath *field.Path, loopbackOK bool) field.ErrorList {
	parsed := netutils.ParseIPSloppy(ip)
	if parsed == nil {
		return field.ErrorList{field.Invalid(fldPath, ip, "must be a valid IP address")}
	}
	var allErrs field.ErrorList
	if parsed.IsUnspecified() {
		allErrs = append(allErrs, field.Invalid(fldPath, ip, fmt.Sprintf("may not be unspecified (%v)", ip)))
	}
	if parsed.IsLoopback() && !loopbackOK {
		allErrs = append(allErrs, field.Invalid(fldPath, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if parsed.IsLinkLocalUnicast() {
		allErrs = append(allErrs, field.Invalid(fldPath, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if parsed.IsLinkLocalMulticast() {
		allErrs = append(allErrs, field.Invalid(fldPath, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return allErrs
}
