package printers

import (
	"fmt"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/hpaconv"
)

func TestHPATargets(t *testing.T) {
	cpu := func(target int32) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(target)}}}
	}
	mem := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(resource.MustParse("200Mi"))}}}
	cpuStatus := autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr[int32](45)}}}
	memStatus := autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: corev1.ResourceMemory, Current: autoscalingv2.MetricValueStatus{AverageValue: ptr(resource.MustParse("100Mi"))}}}
	tests := []struct {
		name     string
		specs    []autoscalingv2.MetricSpec
		statuses []autoscalingv2.MetricStatus
		want     string
	}{
		{name: "none", want: "<none>"},
		{name: "before a reading", specs: []autoscalingv2.MetricSpec{cpu(50)}, want: "cpu: <unknown>/50%"},
		{name: "utilization", specs: []autoscalingv2.MetricSpec{cpu(50)}, statuses: []autoscalingv2.MetricStatus{cpuStatus}, want: "cpu: 45%/50%"},
		{name: "average value", specs: []autoscalingv2.MetricSpec{cpu(50), mem}, statuses: []autoscalingv2.MetricStatus{cpuStatus, memStatus}, want: "cpu: 45%/50%, memory: 100Mi/200Mi"},
		{name: "more than two", specs: []autoscalingv2.MetricSpec{cpu(50), mem, cpu(60), cpu(70)}, want: "cpu: <unknown>/50%, memory: <unknown>/200Mi, + 2 more..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hpaTargets(tt.specs, tt.statuses); got != tt.want {
				t.Errorf("targets = %q, want %q", got, tt.want)
			}
		})
	}
}

// A v1 HPA prints the row of the v2 object it is: upstream's printer is one
// for both versions.
func TestPrintHPAV1(t *testing.T) {
	v2 := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: metav1.Unix(1000, 0)},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, MinReplicas: ptr[int32](1), MaxReplicas: 4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(resource.MustParse("200Mi"))}}}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2},
	}
	now := metav1.Unix(1060, 0).Time
	want, got := printHPA(v2, now), printHPAV1(hpaconv.FromV2(v2), now)
	if fmt.Sprint(got.Cells) != fmt.Sprint(want.Cells) {
		t.Errorf("v1 row = %v, want v2's %v", got.Cells, want.Cells)
	}
	if got.Cells[2] != "memory: <unknown>/200Mi" {
		t.Errorf("targets = %v, want the memory metric from the annotation", got.Cells[2])
	}
}
