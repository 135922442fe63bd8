package printers

import (
	"fmt"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/hpaconv"
)

var hpaColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Reference", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]),
	column("Targets", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]),
	column("MinPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]),
	column("MaxPods", "integer", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]),
	column("Replicas", "integer", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]),
	ageColumn,
}

// printHPAV1 prints an autoscaling/v1 HPA as the v2 object it converts to:
// upstream's printer is the same for both versions.
func printHPAV1(hpa *autoscalingv1.HorizontalPodAutoscaler, now time.Time) metav1.TableRow {
	return printHPA(hpaconv.ToV2(hpa), now)
}

// printHPA prints NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE, as
// upstream's printHorizontalPodAutoscaler.
func printHPA(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) metav1.TableRow {
	ref := hpa.Spec.ScaleTargetRef.Kind + "/" + hpa.Spec.ScaleTargetRef.Name
	minPods := "<unset>"
	if hpa.Spec.MinReplicas != nil {
		minPods = fmt.Sprint(*hpa.Spec.MinReplicas)
	}
	return cells(hpa.Name, ref, hpaTargets(hpa.Spec.Metrics, hpa.Status.CurrentMetrics), minPods,
		int64(hpa.Spec.MaxReplicas), int64(hpa.Status.CurrentReplicas), age(hpa.CreationTimestamp, now))
}

// hpaTargets is upstream's formatHPAMetrics for resource metrics:
// "cpu: 45%/50%", "memory: 100Mi/200Mi", <unknown> before a reading, and
// "+ N more..." past the first two.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return none
	}
	var list []string
	const maxShown = 2
	for i, spec := range specs {
		if len(list) == maxShown {
			list = append(list, fmt.Sprintf("+ %d more...", len(specs)-maxShown))
			break
		}
		var status *autoscalingv2.MetricStatus
		if i < len(statuses) {
			status = &statuses[i]
		}
		switch {
		case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
			r := spec.Resource
			current := "<unknown>"
			if r.Target.AverageValue != nil {
				if status != nil && status.Resource != nil && status.Resource.Current.AverageValue != nil {
					current = status.Resource.Current.AverageValue.String()
				}
				list = append(list, fmt.Sprintf("%s: %s/%s", r.Name, current, r.Target.AverageValue.String()))
				continue
			}
			if status != nil && status.Resource != nil && status.Resource.Current.AverageUtilization != nil {
				current = fmt.Sprintf("%d%%", *status.Resource.Current.AverageUtilization)
			}
			target := "<auto>"
			if r.Target.AverageUtilization != nil {
				target = fmt.Sprintf("%d%%", *r.Target.AverageUtilization)
			}
			list = append(list, fmt.Sprintf("%s: %s/%s", r.Name, current, target))
		default:
			list = append(list, "<unknown type>")
		}
	}
	return strings.Join(list, ", ")
}
