package validation

import (
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A Lease is a lock with a lease time: leader election (the scheduler, the
// controller manager) and node heartbeats (kube-node-lease) use one each.

func validateLease(l *coordinationv1.Lease) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&l.ObjectMeta, true, nameIsDNSSubdomain, metadataPath)
	return append(allErrs, validateLeaseSpec(&l.Spec, specPath)...)
}

func validateLeaseUpdate(l, old *coordinationv1.Lease) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&l.ObjectMeta, &old.ObjectMeta, metadataPath)
	return append(allErrs, validateLeaseSpec(&l.Spec, specPath)...)
}

func validateLeaseSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseDurationSeconds"), spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if t := spec.LeaseTransitions; t != nil && *t < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseTransitions"), spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		allErrs = append(allErrs, validateLeaseStrategy(*spec.Strategy, fldPath.Child("strategy"))...)
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return allErrs
}

// validateLeaseStrategy: a strategy without a domain must be one Kubernetes
// defines. Upstream reports it at spec.strategy.strategy; kept as is.
func validateLeaseStrategy(strategy coordinationv1.CoordinatedLeaseStrategy, fldPath *field.Path) field.ErrorList {
	valid := []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}
	if !strings.Contains(string(strategy), "/") {
		if !slices.Contains(valid, strategy) {
			return field.ErrorList{field.NotSupported(fldPath.Child("strategy"), strategy, valid)}
		}
		return nil
	}
	return validateQualifiedName(string(strategy), fldPath.Child("strategy"))
}
