package validation

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePodSpec checks a PodSpec, in a Pod (isPod) or in a workload's
// template. The checks are upstream's ValidatePodSpec, in its order, minus
// the ones for features klab leaves out (see the package comment).
func validatePodSpec(spec *corev1.PodSpec, fldPath *field.Path, isPod bool) field.ErrorList {
	var allErrs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}
	gracePeriod := spec.TerminationGracePeriodSeconds
	hostUsers := spec.HostUsers == nil || *spec.HostUsers

	volumes, errs := validateVolumes(spec.Volumes, fldPath.Child("volumes"), isPod)
	allErrs = append(allErrs, errs...)
	allErrs = append(allErrs, validateContainers(spec.Containers, volumes, gracePeriod, fldPath.Child("containers"), hostUsers)...)
	allErrs = append(allErrs, validateInitContainers(spec.InitContainers, spec.Containers, volumes, gracePeriod, fldPath.Child("initContainers"), hostUsers)...)
	allErrs = append(allErrs, validatePodHostNetworkDeps(spec, fldPath, isPod)...)
	allErrs = append(allErrs, validateRestartPolicy(spec.RestartPolicy, fldPath.Child("restartPolicy"))...)
	allErrs = append(allErrs, validateDNSPolicy(spec.DNSPolicy, fldPath.Child("dnsPolicy"))...)
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	allErrs = append(allErrs, validatePodSecurityContext(spec, fldPath.Child("securityContext"))...)
	allErrs = append(allErrs, validateImagePullSecrets(spec.ImagePullSecrets, fldPath.Child("imagePullSecrets"))...)
	allErrs = append(allErrs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	allErrs = append(allErrs, validatePodDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	for i, gate := range spec.ReadinessGates {
		allErrs = append(allErrs, validateQualifiedName(string(gate.ConditionType), fldPath.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	allErrs = append(allErrs, validateSchedulingGates(spec.SchedulingGates, fldPath.Child("schedulingGates"))...)
	allErrs = append(allErrs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	allErrs = append(allErrs, validateHostUsers(spec, fldPath)...)

	if spec.ServiceAccountName != "" {
		allErrs = append(allErrs, validateNameWith(nameIsDNSSubdomain, spec.ServiceAccountName, fldPath.Child("serviceAccountName"))...)
	}
	if spec.NodeName != "" {
		allErrs = append(allErrs, validateNameWith(nameIsDNSSubdomain, spec.NodeName, fldPath.Child("nodeName"))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if spec.Hostname != "" {
		allErrs = append(allErrs, validateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		allErrs = append(allErrs, validateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	allErrs = append(allErrs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	for i, alias := range spec.HostAliases {
		aliasPath := fldPath.Child("hostAliases").Index(i)
		allErrs = append(allErrs, validation.IsValidIP(aliasPath.Child("ip"), alias.IP)...)
		for j, hostname := range alias.Hostnames {
			allErrs = append(allErrs, validateDNS1123Subdomain(hostname, aliasPath.Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		allErrs = append(allErrs, validateNameWith(nameIsDNSSubdomain, spec.PriorityClassName, fldPath.Child("priorityClassName"))...)
	}
	if spec.RuntimeClassName != nil {
		allErrs = append(allErrs, validateNameWith(nameIsDNSSubdomain, *spec.RuntimeClassName, fldPath.Child("runtimeClassName"))...)
	}
	if p := spec.PreemptionPolicy; p != nil {
		allErrs = append(allErrs, validateEnum(*p, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}, fldPath.Child("preemptionPolicy"))...)
	}
	if spec.Overhead != nil {
		allErrs = append(allErrs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, fldPath.Child("overhead"))...)
	}
	if spec.OS != nil {
		osPath := fldPath.Child("os")
		switch spec.OS.Name {
		case corev1.Linux, corev1.Windows:
		case "":
			allErrs = append(allErrs, field.Required(osPath.Child("name"), "cannot be empty"))
		default:
			allErrs = append(allErrs, field.NotSupported(osPath, spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows}))
		}
	}
	return allErrs
}

// validateEnum is the shape of upstream's closed-set checks: an empty value
// is Required, an unknown one NotSupported with the list of valid values.
func validateEnum[T ~string](value T, valid []T, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	for _, v := range valid {
		if value == v {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, value, valid)}
}

func validateRestartPolicy(policy corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	return validateEnum(policy, []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}, fldPath)
}

func validateDNSPolicy(policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	return validateEnum(policy, []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}, fldPath)
}

// validatePodHostNetworkDeps: with hostNetwork a container port is opened on
// the node itself, so a Pod's hostPort must equal its containerPort. A
// template may leave hostPort 0, because defaulting fills it in the Pod.
func validatePodHostNetworkDeps(spec *corev1.PodSpec, fldPath *field.Path, isPod bool) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var allErrs field.ErrorList
	for i, c := range spec.Containers {
		for j, port := range c.Ports {
			if (isPod || port.HostPort != 0) && port.HostPort != port.ContainerPort {
				portPath := fldPath.Child("containers").Index(i).Child("ports").Index(j)
				allErrs = append(allErrs, field.Invalid(portPath.Child("hostPort"), port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return allErrs
}

// validateHostUsers: a Pod in its own user namespace may not share the
// node's other namespaces. The capitalised paths are upstream's.
func validateHostUsers(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var allErrs field.ErrorList
	if spec.HostNetwork {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("hostNetwork"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostPID {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("HostPID"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostIPC {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("HostIPC"), "when `pod.Spec.HostUsers` is false"))
	}
	return allErrs
}

func validateImagePullSecrets(secrets []corev1.LocalObjectReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, s := range secrets {
		if s != (corev1.LocalObjectReference{Name: s.Name}) {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), s, "only name may be set"))
		}
	}
	return allErrs
}

func validateSchedulingGates(gates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for i, gate := range gates {
		allErrs = append(allErrs, validateQualifiedName(gate.Name, fldPath.Index(i))...)
		if seen[gate.Name] {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), gate.Name))
		}
		seen[gate.Name] = true
	}
	return allErrs
}

// Limits of the resolver in the C library, which reads the resolv.conf the
// kubelet writes from dnsConfig.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

func validatePodDNSConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone))}
		}
	}
	if cfg == nil {
		return nil
	}
	var allErrs field.ErrorList
	if len(cfg.Nameservers) > maxDNSNameservers {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		allErrs = append(allErrs, validation.IsValidIP(fldPath.Child("nameservers").Index(i), ns)...)
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(cfg.Searches, " ")) > maxDNSSearchListChars {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, search := range cfg.Searches {
		// "." alone (search the root) and underscores (SRV-style names)
		// are allowed since RelaxedDNSSearchValidation went GA.
		if search == "." {
			continue
		}
		search = strings.TrimSuffix(search, ".")
		allErrs = append(allErrs, invalidEach(fldPath.Child("searches").Index(i), search, validation.IsDNS1123SubdomainWithUnderscore(search))...)
	}
	for i, opt := range cfg.Options {
		if opt.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return allErrs
}

// validatePodTemplateSpec checks the template of a Deployment, ReplicaSet,
// DaemonSet or Job: its labels and annotations, and its PodSpec with
// template rules.
func validatePodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateLabels(t.Labels, fldPath.Child("labels"))
	allErrs = append(allErrs, validateAnnotations(t.Annotations, fldPath.Child("annotations"))...)
	allErrs = append(allErrs, validatePodAnnotations(t.Annotations, &t.Spec, fldPath.Child("annotations"))...)
	allErrs = append(allErrs, validatePodSpec(&t.Spec, fldPath.Child("spec"), false)...)
	if len(t.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return allErrs
}
