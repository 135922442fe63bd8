package printers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// microAgo is a MicroTime d before now.
func microAgo(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(now.Add(-d)) }

func TestEventCells(t *testing.T) {
	podRef := corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1", FieldPath: "spec.containers{web}"}
	tests := []struct {
		name  string
		event runtime.Object
		// LAST SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST SEEN COUNT NAME
		want []any
	}{
		{
			name: "core event recorded the old way",
			event: &corev1.Event{
				ObjectMeta:     objectMeta("web-1.17a2b3c4d5e6f708", 5*time.Minute),
				InvolvedObject: podRef,
				Reason:         "BackOff", Type: corev1.EventTypeWarning,
				Message:        "Back-off restarting failed container web in pod web-1_default(1234)\n",
				Source:         corev1.EventSource{Component: "kubelet", Host: "worker-1"},
				FirstTimestamp: ago(5 * time.Minute), LastTimestamp: ago(30 * time.Second), Count: 7,
			},
			want: []any{"30s", "Warning", "BackOff", "pod/web-1", "spec.containers{web}", "kubelet, worker-1",
				"Back-off restarting failed container web in pod web-1_default(1234)", "5m", int64(7), "web-1.17a2b3c4d5e6f708"},
		},
		{
			name: "core event recorded the new way, once",
			event: &corev1.Event{
				ObjectMeta:     objectMeta("web-1.1", time.Minute),
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-1"},
				Reason:         "Scheduled", Type: corev1.EventTypeNormal,
				Message:             "Successfully assigned default/web-1 to worker-1",
				ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-master-1",
				EventTime: microAgo(70 * time.Second),
			},
			want: []any{"70s", "Normal", "Scheduled", "pod/web-1", "", "default-scheduler, default-scheduler-master-1",
				"Successfully assigned default/web-1 to worker-1", "70s", int64(1), "web-1.1"},
		},
		{
			name: "source falls back per part",
			event: &corev1.Event{
				ObjectMeta:     objectMeta("n.1", time.Minute),
				InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "worker-1"},
				Reason:         "NodeReady", Type: corev1.EventTypeNormal,
				Source:              corev1.EventSource{Host: "worker-1"},
				ReportingController: "kubelet",
				FirstTimestamp:      ago(time.Minute), Count: 1,
			},
			want: []any{"60s", "Normal", "NodeReady", "node/worker-1", "", "kubelet, worker-1", "", "60s", int64(1), "n.1"},
		},
		{
			name: "object without a name, no times at all",
			event: &corev1.Event{
				ObjectMeta:     objectMeta("cluster.1", time.Minute),
				InvolvedObject: corev1.ObjectReference{Kind: "Namespace"},
				Reason:         "Unknown", Type: corev1.EventTypeNormal,
			},
			want: []any{"<unknown>", "Normal", "Unknown", "namespace", "", "", "", "<unknown>", int64(1), "cluster.1"},
		},
		{
			name: "events.k8s.io event in a series",
			event: &eventsv1.Event{
				ObjectMeta: objectMeta("web-1.2", time.Hour),
				Regarding:  podRef,
				Reason:     "Unhealthy", Type: corev1.EventTypeWarning,
				Note:                "Readiness probe failed: HTTP probe failed with statuscode: 503",
				ReportingController: "kubelet", ReportingInstance: "worker-1",
				EventTime: microAgo(20 * time.Minute),
				Series:    &eventsv1.EventSeries{Count: 42, LastObservedTime: microAgo(15 * time.Second)},
			},
			want: []any{"15s", "Warning", "Unhealthy", "pod/web-1", "spec.containers{web}", "kubelet, worker-1",
				"Readiness probe failed: HTTP probe failed with statuscode: 503", "20m", int64(42), "web-1.2"},
		},
		{
			name: "events.k8s.io event with the deprecated fields",
			event: &eventsv1.Event{
				ObjectMeta: objectMeta("web.3", time.Hour),
				Regarding:  corev1.ObjectReference{Kind: "Deployment", Name: "web"},
				Reason:     "ScalingReplicaSet", Type: corev1.EventTypeNormal,
				Note:                     "Scaled up replica set web-7d9f8c6b5 from 0 to 3",
				DeprecatedSource:         corev1.EventSource{Component: "deployment-controller"},
				DeprecatedFirstTimestamp: ago(3 * time.Minute), DeprecatedLastTimestamp: ago(2 * time.Minute), DeprecatedCount: 2,
			},
			want: []any{"2m", "Normal", "ScalingReplicaSet", "deployment/web", "", "deployment-controller",
				"Scaled up replica set web-7d9f8c6b5 from 0 to 3", "3m", int64(2), "web.3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertCells(t, rowCells(t, tt.event), tt.want)
		})
	}
}
