package controllerutil

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestControllerExpectations(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		run  func(e *ControllerExpectations, clk *clocktesting.FakePassiveClock)
		want bool
	}{
		{"nothing expected", func(*ControllerExpectations, *clocktesting.FakePassiveClock) {}, true},
		{"creates outstanding", func(e *ControllerExpectations, _ *clocktesting.FakePassiveClock) {
			e.ExpectCreations("k", 2)
			e.CreationObserved("k")
		}, false},
		{"all creates observed", func(e *ControllerExpectations, _ *clocktesting.FakePassiveClock) {
			e.ExpectCreations("k", 2)
			e.CreationObserved("k")
			e.CreationObserved("k")
		}, true},
		{"deletes outstanding", func(e *ControllerExpectations, _ *clocktesting.FakePassiveClock) {
			e.SetExpectations("k", 0, 1)
		}, false},
		{"skipped creates lowered", func(e *ControllerExpectations, _ *clocktesting.FakePassiveClock) {
			e.SetExpectations("k", 4, 0)
			e.CreationObserved("k")
			e.LowerExpectations("k", 3, 0)
		}, true},
		{"expired after the timeout", func(e *ControllerExpectations, clk *clocktesting.FakePassiveClock) {
			e.ExpectCreations("k", 1)
			clk.SetTime(start.Add(ExpectationsTimeout + time.Second))
		}, true},
		{"deleted", func(e *ControllerExpectations, _ *clocktesting.FakePassiveClock) {
			e.ExpectDeletions("k", 3)
			e.DeleteExpectations("k")
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(start)
			e := NewControllerExpectations(ExpectationsTimeout)
			e.clock = clk
			tt.run(e, clk)
			if got := e.SatisfiedExpectations("k"); got != tt.want {
				t.Errorf("SatisfiedExpectations = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestUIDTrackingExpectationsCountEachPodOnce(t *testing.T) {
	e := NewUIDTrackingControllerExpectations(ExpectationsTimeout)
	e.ExpectDeletions("k", []string{"ns/a", "ns/b"})
	// A pod is seen deleted twice: with a deletionTimestamp, then gone.
	e.DeletionObserved("k", "ns/a")
	e.DeletionObserved("k", "ns/a")
	if e.SatisfiedExpectations("k") {
		t.Fatal("satisfied after one of two pods was deleted")
	}
	e.DeletionObserved("k", "ns/other")
	if e.SatisfiedExpectations("k") {
		t.Fatal("a pod never expected counted as a deletion")
	}
	e.DeletionObserved("k", "ns/b")
	if !e.SatisfiedExpectations("k") {
		t.Fatal("not satisfied after both pods were deleted")
	}
}
