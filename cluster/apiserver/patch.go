package apiserver

import (
	"fmt"
	"mime"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// Upstream's limits on JSON patches (CVE-2019-1002100): at most this many
// operations, and at most this many bytes added by copy operations, which
// otherwise double a document with each step.
const (
	maxJSONPatchOperations = 10000
	jsonPatchMaxCopyBytes  = 3 * 1024 * 1024
)

// The copy limit is the library's, process-wide, as upstream sets it; every
// API server in a local-runtime process wants the same.
func init() { jsonpatch.AccumulatedCopySizeLimit = jsonPatchMaxCopyBytes }

func (s *Server) patch(w http.ResponseWriter, req *request) {
	identity := func(current runtime.Object) (runtime.Object, error) { return current, nil }
	keep := func(_, patched runtime.Object) (runtime.Object, error) { return patched, nil }
	patched, warnings, err := s.patchObject(req, identity, req.res.New, keep)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	addWarnings(w, warnings)
	writeObject(w, req.Request, http.StatusOK, patched)
}

// patchObject applies the request's patch to the current object and
// stores the result through the update path. view, newView and fromView
// let a subresource (scale) be patched in its own shape: view turns the
// current object into what the patch applies to, and fromView folds the
// patched view back into the object to store.
func (s *Server) patchObject(req *request, view func(runtime.Object) (runtime.Object, error), newView func() runtime.Object,
	fromView func(current, patched runtime.Object) (runtime.Object, error)) (runtime.Object, []string, error) {
	data, err := readBody(req.Request)
	if err != nil {
		return nil, nil, err
	}
	mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil {
		return nil, nil, unsupportedMediaType(req.Header.Get("Content-Type"))
	}
	patchType := types.PatchType(mt)
	switch patchType {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	case types.ApplyYAMLPatchType:
		if req.fieldsSubresource == registry.SubScale {
			// Upstream applies to a Scale through its own field manager
			// and maps the ownership back to the parent; klab has not
			// built that mapping.
			return nil, nil, unsupportedMediaType(mt)
		}
		opts, err := writeOptions(req.Request, patchType)
		if err != nil {
			return nil, nil, err
		}
		obj, err := s.apply(req, data, opts)
		return obj, nil, err
	default:
		return nil, nil, unsupportedMediaType(mt)
	}
	if _, err := writeOptions(req.Request, patchType); err != nil {
		return nil, nil, err
	}
	var warnings []string
	updated, err := s.updateObject(req.Context(), req, func(current runtime.Object) (runtime.Object, error) {
		target, err := view(current)
		if err != nil {
			return nil, err
		}
		original, err := encodeForWire(target)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		var result []byte
		switch patchType {
		case types.JSONPatchType:
			p, err := jsonpatch.DecodePatch(data)
			if err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			if err := checkPatchValues(p); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			if len(p) > maxJSONPatchOperations {
				return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
					"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
			}
			if result, err = p.Apply(original); err != nil {
				return nil, unprocessable(req, err)
			}
		case types.MergePatchType:
			if result, err = jsonpatch.MergePatch(original, data); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		case types.StrategicMergePatchType:
			if result, err = strategicpatch.StrategicMergePatch(original, data, newView()); err != nil {
				return nil, unprocessable(req, err)
			}
		}
		obj := newView()
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		gvk := gvks[0]
		patchReq := req.Request.Clone(req.Context())
		patchReq.Header.Set("Content-Type", "application/json")
		w, err := decodeObject(patchReq, result, obj, gvk)
		if err != nil {
			return nil, err
		}
		warnings = w
		return fromView(current, obj)
	})
	return updated, warnings, err
}

func unprocessable(req *request, err error) error {
	return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", req.res.GroupResource(), req.info.name, fmt.Sprintf("%v", err), 0, false)
}

// checkPatchValues refuses what the JSON patch library does not: an add,
// replace or test without the value RFC 6902 requires of them (4.1, 4.3,
// 4.6), and one at the document's root whose value is null. The library
// reads a missing value as nothing, and a replace of the whole document
// with nothing dereferences it (found by FuzzPatch).
func checkPatchValues(p jsonpatch.Patch) error {
	for i, op := range p {
		switch kind := op.Kind(); kind {
		case "add", "replace", "test":
			v, ok := op["value"]
			if !ok {
				return fmt.Errorf("json patch operation %d (%s) has no value", i, kind)
			}
			if path, err := op.Path(); err == nil && path == "" && v == nil {
				return fmt.Errorf("json patch operation %d (%s): the document's value must be an object, not null", i, kind)
			}
		}
	}
	return nil
}
