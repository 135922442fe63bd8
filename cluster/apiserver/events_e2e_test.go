package apiserver_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
)

// TestEventsBothAPIs: an Event written through either API is the same
// object through the other, with upstream's field mapping.
func TestEventsBothAPIs(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := adminClient(t, c)
	ctx := testContext(t, testTimeout)
	const ns = "events"
	createNamespace(ctx, t, cs, ns)
	now := metav1.NewTime(time.Now().Truncate(time.Second))

	old, err := cs.CoreV1().Events(ns).Create(ctx, coreEvent(ns, "from-core", now), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create core event: %v", err)
	}
	asNew, err := cs.EventsV1().Events(ns).Get(ctx, "from-core", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get core event through events.k8s.io: %v", err)
	}
	if asNew.UID != old.UID || asNew.ResourceVersion != old.ResourceVersion {
		t.Errorf("events.k8s.io view has uid %s rv %s; core has %s %s", asNew.UID, asNew.ResourceVersion, old.UID, old.ResourceVersion)
	}
	if asNew.Note != old.Message || asNew.Regarding != old.InvolvedObject || asNew.Reason != old.Reason ||
		asNew.DeprecatedSource != old.Source || asNew.DeprecatedCount != old.Count || !asNew.DeprecatedFirstTimestamp.Equal(&old.FirstTimestamp) || asNew.Type != old.Type {
		t.Errorf("events.k8s.io view does not map the core fields:\ncore %+v\nnew  %+v", old, asNew)
	}

	created, err := cs.EventsV1().Events(ns).Create(ctx, newEvent(ns, "from-events"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create events.k8s.io event: %v", err)
	}
	asOld, err := cs.CoreV1().Events(ns).Get(ctx, "from-events", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get events.k8s.io event through core: %v", err)
	}
	if asOld.UID != created.UID || asOld.Message != created.Note || asOld.InvolvedObject != created.Regarding ||
		asOld.ReportingController != created.ReportingController || asOld.ReportingInstance != created.ReportingInstance ||
		asOld.Action != created.Action || !asOld.EventTime.Equal(&created.EventTime) {
		t.Errorf("core view does not map the events.k8s.io fields:\nnew  %+v\ncore %+v", created, asOld)
	}

	// A change through one API is seen through the other.
	asOld.Message = "rewritten"
	if _, err := cs.CoreV1().Events(ns).Update(ctx, asOld, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update through core: %v", err)
	}
	again, err := cs.EventsV1().Events(ns).Get(ctx, "from-events", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Note != "rewritten" {
		t.Errorf("events.k8s.io note = %q after a core update; want %q", again.Note, "rewritten")
	}

	coreList, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newList, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"from-core", "from-events"}
	if got := names(ptrs(coreList.Items)); !equalStrings(got, want) {
		t.Errorf("core list = %v; want %v", got, want)
	}
	if got := names(ptrs(newList.Items)); !equalStrings(got, want) {
		t.Errorf("events.k8s.io list = %v; want %v", got, want)
	}
	byObject, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web-2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(ptrs(byObject.Items)); !equalStrings(got, []string{"from-events"}) {
		t.Errorf("involvedObject.name=web-2 = %v; want [from-events]", got)
	}
}
