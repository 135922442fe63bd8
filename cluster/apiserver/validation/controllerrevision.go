package validation

import (
	"bytes"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules below are upstream's for apps ControllerRevisions
// (ValidateControllerRevisionCreate and ValidateControllerRevisionUpdate
// in pkg/apis/apps/validation): a revision is a snapshot, so its data is
// required and may never change; only its revision number (which a
// controller raises when it rolls back to it) and its metadata may.

var dataPath = field.NewPath("data")

func validateControllerRevision(cr *appsv1.ControllerRevision) field.ErrorList {
	allErrs := validateObjectMeta(&cr.ObjectMeta, true, nameIsDNSSubdomain)
	if rawExtensionEmpty(cr.Data) {
		allErrs = append(allErrs, field.Required(dataPath, "data is mandatory"))
	}
	return append(allErrs, validateNonnegative(cr.Revision, field.NewPath("revision"))...)
}

func validateControllerRevisionUpdate(cr, old *appsv1.ControllerRevision) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&cr.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateControllerRevision(cr)...)
	if !sameRawExtension(cr.Data, old.Data) {
		allErrs = append(allErrs, field.Invalid(dataPath, cr.Data, "field is immutable"))
	}
	return allErrs
}

// rawExtensionEmpty reports data that upstream's conversion turns into a
// nil object: absent or JSON null.
func rawExtensionEmpty(data runtime.RawExtension) bool {
	raw := bytes.TrimSpace(data.Raw)
	return data.Object == nil && (len(raw) == 0 || bytes.Equal(raw, []byte("null")))
}

// sameRawExtension compares two data fields as JSON values: upstream
// compares the decoded objects, so the formatting of the bytes does not
// matter.
func sameRawExtension(a, b runtime.RawExtension) bool {
	if bytes.Equal(a.Raw, b.Raw) && a.Object == nil && b.Object == nil {
		return true
	}
	var va, vb any
	if json.Unmarshal(rawOf(a), &va) != nil || json.Unmarshal(rawOf(b), &vb) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(va, vb)
}

func rawOf(data runtime.RawExtension) []byte {
	if data.Raw != nil || data.Object == nil {
		return data.Raw
	}
	raw, err := json.Marshal(data.Object)
	if err != nil {
		return nil
	}
	return raw
}
