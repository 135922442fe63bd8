package apiserver

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/cluster/apiserver/eventconv"
	"github.com/klab-dev/klab/cluster/apiserver/hpaconv"
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
//
// autoscaling/v1 HorizontalPodAutoscalers are likewise the autoscaling/v2
// ones, stored once as v2 (hpa.go).

// storageResource returns the resource whose store res reads and writes.
func (s *Server) storageResource(res *registry.Resource) *registry.Resource {
	if res.Group == "events.k8s.io" {
		core, _ := s.reg.Lookup(coreEventsGVR)
		return core
	}
	if res.GroupVersionResource == hpaV1GVR {
		v2, _ := s.reg.Lookup(hpaV2GVR)
		return v2
	}
	return res
}

// toStorage converts an object of res into its stored form.
func (s *Server) toStorage(res *registry.Resource, obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *eventsv1.Event:
		return eventconv.ToCore(o)
	case *autoscalingv1.HorizontalPodAutoscaler:
		return hpaToStorage(o)
	}
	return obj
}

// fromStorage converts a stored object into res's form.
func (s *Server) fromStorage(res *registry.Resource, obj runtime.Object) runtime.Object {
	if e, ok := obj.(*corev1.Event); ok && res.Group == "events.k8s.io" {
		return eventconv.FromCore(e)
	}
	if h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler); ok && res.GroupVersionResource == hpaV1GVR {
		return hpaconv.FromV2(h)
	}
	return obj
}

// listFromStorage converts a stored list into res's list.
func (s *Server) listFromStorage(res *registry.Resource, list runtime.Object) runtime.Object {
	if res.GroupVersionResource == hpaV1GVR {
		return hpaListFromStorage(list.(*autoscalingv2.HorizontalPodAutoscalerList))
	}
	if res.Group != "events.k8s.io" {
		return list
	}
	items, _ := meta.ExtractList(list)
	out := res.NewList().(*eventsv1.EventList)
	out.ListMeta = list.(*corev1.EventList).ListMeta
	for _, item := range items {
		out.Items = append(out.Items, *eventconv.FromCore(item.(*corev1.Event)))
	}
	return out
}
