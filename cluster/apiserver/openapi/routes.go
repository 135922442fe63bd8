package openapi

import (
	"net/http"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// route is one operation on one path, independent of the dialect; the v2
// and v3 writers render the same routes.
type route struct {
	path        string
	pathParams  []param // shared by every operation on the path
	method      string  // lower case, as OpenAPI keys operations
	operationID string
	description string
	action      string // x-kubernetes-action
	tag         string
	gvk         *schema.GroupVersionKind
	params      []param
	body        reflect.Type // request object; nil when there is none
	patch       bool         // the body is a patch in one of patchContentTypes
	responses   []response
	produces    []string
}

// response is one status code; a nil typ is a plain string body.
type response struct {
	code        int
	description string
	typ         reflect.Type
}

// Media types, as kube-apiserver lists them.
const (
	mediaJSON       = "application/json"
	mediaYAML       = "application/yaml"
	mediaProtobuf   = "application/vnd.kubernetes.protobuf"
	mediaJSONWatch  = "application/json;stream=watch"
	mediaProtoWatch = "application/vnd.kubernetes.protobuf;stream=watch"
	mediaAny        = "*/*"
	mediaText       = "text/plain"
)

var (
	objectMedia = []string{mediaJSON, mediaYAML, mediaProtobuf}
	streamMedia = []string{mediaJSON, mediaYAML, mediaProtobuf, mediaJSONWatch, mediaProtoWatch}
	// patchContentTypes are the patch formats every PATCH operation
	// accepts; kubectl looks for the strategic merge one before it sends
	// a strategic merge patch.
	patchContentTypes = []string{
		"application/json-patch+json",
		"application/merge-patch+json",
		"application/strategic-merge-patch+json",
		"application/apply-patch+yaml",
	}
)

var (
	statusType           = reflect.TypeFor[metav1.Status]()
	deleteOptionsType    = reflect.TypeFor[metav1.DeleteOptions]()
	watchEventType       = reflect.TypeFor[metav1.WatchEvent]()
	patchType            = reflect.TypeFor[metav1.Patch]()
	apiResourceListType  = reflect.TypeFor[metav1.APIResourceList]()
	unauthorizedResponse = response{code: http.StatusUnauthorized, description: "Unauthorized"}
)

// groupVersionRoutes is the discovery endpoint of a group-version.
func groupVersionRoutes(gv schema.GroupVersion) route {
	return route{
		path:        "/" + gvPath(gv) + "/",
		method:      "get",
		operationID: "get" + operationGroup(gv.Group) + title(gv.Version) + "APIResources",
		description: "List the resources served in " + gv.String() + ".",
		tag:         operationTag(gv),
		responses:   []response{{http.StatusOK, "OK", apiResourceListType}, unauthorizedResponse},
		produces:    objectMedia,
	}
}

// itemParams are the path-level parameters of an object path.
func itemParams(r *Resource, pretty bool) []param {
	params := []param{nameParam(r.Kind)}
	if r.Namespaced {
		params = append(params, namespaceParam)
	}
	if pretty {
		params = append(params, prettyParam)
	}
	return params
}

// resourceRoutes lists the operations kube-apiserver would publish for r.
func resourceRoutes(r *Resource) []route {
	gv := r.groupVersion()
	gvk := r.gvk()
	names := opNames{gv: operationGroup(r.Group) + title(r.Version), kind: r.Kind}
	scopePath := ""
	scopeParams := []param{prettyParam}
	if r.Namespaced {
		names.scope = "Namespaced"
		scopePath = "/namespaces/{namespace}"
		scopeParams = []param{namespaceParam, prettyParam}
	}
	collection := "/" + gvPath(gv) + scopePath + "/" + r.Resource
	item := collection + "/{name}"
	base := route{tag: operationTag(gv), gvk: &gvk, produces: objectMedia}

	var routes []route
	add := func(rt route) {
		routes = append(routes, rt)
	}
	if r.hasVerb("list") {
		rt := base
		rt.path, rt.pathParams, rt.method, rt.action = collection, scopeParams, "get", "list"
		rt.operationID = "list" + names.scoped()
		rt.description = "List or watch objects of kind " + r.Kind + "."
		rt.params, rt.produces = listParams, streamMedia
		rt.responses = []response{{http.StatusOK, "OK", r.ListType}, unauthorizedResponse}
		add(rt)
		if r.Namespaced {
			rt.path = "/" + gvPath(gv) + "/" + r.Resource
			rt.pathParams = []param{prettyParam}
			rt.operationID = "list" + names.gv + r.Kind + "ForAllNamespaces"
			rt.description = "List or watch objects of kind " + r.Kind + " in all namespaces."
			add(rt)
		}
	}
	if r.hasVerb("create") {
		rt := base
		rt.path, rt.pathParams, rt.method, rt.action = collection, scopeParams, "post", "post"
		rt.operationID = "create" + names.scoped()
		rt.description = "Create a " + r.Kind + "."
		rt.params, rt.body = createParams, r.Type
		rt.responses = responses(r.Type, http.StatusOK, http.StatusCreated, http.StatusAccepted)
		add(rt)
	}
	if r.hasVerb("deletecollection") {
		rt := base
		rt.path, rt.pathParams, rt.method, rt.action = collection, scopeParams, "delete", "deletecollection"
		rt.operationID = "delete" + names.gv + "Collection" + names.scope + r.Kind
		rt.description = "Delete a collection of " + r.Kind + " objects."
		rt.params, rt.body = deleteCollectionParams(), deleteOptionsType
		rt.responses = responses(statusType, http.StatusOK)
		add(rt)
	}
	base.path, base.pathParams = item, itemParams(r, true)
	routes = append(routes, objectRoutes(base, r, names.scoped(), "the specified "+r.Kind, r.Type)...)
	if r.hasVerb("delete") {
		rt := base
		rt.method, rt.action = "delete", "delete"
		rt.operationID = "delete" + names.scoped()
		rt.description = "Delete the specified " + r.Kind + "."
		rt.params, rt.body = deleteParams, deleteOptionsType
		rt.responses = responses(statusType, http.StatusOK, http.StatusAccepted)
		add(rt)
	}
	if r.hasVerb("watch") {
		routes = append(routes, watchRoutes(base, r, names, scopePath, scopeParams)...)
	}
	for _, sub := range r.Subresources {
		routes = append(routes, subresourceRoutes(base, r, names, sub)...)
	}
	return routes
}

// responses lists the given status codes answered with typ, then 401.
func responses(typ reflect.Type, codes ...int) []response {
	var out []response
	for _, code := range codes {
		out = append(out, response{code, http.StatusText(code), typ})
	}
	return append(out, unauthorizedResponse)
}

// objectRoutes are get, update and patch on one object path: the object
// itself, or a subresource exchanged like one (status, scale). base
// carries the path.
func objectRoutes(base route, r *Resource, opSuffix, what string, typ reflect.Type) []route {
	var routes []route
	if r.hasVerb("get") {
		rt := base
		rt.method, rt.action, rt.operationID = "get", "get", "read"+opSuffix
		rt.description = "Read " + what + "."
		rt.responses = responses(typ, http.StatusOK)
		routes = append(routes, rt)
	}
	if r.hasVerb("update") {
		rt := base
		rt.method, rt.action, rt.operationID = "put", "put", "replace"+opSuffix
		rt.description = "Replace " + what + "."
		rt.params, rt.body = updateParams, typ
		rt.responses = responses(typ, http.StatusOK, http.StatusCreated)
		routes = append(routes, rt)
	}
	if r.hasVerb("patch") {
		rt := base
		rt.method, rt.action, rt.operationID = "patch", "patch", "patch"+opSuffix
		rt.description = "Partially update " + what + "."
		rt.params, rt.body, rt.patch = patchParams, patchType, true
		rt.responses = responses(typ, http.StatusOK, http.StatusCreated)
		routes = append(routes, rt)
	}
	return routes
}

// watchRoutes are the deprecated /watch/ paths, still published upstream.
func watchRoutes(base route, r *Resource, names opNames, scopePath string, scopeParams []param) []route {
	prefix := "/" + gvPath(r.groupVersion()) + "/watch"
	base.method, base.params, base.produces, base.body = "get", listParams, streamMedia, nil
	base.responses = responses(watchEventType, http.StatusOK)
	var routes []route
	if r.hasVerb("get") {
		rt := base
		rt.path = prefix + scopePath + "/" + r.Resource + "/{name}"
		rt.pathParams = itemParams(r, true)
		rt.action, rt.operationID = "watch", "watch"+names.scoped()
		rt.description = "Watch changes to the specified " + r.Kind + "; deprecated, watch the list instead."
		routes = append(routes, rt)
	}
	if r.hasVerb("list") {
		rt := base
		rt.path, rt.pathParams = prefix+scopePath+"/"+r.Resource, scopeParams
		rt.action, rt.operationID = "watchlist", "watch"+names.scoped()+"List"
		rt.description = "Watch changes to a list of " + r.Kind + "; deprecated, watch the list instead."
		routes = append(routes, rt)
		if r.Namespaced {
			rt.path, rt.pathParams = prefix+"/"+r.Resource, []param{prettyParam}
			rt.operationID = "watch" + names.gv + r.Kind + "ListForAllNamespaces"
			routes = append(routes, rt)
		}
	}
	return routes
}
