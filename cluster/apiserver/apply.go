package apiserver

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// apply serves a server-side apply (PATCH application/apply-patch+yaml),
// as upstream's applyPatcher: the applied configuration is merged into the
// live object by field ownership, fields the manager applied before and
// left out now are removed, and a field another manager owns with a
// different value is a 409 conflict unless force is set. An object that
// does not exist yet is created from the configuration alone. The result
// goes through the same strategy, admission and validation as any write.
func (s *Server) apply(req *request, data []byte, opts metav1.PatchOptions) (runtime.Object, error) {
	applied := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(data, &applied.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	fm, err := s.fieldManagers.get(req.res, req.info.subresource)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	force := opts.Force != nil && *opts.Force
	merge := func(live runtime.Object) (runtime.Object, error) {
		obj, err := fm.Apply(live, applied.DeepCopy(), opts.FieldManager, force)
		if err != nil {
			return nil, applyError(err)
		}
		return obj, nil
	}

	areq := *req
	areq.applied = true
	updated, err := s.updateObject(req.Context(), &areq, merge)
	if !apierrors.IsNotFound(err) || req.info.subresource != "" {
		return updated, err
	}
	// Nothing to merge into: the configuration makes a new object.
	live := req.res.New()
	obj, err := merge(live)
	if err != nil {
		return nil, err
	}
	if m, _ := meta.Accessor(obj); m.GetName() != req.info.name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), req.info.name))
	}
	if err := s.admitNodeRestriction(req.Context(), admissionFor(req, opCreate, obj, nil)); err != nil {
		return nil, err
	}
	return s.createObject(req.Context(), req.res, req.info.namespace, obj,
		writeParams{dryRun: isDryRun(req.Request), manager: opts.FieldManager, applied: true})
}

// applyError passes API errors (a conflict, a bad request) through; any
// other error of the merge (a field the schema does not declare) is
// answered as upstream answers an error that is not an API status: 500
// with reason Unknown and the error's text, which kubectl prints after
// "Error from server:".
func applyError(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason: metav1.StatusReasonUnknown, Message: err.Error(),
	}}
}
