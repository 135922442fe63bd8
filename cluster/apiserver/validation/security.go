package validation

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePodSecurityContext checks the Pod-wide security settings. In v1
// hostPID sits in the spec and shareProcessNamespace too, but upstream
// validates the internal type, where both live in the security context, so
// that is where its error path points.
func validatePodSecurityContext(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	if sc.FSGroup != nil {
		allErrs = append(allErrs, invalidInt64Each(fldPath.Child("fsGroup"), *sc.FSGroup, validation.IsValidGroupID(*sc.FSGroup))...)
	}
	if sc.RunAsUser != nil {
		allErrs = append(allErrs, invalidInt64Each(fldPath.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		allErrs = append(allErrs, invalidInt64Each(fldPath.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	for i, gid := range sc.SupplementalGroups {
		allErrs = append(allErrs, invalidInt64Each(fldPath.Child("supplementalGroups").Index(i), gid, validation.IsValidGroupID(gid))...)
	}
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("shareProcessNamespace"), *spec.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	allErrs = append(allErrs, validateSysctls(sc.Sysctls, spec, fldPath.Child("sysctls"))...)
	if p := sc.FSGroupChangePolicy; p != nil {
		valid := []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}
		if !slices.Contains(valid, *p) {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("fsGroupChangePolicy"), p, valid))
		}
	}
	allErrs = append(allErrs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	allErrs = append(allErrs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	if p := sc.SupplementalGroupsPolicy; p != nil {
		valid := []corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}
		if !slices.Contains(valid, *p) {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("supplementalGroupsPolicy"), p, valid))
		}
	}
	if p := sc.SELinuxChangePolicy; p != nil {
		valid := []corev1.PodSELinuxChangePolicy{corev1.SELinuxChangePolicyMountOption, corev1.SELinuxChangePolicyRecursive}
		if !slices.Contains(valid, *p) {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("seLinuxChangePolicy"), *p, valid))
		}
	}
	return allErrs
}

// A sysctl name is dot- (or slash-) separated lower-case segments.
const (
	sysctlSegmentFmt      = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
	sysctlContainSlashFmt = "(" + sysctlSegmentFmt + "[\\./])*" + sysctlSegmentFmt
	sysctlMaxLength       = 253
)

var sysctlContainSlashRegexp = regexp.MustCompile("^" + sysctlContainSlashFmt + "$")

func validateSysctls(sysctls []corev1.Sysctl, spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := map[string]bool{}
	for i, s := range sysctls {
		namePath := fldPath.Index(i).Child("name")
		switch {
		case s.Name == "":
			allErrs = append(allErrs, field.Required(namePath, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlContainSlashRegexp.MatchString(s.Name):
			allErrs = append(allErrs, field.Invalid(namePath, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlContainSlashRegexp)))
		case names[s.Name]:
			allErrs = append(allErrs, field.Duplicate(namePath, s.Name))
		}
		// A namespaced sysctl would change the node's own namespace when
		// the Pod shares it.
		switch ns := sysctlNamespace(s.Name); {
		case spec.HostNetwork && ns == "net":
			allErrs = append(allErrs, field.Invalid(namePath, s.Name, "may not be specified when 'hostNetwork' is true"))
		case spec.HostIPC && ns == "ipc":
			allErrs = append(allErrs, field.Invalid(namePath, s.Name, "may not be specified when 'hostIPC' is true"))
		}
		names[s.Name] = true
	}
	return allErrs
}

// sysctlNamespace names the kernel namespace a sysctl belongs to: "net" for
// net.*, "ipc" for the System V IPC and POSIX queue ones, "" for the rest.
func sysctlNamespace(name string) string {
	name = strings.ReplaceAll(name, "/", ".")
	switch {
	case strings.HasPrefix(name, "net."):
		return "net"
	case name == "kernel.sem", strings.HasPrefix(name, "kernel.shm"), strings.HasPrefix(name, "kernel.msg"), strings.HasPrefix(name, "fs.mqueue."):
		return "ipc"
	}
	return ""
}

func validateSeccompProfile(sp *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var allErrs field.ErrorList
	valid := []corev1.SeccompProfileType{corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}
	switch {
	case sp.Type == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	case !slices.Contains(valid, sp.Type):
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), sp.Type, valid))
	}
	if sp.Type == corev1.SeccompProfileTypeLocalhost {
		if sp.LocalhostProfile == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
		} else {
			allErrs = append(allErrs, validateLocalDescendingPath(*sp.LocalhostProfile, fldPath.Child("localhostProfile"))...)
		}
	} else if sp.LocalhostProfile != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return allErrs
}

func validateAppArmorProfile(p *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	switch p.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		switch {
		case p.LocalhostProfile == nil:
			return field.ErrorList{field.Required(fldPath.Child("localhostProfile"), "must be set when AppArmor type is Localhost")}
		case strings.TrimSpace(*p.LocalhostProfile) != *p.LocalhostProfile:
			return field.ErrorList{field.Invalid(fldPath.Child("localhostProfile"), *p.LocalhostProfile, "must not be padded with whitespace")}
		case *p.LocalhostProfile == "":
			return field.ErrorList{field.Required(fldPath.Child("localhostProfile"), "must be set when AppArmor type is Localhost")}
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if p.LocalhostProfile != nil {
			return field.ErrorList{field.Invalid(fldPath.Child("localhostProfile"), p.LocalhostProfile, "can only be set when AppArmor type is Localhost")}
		}
	case "":
		return field.ErrorList{field.Required(fldPath.Child("type"), "type is required when appArmorProfile is set")}
	default:
		return field.ErrorList{field.NotSupported(fldPath.Child("type"), p.Type,
			[]corev1.AppArmorProfileType{corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined})}
	}
	return nil
}

// validateSecurityContext checks a container's security settings.
// Privileged containers are allowed, as on clusters started with
// --allow-privileged=true (kubeadm's and kind's default).
func validateSecurityContext(sc *corev1.SecurityContext, fldPath *field.Path, hostUsers bool) field.ErrorList {
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	if sc.RunAsUser != nil {
		allErrs = append(allErrs, invalidInt64Each(fldPath.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		allErrs = append(allErrs, invalidInt64Each(fldPath.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	if sc.ProcMount != nil {
		valid := []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}
		if !slices.Contains(valid, *sc.ProcMount) {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("procMount"), *sc.ProcMount, valid))
		}
		if hostUsers && *sc.ProcMount == corev1.UnmaskedProcMount {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("procMount"), sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	allErrs = append(allErrs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			allErrs = append(allErrs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, capability := range sc.Capabilities.Add {
				if capability == "CAP_SYS_ADMIN" {
					allErrs = append(allErrs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	allErrs = append(allErrs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	return allErrs
}
