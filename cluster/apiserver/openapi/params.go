package openapi

import (
	"reflect"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// param is one operation parameter, independent of the dialect.
type param struct {
	name, in, description string
	typ                   string // JSON type of the value: string, boolean, integer
	required              bool
}

// Query parameters come from the same option structs the server decodes
// them into, so names and descriptions match kube-apiserver's: the json
// tag is the parameter name and SwaggerDoc holds its description.
var (
	listParams   = optionParams(metav1.ListOptions{})
	createParams = optionParams(metav1.CreateOptions{})
	updateParams = optionParams(metav1.UpdateOptions{})
	patchParams  = optionParams(metav1.PatchOptions{})
	deleteParams = optionParams(metav1.DeleteOptions{})
	logParams    = optionParams(corev1.PodLogOptions{})
)

// watchOnly are list options that make no sense for deletecollection.
var watchOnly = []string{"watch", "allowWatchBookmarks"}

func deleteCollectionParams() []param {
	var params []param
	for _, p := range listParams {
		if !slices.Contains(watchOnly, p.name) {
			params = append(params, p)
		}
	}
	return mergeParams(params, deleteParams)
}

// connectParams are the options of exec, attach, portforward and proxy.
var connectParams = map[string][]param{
	"exec":        optionParams(corev1.PodExecOptions{}),
	"attach":      optionParams(corev1.PodAttachOptions{}),
	"portforward": optionParams(corev1.PodPortForwardOptions{}),
	"proxy":       optionParams(corev1.PodProxyOptions{}),
}

// optionParams lists the scalar fields of an options struct as query
// parameters, sorted by name as upstream prints them. Struct fields
// (TypeMeta, preconditions, sinceTime) are not query parameters.
func optionParams(options any) []param {
	t := reflect.TypeOf(options)
	var docs map[string]string
	if docer, ok := options.(swaggerDocer); ok {
		docs = docer.SwaggerDoc()
	}
	var params []param
	for i := range t.NumField() {
		field := t.Field(i)
		name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		if name == "" || name == "-" || !field.IsExported() {
			continue
		}
		valueType := derefType(field.Type)
		if valueType.Kind() == reflect.Slice {
			valueType = valueType.Elem() // repeated parameter
		}
		info, ok := scalarTypes[valueType.Kind()]
		if !ok {
			continue
		}
		params = append(params, param{name: name, in: "query", description: docs[name], typ: info.typ})
	}
	sort.Slice(params, func(i, j int) bool { return params[i].name < params[j].name })
	return params
}

// mergeParams joins parameter lists, the first occurrence of a name wins.
func mergeParams(lists ...[]param) []param {
	var out []param
	seen := map[string]bool{}
	for _, list := range lists {
		for _, p := range list {
			if !seen[p.name] {
				seen[p.name] = true
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Path-level parameters. Their descriptions are klab's own words.
var (
	prettyParam = param{name: "pretty", in: "query", typ: "string",
		description: "If 'true', the output is pretty printed."}
	namespaceParam = param{name: "namespace", in: "path", typ: "string", required: true,
		description: "The namespace of the object."}
	proxyPathParam = param{name: "path", in: "path", typ: "string", required: true,
		description: "The path to forward the request to."}
)

func nameParam(kind string) param {
	return param{name: "name", in: "path", typ: "string", required: true,
		description: "The name of the " + kind + "."}
}
