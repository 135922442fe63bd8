package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// validateNamespace checks a new Namespace: a DNS-label name (it becomes
// part of every Service's DNS name in it) and well-formed finalizers.
func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	allErrs := validateObjectMeta(&ns.ObjectMeta, false, nameIsDNSLabel)
	for _, f := range ns.Spec.Finalizers {
		// Upstream reports these on the list, without an index.
		allErrs = append(allErrs, validateFinalizerName(string(f), specPath.Child("finalizers"))...)
	}
	return allErrs
}

func validateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateFinalizerName(name, fldPath)
	return append(allErrs, validateKubeFinalizerName(name, fldPath)...)
}

func validateNamespaceUpdate(ns, old *corev1.Namespace) field.ErrorList {
	return validateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta)
}

// validateNamespaceStatusUpdate: a Namespace is Active until it is deleted,
// and Terminating from then on.
func validateNamespaceStatusUpdate(ns, old *corev1.Namespace) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta)
	phasePath := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			allErrs = append(allErrs, field.Invalid(phasePath, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		allErrs = append(allErrs, field.Invalid(phasePath, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return allErrs
}

// validateNode checks a new Node. Its status is optional (the kubelet fills
// it in later) but must make sense when present.
func validateNode(node *corev1.Node) field.ErrorList {
	allErrs := validateObjectMeta(&node.ObjectMeta, false, nameIsDNSSubdomain)
	allErrs = append(allErrs, validateNodeTaints(node.Spec.Taints, metadataPath.Child("taints"))...)
	allErrs = append(allErrs, validateNodeResources(node)...)
	cidrsPath := specPath.Child("podCIDRs")
	for i, cidr := range node.Spec.PodCIDRs {
		allErrs = append(allErrs, validation.IsValidCIDR(cidrsPath.Index(i), cidr)...)
	}
	if cidrs := node.Spec.PodCIDRs; len(cidrs) > 1 {
		dual, err := netutils.IsDualStackCIDRStrings(cidrs)
		if err != nil {
			allErrs = append(allErrs, field.InternalError(cidrsPath, fmt.Errorf("invalid PodCIDRs. failed to check with dual stack with error:%v", err)))
		}
		if !dual || len(cidrs) > 2 {
			allErrs = append(allErrs, field.Invalid(cidrsPath, cidrs, "may specify no more than one CIDR for each IP family"))
		}
		seen := map[string]bool{}
		for i, cidr := range cidrs {
			if seen[cidr] {
				allErrs = append(allErrs, field.Duplicate(cidrsPath.Index(i), cidr))
			}
			seen[cidr] = true
		}
	}
	return allErrs
}

// validateNodeTaints checks taints, which must be unique by key and effect.
// Upstream reports them under metadata.taints, not spec.taints.
func validateNodeTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[corev1.TaintEffect]map[string]bool{}
	for i, t := range taints {
		idxPath := fldPath.Index(i)
		allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, idxPath.Child("key"))...)
		if errs := validation.IsValidLabelValue(t.Value); len(errs) != 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("value"), t.Value, strings.Join(errs, ";")))
		}
		allErrs = append(allErrs, validateTaintEffect(t.Effect, idxPath.Child("effect"))...)
		if seen[t.Effect][t.Key] {
			dup := field.Duplicate(idxPath, t)
			dup.Detail = "taints must be unique by key and effect pair"
			allErrs = append(allErrs, dup)
			continue
		}
		if seen[t.Effect] == nil {
			seen[t.Effect] = map[string]bool{}
		}
		seen[t.Effect][t.Key] = true
	}
	return allErrs
}

// validateNodeResources: capacity and allocatable amounts may not be
// negative, and countable ones must be whole.
func validateNodeResources(node *corev1.Node) field.ErrorList {
	var allErrs field.ErrorList
	for name, q := range node.Status.Capacity {
		allErrs = append(allErrs, validateResourceQuantity(name, q, field.NewPath("status", "capacity", string(name)))...)
	}
	for name, q := range node.Status.Allocatable {
		allErrs = append(allErrs, validateResourceQuantity(name, q, field.NewPath("status", "allocatable", string(name)))...)
	}
	return allErrs
}

// validateNodeUpdate: podCIDRs and providerID may be set once (by the
// controller manager) and then never change; taints and unschedulable may.
func validateNodeUpdate(node, old *corev1.Node) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&node.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateNodeResources(node)...)
	seen := map[corev1.NodeAddress]bool{}
	for i, addr := range node.Status.Addresses {
		if seen[addr] {
			allErrs = append(allErrs, field.Duplicate(field.NewPath("status", "addresses").Index(i), addr))
		}
		seen[addr] = true
	}
	const podCIDRMsg = "node updates may not change podCIDR except from \"\" to valid"
	if oldCIDRs := old.Spec.PodCIDRs; len(oldCIDRs) > 0 {
		if len(oldCIDRs) != len(node.Spec.PodCIDRs) {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("podCIDRs"), podCIDRMsg))
		} else {
			for i, cidr := range oldCIDRs {
				if cidr != node.Spec.PodCIDRs[i] {
					allErrs = append(allErrs, field.Forbidden(specPath.Child("podCIDRs"), podCIDRMsg))
				}
			}
		}
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != node.Spec.ProviderID {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	allErrs = append(allErrs, validateNodeTaints(node.Spec.Taints, metadataPath.Child("taints"))...)
	if node.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("externalID"), "may not be updated"))
	}
	return allErrs
}
