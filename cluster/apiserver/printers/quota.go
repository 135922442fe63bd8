package printers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var resourceQuotaColumns = []metav1.TableColumnDefinition{
	nameColumn,
	ageColumn,
	column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
	column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
}

// printResourceQuota prints NAME AGE REQUEST LIMIT: each resource of the
// spec as "name: used/hard" from the status, the limits.* ones under
// LIMIT and all others under REQUEST, in name order.
func printResourceQuota(q *corev1.ResourceQuota, now time.Time) metav1.TableRow {
	names := make([]string, 0, len(q.Spec.Hard))
	for name := range q.Spec.Hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var requests, limits []string
	for _, name := range names {
		used, hard := q.Status.Used[corev1.ResourceName(name)], q.Status.Hard[corev1.ResourceName(name)]
		entry := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if prefix, _, ok := strings.Cut(name, "."); ok && prefix == "limits" {
			limits = append(limits, entry)
		} else {
			requests = append(requests, entry)
		}
	}
	return cells(q.Name, age(q.CreationTimestamp, now), strings.Join(requests, ", "), strings.Join(limits, ", "))
}

var limitRangeColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Created At", "date", objectMetaDoc["creationTimestamp"]),
}

// printLimitRange prints NAME CREATED AT, the creation time as an RFC 3339
// timestamp.
func printLimitRange(lr *corev1.LimitRange, _ time.Time) metav1.TableRow {
	return cells(lr.Name, lr.CreationTimestamp.UTC().Format(time.RFC3339))
}
