package printers

import (
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var priorityClassColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Value", "integer", "The value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec."),
	column("Global-Default", "boolean", "Whether this priority class should be considered as the default priority for pods that do not have any priority class."),
	ageColumn,
	column("PreemptionPolicy", "string", "The Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority."),
}

// printPriorityClass prints NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY.
func printPriorityClass(pc *schedulingv1.PriorityClass, now time.Time) metav1.TableRow {
	policy := "<unset>"
	if pc.PreemptionPolicy != nil {
		policy = string(*pc.PreemptionPolicy)
	}
	return cells(pc.Name, int64(pc.Value), pc.GlobalDefault, age(pc.CreationTimestamp, now), policy)
}
