package openapi

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/openapi3"
)

// TestPatchMetaAgreesWithGoStructs walks every field reachable from every
// served kind and asks both lookups strategic merge patch can use, the one
// over the Go struct and the one over the served v3 schema, for the field's
// patch strategy and merge key. A missing $ref, a lost allOf or a dropped
// extension anywhere in the tree shows up as a disagreement at its path.
func TestPatchMetaAgreesWithGoStructs(t *testing.T) {
	f := newFixture(t)
	root := openapi3.NewRoot(f.openAPIV3)
	for _, r := range testResources() {
		t.Run(r.Kind, func(t *testing.T) {
			doc, err := root.GVSpec(r.groupVersion())
			if err != nil {
				t.Fatalf("fetch openapi v3: %v", err)
			}
			fromSchema := v3PatchMeta(t, doc, r.gvk())
			fromStruct := strategicpatch.PatchMetaFromStruct{T: r.Type}
			w := &patchMetaWalker{t: t, visited: map[reflect.Type]bool{}}
			w.walk(r.Kind, r.Type, fromStruct, fromSchema)
			if w.fields < 20 {
				t.Errorf("walked only %d fields of %s, the walk is broken", w.fields, r.Kind)
			}
		})
	}
}

type patchMetaWalker struct {
	t       *testing.T
	visited map[reflect.Type]bool
	fields  int
}

func (w *patchMetaWalker) walk(path string, t reflect.Type, fromStruct, fromSchema strategicpatch.LookupPatchMeta) {
	if w.visited[t] {
		return
	}
	w.visited[t] = true
	defer delete(w.visited, t)
	for _, field := range visibleJSONFields(t) {
		name, _, _ := jsonField(field)
		fieldPath := path + "." + name
		fieldType := derefType(field.Type)
		lookup := func(meta strategicpatch.LookupPatchMeta) (strategicpatch.LookupPatchMeta, strategicpatch.PatchMeta, error) {
			if fieldType.Kind() == reflect.Slice && fieldType.Elem().Kind() != reflect.Uint8 {
				return meta.LookupPatchMetadataForSlice(name)
			}
			return meta.LookupPatchMetadataForStruct(name)
		}
		structNext, structMeta, err := lookup(fromStruct)
		if err != nil {
			w.t.Errorf("%s: struct lookup: %v", fieldPath, err)
			continue
		}
		schemaNext, schemaMeta, err := lookup(fromSchema)
		if err != nil {
			w.t.Errorf("%s: schema lookup: %v", fieldPath, err)
			continue
		}
		w.fields++
		if got, want := nonEmpty(schemaMeta.GetPatchStrategies()), nonEmpty(structMeta.GetPatchStrategies()); !slices.Equal(got, want) {
			w.t.Errorf("%s: patch strategies from schema %q, from struct %q", fieldPath, got, want)
		}
		if got, want := schemaMeta.GetPatchMergeKey(), structMeta.GetPatchMergeKey(); got != want {
			w.t.Errorf("%s: merge key from schema %q, from struct %q", fieldPath, got, want)
		}
		elem := fieldType
		if elem.Kind() == reflect.Slice {
			elem = derefType(elem.Elem())
		}
		if elem.Kind() == reflect.Struct && len(visibleJSONFields(elem)) > 0 {
			if _, custom := reflect.Zero(elem).Interface().(openAPITyper); !custom {
				w.walk(fieldPath, elem, structNext, schemaNext)
			}
		}
	}
}

// visibleJSONFields are the fields encoding/json writes for t, with
// embedded structs flattened.
func visibleJSONFields(t reflect.Type) []reflect.StructField {
	var fields []reflect.StructField
	for i := range t.NumField() {
		field := t.Field(i)
		name, _, skip := jsonField(field)
		switch {
		case skip:
		case name == "":
			fields = append(fields, visibleJSONFields(derefType(field.Type))...)
		default:
			fields = append(fields, field)
		}
	}
	return fields
}

func nonEmpty(values []string) []string {
	return slices.DeleteFunc(slices.Clone(values), func(s string) bool { return strings.TrimSpace(s) == "" })
}
