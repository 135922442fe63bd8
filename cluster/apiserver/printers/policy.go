package printers

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var podDisruptionBudgetColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Min Available", "string", "The minimum number of pods that must be available."),
	column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
	column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
	ageColumn,
}

// printPodDisruptionBudget prints NAME MIN AVAILABLE MAX UNAVAILABLE
// ALLOWED DISRUPTIONS AGE; the bound the budget does not set is N/A.
func printPodDisruptionBudget(pdb *policyv1.PodDisruptionBudget, now time.Time) metav1.TableRow {
	minAvailable, maxUnavailable := "N/A", "N/A"
	if pdb.Spec.MinAvailable != nil {
		minAvailable = pdb.Spec.MinAvailable.String()
	}
	if pdb.Spec.MaxUnavailable != nil {
		maxUnavailable = pdb.Spec.MaxUnavailable.String()
	}
	return cells(pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), age(pdb.CreationTimestamp, now))
}
