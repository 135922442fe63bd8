package validation

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/klab-dev/klab/cluster/apiserver/eventconv"
)

// Length limits of the fields an events.k8s.io client fills in.
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// The two Event APIs share one stored object. core/v1 Events keep the old,
// lenient rules for compatibility with every client ever written;
// events.k8s.io/v1 Events must also follow the new ones. Both are checked
// in core/v1 terms, as upstream checks both in its internal version, so an
// events.k8s.io error names the core field ("message" for note).

func validateCoreEvent(e *corev1.Event) field.ErrorList {
	return legacyValidateEvent(e)
}

func validateCoreEventUpdate(e, _ *corev1.Event) field.ErrorList {
	return legacyValidateEvent(e)
}

func validateEventsEvent(ev *eventsv1.Event) field.ErrorList {
	e := eventconv.ToCore(ev)
	allErrs := legacyValidateEvent(e)
	allErrs = append(allErrs, validateObjectMeta(&e.ObjectMeta, true, nameIsDNSSubdomain)...)
	allErrs = append(allErrs, validateEventSeries(e)...)
	if e.EventTime.IsZero() {
		allErrs = append(allErrs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		allErrs = append(allErrs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	// The deprecated fields belong to the old API; a new client must
	// leave them to the server.
	if !e.FirstTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !e.LastTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if e.Count != 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if e.Source.Component != "" || e.Source.Host != "" {
		allErrs = append(allErrs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return allErrs
}

// validateEventsEventUpdate: apart from its series, an events.k8s.io Event
// is a record and does not change.
func validateEventsEventUpdate(ev, oldEv *eventsv1.Event) field.ErrorList {
	e, old := eventconv.ToCore(ev), eventconv.ToCore(oldEv)
	allErrs := legacyValidateEvent(e)
	allErrs = append(allErrs, validateObjectMetaUpdate(&e.ObjectMeta, &old.ObjectMeta)...)
	if !reflect.DeepEqual(e.Series, old.Series) {
		allErrs = append(allErrs, validateEventSeries(e)...)
	}
	for _, f := range []struct {
		name     string
		new, old any
	}{
		{"involvedObject", e.InvolvedObject, old.InvolvedObject},
		{"reason", e.Reason, old.Reason},
		{"message", e.Message, old.Message},
		{"source", e.Source, old.Source},
		{"firstTimestamp", e.FirstTimestamp, old.FirstTimestamp},
		{"lastTimestamp", e.LastTimestamp, old.LastTimestamp},
		{"count", e.Count, old.Count},
		{"type", e.Type, old.Type},
		{"eventTime", e.EventTime, old.EventTime},
		{"action", e.Action, old.Action},
		{"related", e.Related, old.Related},
		{"reportingController", e.ReportingController, old.ReportingController},
		{"reportingInstance", e.ReportingInstance, old.ReportingInstance},
	} {
		allErrs = append(allErrs, validateImmutable(f.new, f.old, field.NewPath(f.name))...)
	}
	return allErrs
}

func validateEventSeries(e *corev1.Event) field.ErrorList {
	if e.Series == nil {
		return nil
	}
	var allErrs field.ErrorList
	if e.Series.Count < 2 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if e.Series.LastObservedTime.IsZero() {
		allErrs = append(allErrs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return allErrs
}

// legacyValidateEvent holds the rules every Event meets. An old-style
// Event (no eventTime) must live in its object's namespace, or in
// "default" for a cluster-scoped object; a new-style one must say who
// reported it and what happened.
func legacyValidateEvent(e *corev1.Event) field.ErrorList {
	var allErrs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	const mismatch = "does not match event.namespace"
	if e.EventTime.IsZero() {
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				allErrs = append(allErrs, field.Invalid(nsPath, e.InvolvedObject.Namespace, mismatch))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			allErrs = append(allErrs, field.Invalid(nsPath, e.InvolvedObject.Namespace, mismatch))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			allErrs = append(allErrs, field.Invalid(nsPath, e.InvolvedObject.Namespace, mismatch))
		}
		if e.ReportingController == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("reportingController"), ""))
		}
		allErrs = append(allErrs, validateQualifiedName(e.ReportingController, field.NewPath("reportingController"))...)
		allErrs = append(allErrs, requiredWithLimit(e.ReportingInstance, reportingInstanceLengthLimit, field.NewPath("reportingInstance"))...)
		allErrs = append(allErrs, requiredWithLimit(e.Action, actionLengthLimit, field.NewPath("action"))...)
		allErrs = append(allErrs, requiredWithLimit(e.Reason, reasonLengthLimit, field.NewPath("reason"))...)
		if len(e.Message) > noteLengthLimit {
			allErrs = append(allErrs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
		}
	}
	return append(allErrs, invalidEach(field.NewPath("namespace"), e.Namespace, validation.IsDNS1123Subdomain(e.Namespace))...)
}

func requiredWithLimit(value string, limit int, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if len(value) > limit {
		return field.ErrorList{field.Invalid(fldPath, "", fmt.Sprintf("can have at most %v characters", limit))}
	}
	return nil
}
