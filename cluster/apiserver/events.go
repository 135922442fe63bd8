package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

var (
	namespacesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	serviceAccountsGVR = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	coreEventsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

// events.k8s.io/v1 Events are the core/v1 Events in a newer shape: both
// APIs read and write the same objects under /registry/events, as
// upstream, with the field mapping of upstream's conversion (regarding is
// involvedObject, note is message, the deprecated* fields are the old
// ones).

// storageResource returns the resource whose store res reads and writes.
func (s *Server) storageResource(res *registry.Resource) *registry.Resource {
	if res.Group == "events.k8s.io" {
		core, _ := s.reg.Lookup(coreEventsGVR)
		return core
	}
	return res
}

// toStorage converts an object of res into its stored form.
func (s *Server) toStorage(res *registry.Resource, obj runtime.Object) runtime.Object {
	if e, ok := obj.(*eventsv1.Event); ok {
		return eventToCore(e)
	}
	return obj
}

// fromStorage converts a stored object into res's form.
func (s *Server) fromStorage(res *registry.Resource, obj runtime.Object) runtime.Object {
	if e, ok := obj.(*corev1.Event); ok && res.Group == "events.k8s.io" {
		return eventFromCore(e)
	}
	return obj
}

// listFromStorage converts a stored list into res's list.
func (s *Server) listFromStorage(res *registry.Resource, list runtime.Object) runtime.Object {
	if res.Group != "events.k8s.io" {
		return list
	}
	items, _ := meta.ExtractList(list)
	out := res.NewList().(*eventsv1.EventList)
	out.ListMeta = list.(*corev1.EventList).ListMeta
	for _, item := range items {
		out.Items = append(out.Items, *eventFromCore(item.(*corev1.Event)))
	}
	return out
}

func eventToCore(e *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Related:             e.Related,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
		Action:              e.Action,
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}

func eventFromCore(e *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta:               e.ObjectMeta,
		EventTime:                e.EventTime,
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.InvolvedObject,
		Related:                  e.Related,
		Note:                     e.Message,
		Type:                     e.Type,
		DeprecatedSource:         e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp,
		DeprecatedLastTimestamp:  e.LastTimestamp,
		DeprecatedCount:          e.Count,
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}
