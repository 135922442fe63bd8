package openapi

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Document header shared by both versions, as kube-apiserver writes it.
const (
	infoTitle   = "Kubernetes"
	infoVersion = "unversioned"
	bearerToken = "BearerToken"
)

func info() *spec.Info {
	return &spec.Info{InfoProps: spec.InfoProps{Title: infoTitle, Version: infoVersion}}
}

// v3Writer renders routes of one group-version into an OpenAPI 3.0
// document, drawing schemas from a builder shared by all group-versions.
type v3Writer struct {
	models *modelBuilder
	paths  map[string]*spec3.Path
	roots  []string // definitions the operations reference
}

func newV3Writer(models *modelBuilder) *v3Writer {
	return &v3Writer{models: models, paths: map[string]*spec3.Path{}}
}

func (w *v3Writer) ref(t reflect.Type) *spec.Schema {
	s := w.models.refTo(t)
	w.roots = append(w.roots, w.models.names[t])
	return &s
}

func (w *v3Writer) add(rt route) error {
	path, ok := w.paths[rt.path]
	if !ok {
		path = &spec3.Path{}
		for _, p := range rt.pathParams {
			path.Parameters = append(path.Parameters, v3Param(p))
		}
		w.paths[rt.path] = path
	}
	op := &spec3.Operation{OperationProps: spec3.OperationProps{
		Tags:        []string{rt.tag},
		Description: rt.description,
		OperationId: rt.operationID,
		Responses:   &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{}}},
	}}
	for _, p := range rt.params {
		op.Parameters = append(op.Parameters, v3Param(p))
	}
	if rt.body != nil {
		body := &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{Content: map[string]*spec3.MediaType{}}}
		schema := w.ref(rt.body)
		// Only a DELETE may come without a body.
		body.Required = rt.method != "delete"
		if rt.patch {
			for _, media := range patchContentTypes {
				body.Content[media] = mediaType(schema)
			}
		} else {
			body.Content[mediaAny] = mediaType(schema)
		}
		op.RequestBody = body
	}
	for _, resp := range rt.responses {
		out := &spec3.Response{ResponseProps: spec3.ResponseProps{Description: resp.description}}
		if resp.code < 300 {
			var schema *spec.Schema
			if resp.typ != nil {
				schema = w.ref(resp.typ)
			} else {
				plain := primitive("string", "")
				schema = &plain
			}
			out.Content = map[string]*spec3.MediaType{}
			for _, media := range rt.produces {
				out.Content[media] = mediaType(schema)
			}
		}
		op.Responses.StatusCodeResponses[resp.code] = out
	}
	if rt.action != "" {
		op.AddExtension(extAction, rt.action)
	}
	if rt.gvk != nil {
		op.AddExtension(extGVK, gvkValue(*rt.gvk))
	}
	var slot **spec3.Operation
	switch rt.method {
	case "get":
		slot = &path.Get
	case "put":
		slot = &path.Put
	case "post":
		slot = &path.Post
	case "patch":
		slot = &path.Patch
	case "delete":
		slot = &path.Delete
	case "options":
		slot = &path.Options
	case "head":
		slot = &path.Head
	default:
		return fmt.Errorf("route %s: unknown method %q", rt.path, rt.method)
	}
	if *slot != nil {
		return fmt.Errorf("route %s %s: two operations %s and %s", strings.ToUpper(rt.method), rt.path,
			(*slot).OperationId, rt.operationID)
	}
	*slot = op
	return nil
}

func mediaType(schema *spec.Schema) *spec3.MediaType {
	return &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: schema}}
}

func v3Param(p param) *spec3.Parameter {
	schema := primitive(p.typ, "")
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{
		Name:        p.name,
		In:          p.in,
		Description: p.description,
		Required:    p.required,
		Schema:      &schema,
	}}
}

// document assembles the group-version document: its paths and exactly the
// schemas they reach.
func (w *v3Writer) document() (*spec3.OpenAPI, error) {
	if w.models.err != nil {
		return nil, w.models.err
	}
	return &spec3.OpenAPI{
		Version: "3.0.0",
		Info:    info(),
		Paths:   &spec3.Paths{Paths: w.paths},
		Components: &spec3.Components{
			Schemas: w.models.closure(w.roots),
			SecuritySchemes: spec3.SecuritySchemes{bearerToken: &spec3.SecurityScheme{
				SecuritySchemeProps: spec3.SecuritySchemeProps{
					Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication",
				},
			}},
		},
		SecurityRequirement: []map[string][]string{{bearerToken: {}}},
	}, nil
}
