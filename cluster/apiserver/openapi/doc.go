// Package openapi builds and serves the OpenAPI documents of klab's API
// server, the way kube-apiserver publishes them at /openapi/v2 and
// /openapi/v3.
//
// Real kubectl reads these documents for three jobs. Before `kubectl apply`
// or `kubectl create` sends an object it looks for the fieldValidation query
// parameter on the PATCH operation of the object's group-version-kind; when
// it is there kubectl sends fieldValidation=Strict and leaves validation to
// the server. `kubectl apply` computes its three-way strategic merge patch
// from the component schemas, following $ref links and reading
// x-kubernetes-patch-strategy and x-kubernetes-patch-merge-key on list
// fields, so that a list of containers is merged by name instead of being
// replaced. `kubectl explain` walks the same schemas to print fields.
//
// kube-apiserver gets its schemas from code generated out of Go comments
// (openapi-gen). klab has no generator step, so this package derives the
// schemas at start-up by reflection over the real k8s.io/api Go types: JSON
// names and omitempty come from `json` tags, patch strategies from the
// `patchStrategy` and `patchMergeKey` tags, descriptions from the
// SwaggerDoc methods generated into k8s.io/api, and definition names from
// the generated OpenAPIModelName methods, so every name matches upstream
// (io.k8s.api.core.v1.Pod, io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta).
// Types that describe their own wire format (metav1.Time, resource.Quantity,
// intstr.IntOrString) are honoured through their OpenAPISchemaType,
// OpenAPISchemaFormat and OpenAPIV3OneOfTypes methods.
//
// What reflection cannot see is left out: +listType, +mapType, +enum and
// +default comment markers. List types are derived from patch tags instead
// (a merge list with a merge key is a map list keyed by it), which is what
// the structured-merge-diff conversion infers for such lists anyway.
//
// The v3 documents are split per group-version like upstream: /openapi/v3
// is an index whose URLs carry a content hash, and a request with the
// current hash is answered with immutable caching headers, while a stale
// hash is redirected to the current URL. /openapi/v2 is one Swagger 2.0
// document for everything; client-go fetches it only as protobuf, which is
// converted with the gnostic models.
//
// NewHandler builds every document, so a resource it cannot describe fails
// the start of the API server; encoding, which costs more than building,
// waits for the first request of each document.
package openapi
