package validation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The naming rules, as upstream assigns them: most objects are named like a
// DNS subdomain ("my.app-1"); a Namespace like a DNS label, because its name
// becomes part of DNS names ("web.shop.svc"); a Service like an RFC 1035
// label, which must start with a letter, because its name becomes an
// environment variable prefix and a DNS label.
var (
	nameIsDNSSubdomain = apimachineryvalidation.NameIsDNSSubdomain
	nameIsDNSLabel     = apimachineryvalidation.NameIsDNSLabel
	nameIsDNS1035Label = apimachineryvalidation.NameIsDNS1035Label
)

var (
	metadataPath = field.NewPath("metadata")
	specPath     = field.NewPath("spec")
	statusPath   = field.NewPath("status")
)

// validateObjectMeta checks an object's metadata on create: name or
// generateName, namespace present exactly when the kind is namespaced,
// labels, annotations, owner references and finalizers. It is core's
// ValidateObjectMeta: apimachinery's, plus the rule that a finalizer without
// a domain must be one Kubernetes defines.
func validateObjectMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(meta, namespaced, nameFn, metadataPath)
	for i, name := range meta.Finalizers {
		allErrs = append(allErrs, validateKubeFinalizerName(name, metadataPath.Child("finalizers").Index(i))...)
	}
	return allErrs
}

// validateObjectMetaUpdate checks metadata on update: everything
// validateObjectMeta checks that can change, and that name, namespace, uid
// and creationTimestamp did not; that resourceVersion is set (the caller
// fills it in for an unconditional update, as upstream's store does) and that
// generation did not go down.
func validateObjectMetaUpdate(newMeta, oldMeta *metav1.ObjectMeta) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(newMeta, oldMeta, metadataPath)
	for i, name := range newMeta.Finalizers {
		allErrs = append(allErrs, validateKubeFinalizerName(name, metadataPath.Child("finalizers").Index(i))...)
	}
	return allErrs
}

// standardFinalizers are the finalizer names without a domain that
// Kubernetes itself uses.
var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true,
	metav1.FinalizerOrphanDependents:   true,
	metav1.FinalizerDeleteDependents:   true,
}

func validateKubeFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if !strings.Contains(name, "/") && !standardFinalizers[name] {
		return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}

// invalidEach turns each message of a string check into an Invalid error
// on fldPath: the shape of most of upstream's field checks.
func invalidEach(fldPath *field.Path, value string, msgs []string) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range msgs {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

// invalidInt64Each is invalidEach for a number.
func invalidInt64Each(fldPath *field.Path, value int64, msgs []string) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range msgs {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, value, validation.IsDNS1123Label(value))
}

func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, value, validation.IsDNS1123Subdomain(value))
}

func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, value, validation.IsQualifiedName(value))
}

// validateNameWith checks a reference to another object by that object's
// naming rule (a Secret named in a volume, a node named in nodeName).
func validateNameWith(nameFn apimachineryvalidation.ValidateNameFunc, value string, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, value, nameFn(value, false))
}

func validateAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateAnnotations(annotations, fldPath)
}

func validateNonnegative(value int64, fldPath *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateNonnegativeField(value, fldPath)
}

// validateImmutable reports "field is immutable" when newVal differs from
// oldVal. It compares semantically: nil and empty are equal, and so are
// "1000m" and "1" CPU.
func validateImmutable(newVal, oldVal any, fldPath *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateImmutableField(newVal, oldVal, fldPath)
}
