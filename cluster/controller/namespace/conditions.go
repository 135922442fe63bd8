package namespace

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// The namespace conditions the controller maintains while it deletes a
// namespace's content, with upstream's reasons and messages for the
// "nothing wrong" case.
var (
	conditionTypes = []v1.NamespaceConditionType{
		v1.NamespaceDeletionDiscoveryFailure,
		v1.NamespaceDeletionGVParsingFailure,
		v1.NamespaceDeletionContentFailure,
		v1.NamespaceContentRemaining,
		v1.NamespaceFinalizersRemaining,
	}
	okReasons = map[v1.NamespaceConditionType]string{
		v1.NamespaceDeletionDiscoveryFailure: "ResourcesDiscovered",
		v1.NamespaceDeletionGVParsingFailure: "ParsedGroupVersions",
		v1.NamespaceDeletionContentFailure:   "ContentDeleted",
		v1.NamespaceContentRemaining:         "ContentRemoved",
		v1.NamespaceFinalizersRemaining:      "ContentHasNoFinalizers",
	}
	okMessages = map[v1.NamespaceConditionType]string{
		v1.NamespaceDeletionDiscoveryFailure: "All resources successfully discovered",
		v1.NamespaceDeletionGVParsingFailure: "All legacy kube types successfully parsed",
		v1.NamespaceDeletionContentFailure:   "All content successfully deleted, may be waiting on finalization",
		v1.NamespaceContentRemaining:         "All content successfully removed",
		v1.NamespaceFinalizersRemaining:      "All content-preserving finalizers finished",
	}
)

// conditionUpdater collects what went wrong during one pass of content
// deletion and turns it into namespace conditions.
type conditionUpdater struct {
	now                 time.Time
	newConditions       []v1.NamespaceCondition
	deleteContentErrors []error
}

func (u *conditionUpdater) add(t v1.NamespaceConditionType, reason, message string) {
	u.newConditions = append(u.newConditions, v1.NamespaceCondition{
		Type: t, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(u.now), Reason: reason, Message: message,
	})
}

func (u *conditionUpdater) discoveryFailed(err error) {
	msg := err.Error()
	var derr *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &derr) {
		msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(derr.Groups), err)
	}
	u.add(v1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
}

func (u *conditionUpdater) groupVersionFailed(err error) {
	u.add(v1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", err.Error())
}

func (u *conditionUpdater) deleteContentFailed(err error) {
	u.deleteContentErrors = append(u.deleteContentErrors, err)
}

// contentTotals notes what is left in the namespace, by resource and by
// the finalizers holding it.
func (u *conditionUpdater) contentTotals(remaining map[schema.GroupVersionResource]int, byFinalizer map[string]int) {
	if len(remaining) > 0 {
		var parts []string
		for gvr, n := range remaining {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
			}
		}
		sort.Strings(parts) // a stable message does not churn the status
		u.add(v1.NamespaceContentRemaining, "SomeResourcesRemain", "Some resources are remaining: "+strings.Join(parts, ", "))
	}
	if len(byFinalizer) > 0 {
		var parts []string
		for f, n := range byFinalizer {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
			}
		}
		sort.Strings(parts)
		u.add(v1.NamespaceFinalizersRemaining, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: "+strings.Join(parts, ", "))
	}
}

// update writes the collected conditions into the namespace's status,
// every type not reported as failing in its "ok" form. It reports whether
// anything changed.
func (u *conditionUpdater) update(ns *v1.Namespace) bool {
	if len(u.deleteContentErrors) > 0 && getCondition(u.newConditions, v1.NamespaceDeletionContentFailure) == nil {
		msgs := make([]string, 0, len(u.deleteContentErrors))
		for _, e := range u.deleteContentErrors {
			msgs = append(msgs, e.Error())
		}
		sort.Strings(msgs)
		u.add(v1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(msgs), strings.Join(msgs, ", ")))
	}
	changed := false
	for _, t := range conditionTypes {
		want := getCondition(u.newConditions, t)
		if want == nil {
			want = &v1.NamespaceCondition{
				Type: t, Status: v1.ConditionFalse, LastTransitionTime: metav1.NewTime(u.now), Reason: okReasons[t], Message: okMessages[t],
			}
		}
		have := getCondition(ns.Status.Conditions, t)
		switch {
		case have == nil:
			ns.Status.Conditions = append(ns.Status.Conditions, *want)
			changed = true
		case have.Status != want.Status || have.Reason != want.Reason || have.Message != want.Message:
			if have.Status != want.Status {
				have.LastTransitionTime = metav1.NewTime(u.now)
			}
			have.Status, have.Reason, have.Message = want.Status, want.Reason, want.Message
			changed = true
		}
	}
	return changed
}

func getCondition(conditions []v1.NamespaceCondition, t v1.NamespaceConditionType) *v1.NamespaceCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}
