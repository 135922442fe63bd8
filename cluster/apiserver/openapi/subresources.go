package openapi

import (
	"net/http"
	"reflect"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// subresourceStyle is how a subresource is operated on.
type subresourceStyle int

const (
	// subObject is read, replaced and patched like its parent (status,
	// scale).
	subObject subresourceStyle = iota
	// subReplace is only replaced (namespaces/finalize).
	subReplace
	// subCreate only accepts a POST of a separate kind (binding, eviction).
	subCreate
	// subLog streams text.
	subLog
	// subConnect upgrades the connection (exec) or forwards it (proxy).
	subConnect
)

type subresourceKind struct {
	style subresourceStyle
	// typ and gvk name the kind exchanged when it is not the parent's.
	typ reflect.Type
	gvk schema.GroupVersionKind
	// methods of a connect subresource, and whether it also has a
	// /{path} variant.
	methods  []string
	withPath bool
}

var subresourceKinds = map[string]subresourceKind{
	"status":              {style: subObject},
	"approval":            {style: subObject},
	"finalize":            {style: subReplace},
	"ephemeralcontainers": {style: subObject},
	"resize":              {style: subObject},
	"scale": {style: subObject, typ: reflect.TypeFor[autoscalingv1.Scale](),
		gvk: autoscalingv1.SchemeGroupVersion.WithKind("Scale")},
	"binding": {style: subCreate, typ: reflect.TypeFor[corev1.Binding](),
		gvk: corev1.SchemeGroupVersion.WithKind("Binding")},
	"eviction": {style: subCreate, typ: reflect.TypeFor[policyv1.Eviction](),
		gvk: policyv1.SchemeGroupVersion.WithKind("Eviction")},
	"token": {style: subCreate, typ: reflect.TypeFor[authenticationv1.TokenRequest](),
		gvk: authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")},
	"log":         {style: subLog},
	"exec":        {style: subConnect, methods: []string{"get", "post"}},
	"attach":      {style: subConnect, methods: []string{"get", "post"}},
	"portforward": {style: subConnect, methods: []string{"get", "post"}},
	"proxy": {style: subConnect, withPath: true,
		methods: []string{"get", "put", "post", "patch", "delete", "options", "head"}},
}

// connectOptionsKind is the kind upstream names on connect operations:
// PodExecOptions, NodeProxyOptions, ServiceProxyOptions.
var connectOptionsKind = map[string]string{
	"exec":        "ExecOptions",
	"attach":      "AttachOptions",
	"portforward": "PortForwardOptions",
	"proxy":       "ProxyOptions",
}

// subresourceRoutes are the operations on item/sub. base carries the item
// path and its parameters.
func subresourceRoutes(base route, r *Resource, names opNames, sub string) []route {
	kind := subresourceKinds[sub]
	base.path += "/" + sub
	opSuffix := names.scoped() + title(sub)
	switch kind.style {
	case subObject:
		typ := r.Type
		if kind.typ != nil {
			typ, base.gvk = kind.typ, &kind.gvk
		}
		return objectRoutes(base, r, opSuffix, sub+" of the specified "+r.Kind, typ)
	case subReplace:
		var put []route
		for _, rt := range objectRoutes(base, r, opSuffix, sub+" of the specified "+r.Kind, r.Type) {
			if rt.method == "put" {
				put = append(put, rt)
			}
		}
		return put
	case subCreate:
		rt := base
		rt.method, rt.action, rt.gvk = "post", "post", &kind.gvk
		rt.operationID = "create" + opSuffix
		rt.description = "Create a " + kind.gvk.Kind + " for the specified " + r.Kind + "."
		rt.params, rt.body = createParams, kind.typ
		rt.responses = responses(kind.typ, http.StatusOK, http.StatusCreated, http.StatusAccepted)
		return []route{rt}
	case subLog:
		rt := base
		rt.method, rt.action, rt.operationID = "get", "get", "read"+opSuffix
		rt.description = "Read the log of the specified " + r.Kind + "."
		rt.params = logParams
		rt.responses = responses(nil, http.StatusOK)
		rt.produces = []string{mediaText, mediaJSON, mediaYAML, mediaProtobuf}
		return []route{rt}
	}
	// subConnect: the options kind names the operation, and the method
	// sits between group-version and scope: connectCoreV1GetNamespacedPodExec.
	gvk := r.groupVersion().WithKind(r.Kind + connectOptionsKind[sub])
	base.gvk, base.action, base.body = &gvk, "connect", nil
	base.pathParams = itemParams(r, false)
	base.params = connectParams[sub]
	base.responses = responses(nil, http.StatusOK)
	base.produces = []string{mediaAny}
	variants := []route{base}
	if kind.withPath {
		withPath := base
		withPath.path += "/{path}"
		withPath.pathParams = append(itemParams(r, false), proxyPathParam)
		variants = append(variants, withPath)
	}
	var routes []route
	for i, variant := range variants {
		for _, method := range kind.methods {
			rt := variant
			rt.method = method
			rt.operationID = "connect" + names.gv + title(method) + names.scope + r.Kind + title(sub)
			if i == 1 {
				rt.operationID += "WithPath"
			}
			rt.description = "Connect " + strings.ToUpper(method) + " requests to " + sub + " of the specified " + r.Kind + "."
			routes = append(routes, rt)
		}
	}
	return routes
}
