package apiserver

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/cluster/apiserver/defaults"
	"github.com/klab-dev/klab/cluster/apiserver/hpaconv"
)

// HorizontalPodAutoscalers are served as autoscaling/v2 and autoscaling/v1,
// as upstream serves them, and stored once, as v2. A v1 object is
// converted on its way to and from the store (package hpaconv); whatever v1
// has no field for rides in its round-trip annotations.

var (
	hpaV1GVR = schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}
	hpaV2GVR = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
)

// hpaToStorage returns the stored form of a v1 HPA: the v2 object with
// v2's defaults, which upstream applies when it reads the object back.
func hpaToStorage(h *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := hpaconv.ToV2(h)
	defaults.Default(out)
	return out
}

func hpaListFromStorage(list *autoscalingv2.HorizontalPodAutoscalerList) *autoscalingv1.HorizontalPodAutoscalerList {
	out := &autoscalingv1.HorizontalPodAutoscalerList{ListMeta: list.ListMeta, Items: make([]autoscalingv1.HorizontalPodAutoscaler, 0, len(list.Items))}
	for i := range list.Items {
		out.Items = append(out.Items, *hpaconv.FromV2(&list.Items[i]))
	}
	return out
}

// The round-trip annotations that say spec and those that say status.
var (
	hpaSpecAnnotations   = []string{hpaconv.MetricSpecsAnnotation, hpaconv.BehaviorSpecsAnnotation}
	hpaStatusAnnotations = []string{hpaconv.MetricStatusesAnnotation, hpaconv.ConditionsAnnotation}
)

// keepHPAAnnotations makes the named round-trip annotations of a v1 HPA
// being written those of the current object. A write to the HPA leaves its
// status as it is, and a write to /status its spec, as upstream's strategy
// does: in v1 part of each lives in annotations, which the writer may
// have left out or kept from an older read.
func keepHPAAnnotations(obj, current runtime.Object, keys []string) {
	h, ok := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	if !ok {
		return
	}
	cur := current.(*autoscalingv1.HorizontalPodAutoscaler)
	ann := map[string]string{}
	for k, v := range h.Annotations {
		ann[k] = v
	}
	for _, k := range keys {
		delete(ann, k)
		if v, ok := cur.Annotations[k]; ok {
			ann[k] = v
		}
	}
	if len(ann) == 0 {
		ann = nil
	}
	h.Annotations = ann
}

var (
	hpaV1GVK = hpaV1GVR.GroupVersion().WithKind("HorizontalPodAutoscaler")
	hpaV2GVK = hpaV2GVR.GroupVersion().WithKind("HorizontalPodAutoscaler")
)

// versionConvertor is the scheme the field managers convert objects with,
// able also to convert an HPA between autoscaling/v1 and v2. Field
// management needs it once an HPA has managers of both versions: it
// converts the object to each manager's version to see which fields
// changed. client-go's scheme converts between no two versions (upstream
// goes through its internal types).
type versionConvertor struct{ runtime.ObjectConvertor }

func (c versionConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	if u, ok := in.(runtime.Unstructured); ok {
		if gvk := u.GetObjectKind().GroupVersionKind(); gvk == hpaV1GVK || gvk == hpaV2GVK {
			typed, err := c.ObjectConvertor.ConvertToVersion(in, gvk.GroupVersion())
			if err != nil {
				return nil, err
			}
			in = typed
		}
	}
	switch o := in.(type) {
	case *autoscalingv1.HorizontalPodAutoscaler:
		if gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{hpaV1GVK}); ok && gvk == hpaV2GVK {
			out := hpaconv.ToV2(o)
			out.APIVersion, out.Kind = hpaV2GVK.ToAPIVersionAndKind()
			return out, nil
		}
	case *autoscalingv2.HorizontalPodAutoscaler:
		if gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{hpaV2GVK}); ok && gvk == hpaV1GVK {
			out := hpaconv.FromV2(o)
			out.APIVersion, out.Kind = hpaV1GVK.ToAPIVersionAndKind()
			return out, nil
		}
	}
	return c.ObjectConvertor.ConvertToVersion(in, target)
}
