package apiserver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/klab-dev/klab/cluster/apiserver/printers"
)

// headerRevision carries the etcd revision a response was read or written
// at, for the request log.
const headerRevision = "X-Klab-Revision"

type metav1StatusDetails = metav1.StatusDetails

func schemaGroupResource(group, resource string) schema.GroupResource {
	return schema.GroupResource{Group: group, Resource: resource}
}

// output is the representation a client asked for in its Accept header.
type output struct {
	yaml          bool
	table         bool   // meta.k8s.io/v1 Table (kubectl get)
	partial       bool   // PartialObjectMetadata(List)
	includeObject string // for tables: None, Metadata (default) or Object
}

// negotiate reads the Accept header the way upstream does for the forms
// klab serves: JSON (also when protobuf is preferred but JSON accepted),
// YAML, and the meta.k8s.io Table and PartialObjectMetadata forms.
func negotiate(r *http.Request) output {
	out := output{includeObject: r.URL.Query().Get("includeObject")}
	if out.includeObject == "" {
		out.includeObject = "Metadata"
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch {
		case params["as"] == "Table" && params["g"] == "meta.k8s.io":
			out.table = true
			return out
		case (params["as"] == "PartialObjectMetadata" || params["as"] == "PartialObjectMetadataList") && params["g"] == "meta.k8s.io":
			out.partial = true
			return out
		case params["as"] != "":
			continue // another transformation klab does not serve: try the next
		case mt == "application/yaml":
			out.yaml = true
			return out
		case mt == "application/json", mt == "*/*", mt == "application/*":
			return out
		}
	}
	return out
}

// writeObject writes obj as the client asked.
func writeObject(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	out := negotiate(r)
	switch {
	case out.table:
		table, err := toTable(obj, out.includeObject)
		if err != nil {
			writeError(w, r, err)
			return
		}
		obj = table
	case out.partial:
		obj = toPartial(obj)
	}
	writeRaw(w, code, out.yaml, obj)
}

func writeRaw(w http.ResponseWriter, code int, asYAML bool, obj runtime.Object) {
	data, err := encodeForWire(obj)
	if err == nil && asYAML {
		data, err = yaml.JSONToYAML(data)
	}
	if err != nil {
		code = http.StatusInternalServerError
		st := apierrors.NewInternalError(err).ErrStatus
		data, _ = json.Marshal(&st)
		asYAML = false
	}
	if asYAML {
		w.Header().Set("Content-Type", "application/yaml")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	if m, err := meta.Accessor(obj); err == nil && m.GetResourceVersion() != "" {
		w.Header().Set(headerRevision, m.GetResourceVersion())
	} else if l, err := meta.ListAccessor(obj); err == nil && l.GetResourceVersion() != "" {
		w.Header().Set(headerRevision, l.GetResourceVersion())
	}
	w.WriteHeader(code)
	w.Write(data)
}

// encodeForWire encodes obj as JSON with its apiVersion and kind.
func encodeForWire(obj runtime.Object) ([]byte, error) {
	// An object that says fully what it is (a Table, a Status, a decoded
	// body) is sent as it is; one that says only part of it gets its kind
	// from the scheme.
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
		return json.Marshal(obj)
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	return json.Marshal(obj)
}

// writeError writes err as a metav1.Status with its HTTP code.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := apiStatus(err)
	if r != nil {
		renameEventsResource(status, parseRequestInfo(r))
	}
	data, _ := json.Marshal(status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	w.Write(data)
}

func apiStatus(err error) *metav1.Status {
	var st metav1.Status
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s.Status()
	} else {
		st = apierrors.NewInternalError(err).ErrStatus
	}
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	return &st
}

// toTable converts an object or list to a Table with upstream's columns,
// each row carrying the object as includeObject asks.
func toTable(obj runtime.Object, includeObject string) (*metav1.Table, error) {
	table, err := printers.Table(obj, time.Now())
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var items []runtime.Object
	if meta.IsListType(obj) {
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if l, err := meta.ListAccessor(obj); err == nil {
			table.ResourceVersion = l.GetResourceVersion()
			table.Continue = l.GetContinue()
			table.RemainingItemCount = l.GetRemainingItemCount()
		}
	} else {
		items = []runtime.Object{obj}
		if m, err := meta.Accessor(obj); err == nil {
			table.ResourceVersion = m.GetResourceVersion()
		}
	}
	if len(items) != len(table.Rows) {
		return nil, apierrors.NewInternalError(fmt.Errorf("printer made %d rows for %d objects", len(table.Rows), len(items)))
	}
	for i, item := range items {
		// RawExtension marshals only its Raw bytes.
		var rowObj runtime.Object
		switch includeObject {
		case "None":
			continue
		case "Object":
			rowObj = item
		default:
			rowObj = toPartial(item)
		}
		if table.Rows[i].Object.Raw, err = encodeForWire(rowObj); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	table.Kind, table.APIVersion = "Table", "meta.k8s.io/v1"
	return table, nil
}

// toPartial returns obj's metadata as PartialObjectMetadata (or a list of
// them).
func toPartial(obj runtime.Object) runtime.Object {
	if meta.IsListType(obj) {
		items, _ := meta.ExtractList(obj)
		list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"}}
		if l, err := meta.ListAccessor(obj); err == nil {
			list.ResourceVersion, list.Continue = l.GetResourceVersion(), l.GetContinue()
		}
		for _, item := range items {
			list.Items = append(list.Items, *toPartial(item).(*metav1.PartialObjectMetadata))
		}
		return list
	}
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}}
	if m, ok := obj.(metav1.ObjectMetaAccessor); ok {
		p.ObjectMeta = *m.GetObjectMeta().(*metav1.ObjectMeta).DeepCopy()
	}
	return p
}

// renameEventsResource names events.k8s.io events in errors as upstream
// does ("events.events.k8s.io"), although they are stored as core events.
func renameEventsResource(status *metav1.Status, info requestInfo) {
	if info.gv.Group != "events.k8s.io" || status.Details == nil || status.Details.Group != "" || status.Details.Kind != "events" {
		return
	}
	status.Details.Group = "events.k8s.io"
	status.Message = strings.Replace(status.Message, `events "`, `events.events.k8s.io "`, 1)
}
