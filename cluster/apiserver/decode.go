package apiserver

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// Field validation directives (the fieldValidation query parameter).
const (
	fieldValidationStrict = "Strict"
	fieldValidationWarn   = "Warn"
	fieldValidationIgnore = "Ignore"
)

// decodeObject decodes a request body into into, by the request's
// Content-Type, applying the client's field validation: Strict rejects
// unknown and duplicate fields with a 400, Warn (the server's default)
// returns them as warnings, Ignore drops them.
func decodeObject(r *http.Request, data []byte, into runtime.Object, want schema.GroupVersionKind) ([]string, error) {
	directive := r.URL.Query().Get("fieldValidation")
	switch directive {
	case "":
		directive = fieldValidationWarn
	case fieldValidationStrict, fieldValidationWarn, fieldValidationIgnore:
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("fieldValidation parameter unsupported: %s", directive))
	}
	mediaType := "application/json"
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return nil, unsupportedMediaType(ct)
		}
		mediaType = mt
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return nil, unsupportedMediaType(mediaType)
	}
	decoder := info.Serializer
	if directive != fieldValidationIgnore && info.StrictSerializer != nil {
		decoder = info.StrictSerializer
	}
	obj, gvk, err := decoder.Decode(data, &want, into)
	var warnings []string
	if err != nil {
		if !runtime.IsStrictDecodingError(err) || directive == fieldValidationStrict {
			return nil, decodeError(err, gvk, want, data)
		}
		if strict, ok := runtime.AsStrictDecodingError(err); ok {
			for _, e := range strict.Errors() {
				warnings = append(warnings, e.Error())
			}
		}
	}
	if obj != into {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is a %s, not a %s", gvk.Kind, want.Kind))
	}
	if gvk.GroupVersion() != want.GroupVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), want.GroupVersion()))
	}
	if gvk.Kind != want.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", gvk.Kind, want.Kind))
	}
	return warnings, nil
}

// decodeError words a decoding failure as upstream's create and update
// handlers do (transformDecodeError).
func decodeError(err error, got *schema.GroupVersionKind, want schema.GroupVersionKind, data []byte) error {
	if got != nil && got.Kind != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", got.Kind, got.Version, want.Kind, err))
	}
	summary := string(data)
	if len(summary) > 30 {
		summary = summary[:30] + "..."
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", want.Kind, err, summary))
}

// addWarnings sends warnings as upstream does, in Warning headers (kubectl
// prints them as "Warning: ...").
func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", fmt.Sprintf(`299 - %q`, msg))
	}
}

// decodeDeleteOptions reads DeleteOptions from the body, or from the query
// when there is no body (kubectl sends a body; curl users use the query).
func decodeDeleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(data))) > 0 {
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, &schema.GroupVersionKind{Version: "v1", Kind: "DeleteOptions"}, opts); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decode DeleteOptions: %v", err))
		}
		return opts, nil
	}
	if err := scheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return opts, nil
}

func isDryRun(r *http.Request) bool {
	for _, v := range r.URL.Query()["dryRun"] {
		if v == metav1.DryRunAll {
			return true
		}
	}
	return false
}

// unsupportedMediaType is upstream's 415 for a body it cannot decode.
func unsupportedMediaType(mediaType string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got %s)", mediaType),
	}}
}
