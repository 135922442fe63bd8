package eventconv

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A core Event converted to events.k8s.io and back is unchanged, and the
// renamed fields land where upstream puts them.
func TestRoundTrip(t *testing.T) {
	now := metav1.Now()
	core := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "web.1", Namespace: "default"},
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Name: "web"},
		Reason:              "Scheduled",
		Message:             "Successfully assigned default/web to worker-1",
		Source:              corev1.EventSource{Component: "default-scheduler"},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               2,
		Type:                corev1.EventTypeNormal,
		Series:              &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NowMicro()},
		ReportingController: "default-scheduler",
		Action:              "Binding",
	}
	ev := FromCore(core)
	if ev.Note != core.Message || ev.Regarding != core.InvolvedObject || ev.DeprecatedCount != 2 || ev.DeprecatedSource.Component != "default-scheduler" || ev.Series.Count != 3 {
		t.Fatalf("FromCore mapped fields wrongly: %+v", ev)
	}
	if diff := cmp.Diff(core, ToCore(ev)); diff != "" {
		t.Fatalf("round trip changed the event (-want +got):\n%s", diff)
	}
}
