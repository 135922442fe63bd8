package openapi

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// v2Writer renders routes of every group-version into one Swagger 2.0
// document, as /openapi/v2 is.
type v2Writer struct {
	models *modelBuilder
	paths  map[string]*spec.PathItem
}

func newV2Writer(models *modelBuilder) *v2Writer {
	return &v2Writer{models: models, paths: map[string]*spec.PathItem{}}
}

func (w *v2Writer) ref(t reflect.Type) *spec.Schema {
	s := w.models.refTo(t)
	return &s
}

func (w *v2Writer) add(rt route) error {
	path, ok := w.paths[rt.path]
	if !ok {
		path = &spec.PathItem{}
		for _, p := range rt.pathParams {
			path.Parameters = append(path.Parameters, v2Param(p))
		}
		w.paths[rt.path] = path
	}
	op := &spec.Operation{OperationProps: spec.OperationProps{
		Description: rt.description,
		Produces:    rt.produces,
		Schemes:     []string{"https"},
		Tags:        []string{rt.tag},
		ID:          rt.operationID,
		Responses:   &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{}}},
	}}
	if rt.body != nil {
		body := spec.Parameter{ParamProps: spec.ParamProps{
			Name: "body", In: "body", Required: rt.method != "delete", Schema: w.ref(rt.body),
		}}
		op.Parameters = append(op.Parameters, body)
		op.Consumes = []string{mediaAny}
		if rt.patch {
			op.Consumes = patchContentTypes
		}
	} else {
		op.Consumes = []string{mediaAny}
	}
	for _, p := range rt.params {
		op.Parameters = append(op.Parameters, v2Param(p))
	}
	for _, resp := range rt.responses {
		out := spec.Response{ResponseProps: spec.ResponseProps{Description: resp.description}}
		if resp.code < 300 {
			if resp.typ != nil {
				out.Schema = w.ref(resp.typ)
			} else {
				plain := primitive("string", "")
				out.Schema = &plain
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
	var slot **spec.Operation
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
			(*slot).ID, rt.operationID)
	}
	*slot = op
	return nil
}

func v2Param(p param) spec.Parameter {
	return spec.Parameter{
		ParamProps:   spec.ParamProps{Name: p.name, In: p.in, Description: p.description, Required: p.required},
		SimpleSchema: spec.SimpleSchema{Type: p.typ},
	}
}

// document assembles the whole Swagger 2.0 document.
func (w *v2Writer) document() (*spec.Swagger, error) {
	if w.models.err != nil {
		return nil, w.models.err
	}
	paths := &spec.Paths{Paths: make(map[string]spec.PathItem, len(w.paths))}
	for key, item := range w.paths {
		paths.Paths[key] = *item
	}
	definitions := make(spec.Definitions, len(w.models.defs))
	for name, def := range w.models.defs {
		definitions[name] = *def
	}
	return &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        info(),
		Paths:       paths,
		Definitions: definitions,
		SecurityDefinitions: spec.SecurityDefinitions{bearerToken: &spec.SecurityScheme{
			SecuritySchemeProps: spec.SecuritySchemeProps{
				Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication",
			},
		}},
		Security: []map[string][]string{{bearerToken: {}}},
	}}, nil
}
