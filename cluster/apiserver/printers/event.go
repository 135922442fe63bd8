package printers

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/eventconv"
)

// event holds what an Event's row shows. core/v1 and events.k8s.io/v1 Events
// are one kind stored once; kube-apiserver converts either to the same
// internal Event and prints that, so both fill this in and print alike.
type event struct {
	name, eventType, reason, message string
	regarding                        corev1.ObjectReference
	source                           corev1.EventSource
	reportingController              string
	reportingInstance                string
	firstTimestamp, lastTimestamp    metav1.Time
	eventTime                        metav1.MicroTime
	count                            int32
	series                           *corev1.EventSeries
}

// printCoreEvent prints a core/v1 Event.
func printCoreEvent(e *corev1.Event, now time.Time) metav1.TableRow {
	return printEvent(event{
		name:                e.Name,
		eventType:           e.Type,
		reason:              e.Reason,
		message:             e.Message,
		regarding:           e.InvolvedObject,
		source:              e.Source,
		reportingController: e.ReportingController,
		reportingInstance:   e.ReportingInstance,
		firstTimestamp:      e.FirstTimestamp,
		lastTimestamp:       e.LastTimestamp,
		eventTime:           e.EventTime,
		count:               e.Count,
		series:              e.Series,
	}, now)
}

// printEventsEvent prints an events.k8s.io/v1 Event as the core Event it
// is stored as.
func printEventsEvent(e *eventsv1.Event, now time.Time) metav1.TableRow {
	return printCoreEvent(eventconv.ToCore(e), now)
}

// printEvent prints LAST SEEN TYPE REASON OBJECT MESSAGE, and for -o wide
// SUBOBJECT SOURCE FIRST SEEN COUNT NAME (the columns are interleaved: see
// eventColumns).
//
// Events recorded by the newer API have eventTime and, when repeated, a
// series instead of first/last timestamps and a count; the times fall back
// to those, and a single event counts 1. OBJECT is kind/name in lower case
// ("pod/web-1").
func printEvent(e event, now time.Time) metav1.TableRow {
	firstSeen := age(e.firstTimestamp, now)
	if e.firstTimestamp.IsZero() {
		firstSeen = since(e.eventTime.Time, now)
	}
	lastSeen := age(e.lastTimestamp, now)
	if e.lastTimestamp.IsZero() {
		lastSeen = firstSeen
	}
	count := e.count
	if e.series != nil {
		lastSeen = since(e.series.LastObservedTime.Time, now)
		count = e.series.Count
	} else if count == 0 {
		count = 1
	}

	object := strings.ToLower(e.regarding.Kind)
	if e.regarding.Name != "" {
		object = fmt.Sprintf("%s/%s", object, e.regarding.Name)
	}

	return cells(
		lastSeen,
		e.eventType,
		e.reason,
		object,
		e.regarding.FieldPath,
		eventSource(e),
		strings.TrimSpace(e.message),
		firstSeen,
		int64(count),
		e.name,
	)
}

// eventSource is SOURCE: the reporting component, then the host or
// instance after a comma ("kubelet, worker-1"); the newer reporting fields
// stand in for the older source ones.
func eventSource(e event) string {
	component := firstNonEmpty(e.source.Component, e.reportingController)
	instance := firstNonEmpty(e.source.Host, e.reportingInstance)
	if instance == "" {
		return component
	}
	return component + ", " + instance
}

// firstNonEmpty returns the first of ss that is not empty, or "".
func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
