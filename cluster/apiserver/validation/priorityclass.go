package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A PriorityClass maps a name to the integer priority the Priority
// admission plugin writes into a pod's spec. Users may go up to one
// billion; above that, and every name starting "system-", belongs to the
// two classes the API server creates itself.
const (
	// HighestUserDefinablePriority is the largest value a user's class may have.
	HighestUserDefinablePriority int32 = 1000000000
	// SystemCriticalPriority is system-cluster-critical's value.
	SystemCriticalPriority = 2 * HighestUserDefinablePriority
	// SystemPriorityClassPrefix starts the names reserved for the system's classes.
	SystemPriorityClassPrefix = "system-"
	// SystemClusterCritical and SystemNodeCritical name the built-in classes.
	SystemClusterCritical = SystemPriorityClassPrefix + "cluster-critical"
	SystemNodeCritical    = SystemPriorityClassPrefix + "node-critical"
)

// SystemPriorityClasses are the classes every cluster has, as upstream's
// scheduling storage creates them when the API server starts.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		systemClass(SystemNodeCritical, SystemCriticalPriority+1000, "Used for system critical pods that must not be moved from their current node."),
		systemClass(SystemClusterCritical, SystemCriticalPriority, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
	}
}

func systemClass(name string, value int32, description string) *schedulingv1.PriorityClass {
	pc := &schedulingv1.PriorityClass{Value: value, Description: description}
	pc.Name = name
	return pc
}

// knownSystemPriorityClass reports whether name, value and globalDefault
// are exactly those of a built-in class, and if not, why.
func knownSystemPriorityClass(name string, value int32, globalDefault bool) error {
	for _, spc := range SystemPriorityClasses() {
		if spc.Name != name {
			continue
		}
		if spc.Value != value {
			return fmt.Errorf("value of %v PriorityClass must be %v", name, spc.Value)
		}
		if spc.GlobalDefault != globalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", name, spc.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", name)
}

var preemptionPolicies = []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}

func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	allErrs := validateObjectMeta(&pc.ObjectMeta, false, nameIsDNSSubdomain)
	if strings.HasPrefix(pc.Name, SystemPriorityClassPrefix) {
		if err := knownSystemPriorityClass(pc.Name, pc.Value, pc.GlobalDefault); err != nil {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+SystemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > HighestUserDefinablePriority {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("value"),
			fmt.Sprintf("maximum allowed value of a user defined priority is %v", HighestUserDefinablePriority)))
	}
	if pc.PreemptionPolicy != nil {
		allErrs = append(allErrs, validateEnum(*pc.PreemptionPolicy, preemptionPolicies, field.NewPath("preemptionPolicy"))...)
	}
	return allErrs
}

// validatePriorityClassUpdate: the value and the preemption policy are
// fixed once the class exists (pods already carry them); the description
// and globalDefault may change.
func validatePriorityClassUpdate(pc, old *schedulingv1.PriorityClass) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&pc.ObjectMeta, &old.ObjectMeta)
	if pc.Value != old.Value {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	return append(allErrs, validateImmutable(pc.PreemptionPolicy, old.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
}
