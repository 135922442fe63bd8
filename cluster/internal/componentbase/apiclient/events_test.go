package apiclient

import (
	"context"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
)

func TestInstanceSinkNamesItsInstance(t *testing.T) {
	cs := fake.NewClientset()
	sink := &instanceSink{EventSink: &events.EventSinkImpl{Interface: cs.EventsV1()}, instance: "kube-scheduler-master-2"}
	e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"}, ReportingInstance: "the-host"}
	if _, err := sink.Create(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	got, err := cs.EventsV1().Events("default").Get(context.Background(), "e", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ReportingInstance != "kube-scheduler-master-2" {
		t.Errorf("reporting instance %q, want the component's", got.ReportingInstance)
	}
}
