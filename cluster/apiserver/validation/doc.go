// Package validation checks built-in objects the way kube-apiserver does
// before it stores them, and reports what is wrong in upstream's words.
//
// Every check returns a field.ErrorList: each entry names a field path
// ("spec.containers[0].image"), a type (Required, Invalid, NotSupported,
// Duplicate, Forbidden, TooLong, ...) and a detail. The API server turns a
// non-empty list into a 422 "Invalid" Status, and kubectl prints it as
//
//	The Pod "web" is invalid: spec.containers[0].image: Required value
//
// Because students search for those lines, the paths and details here are
// upstream's word for word: pkg/apis/core/validation for core/v1,
// pkg/apis/apps/validation, pkg/apis/batch/validation,
// pkg/apis/discovery/validation and pkg/apis/coordination/validation, plus
// the extra update checks that live in the resource strategies (a
// Deployment's selector is immutable only in apps/v1, which its strategy
// enforces). The helpers upstream shares with every API server (names,
// labels, annotations, label selectors, object metadata) come straight from
// k8s.io/apimachinery, as upstream's own code calls them.
//
// Upstream validates the internal version of a type; klab validates the v1
// types directly. The field paths are the same, because they are the JSON
// names. Where the two differ (a v1 pointer that the internal type does not
// have, such as a Deployment's replicas), the object is expected to be
// defaulted first, as it always is upstream.
//
// Each kind has three entry points, chosen by ValidateCreate, ValidateUpdate
// and ValidateStatusUpdate. An update is validated as a whole (the new object
// must be valid) and then as a change (immutable fields must not move; a
// Pod's spec may change only its images, activeDeadlineSeconds, tolerations
// and terminationGracePeriodSeconds). A status update checks the status and
// the metadata, and nothing in the spec, which the status endpoint ignores.
//
// Where an error shows a whole struct as its value, it is printed as the
// v1 JSON of that struct; upstream prints its internal type, so such values
// can differ in spelling while the path and the detail are the same.
//
// Left out on purpose: the content of volume types a lab cannot mount (they
// are only counted, so "may not specify more than 1 volume type" still
// works), the ephemeralcontainers and resize subresources, resource claims,
// the rules inside a Job's podFailurePolicy and successPolicy, Windows
// options, pod-level resources, and checks behind feature gates that are off
// by default upstream. The generic update checks upstream's store runs for
// every kind (validateCommonFields) are the caller's, as is deciding that a
// request's name matches its URL.
package validation
