package openapi

import (
	"reflect"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

func primitive(typ, format string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{typ}, Format: format}}
}

type scalarInfo struct {
	typ, format string
	zero        any
}

// scalarTypes maps Go kinds to JSON types and formats as kube-openapi's
// generator does (int is int32 there, uint32 is int64).
var scalarTypes = map[reflect.Kind]scalarInfo{
	reflect.Bool:    {"boolean", "", false},
	reflect.String:  {"string", "", ""},
	reflect.Int:     {"integer", "int32", 0},
	reflect.Int8:    {"integer", "byte", 0},
	reflect.Int16:   {"integer", "int32", 0},
	reflect.Int32:   {"integer", "int32", 0},
	reflect.Int64:   {"integer", "int64", 0},
	reflect.Uint:    {"integer", "int32", 0},
	reflect.Uint8:   {"integer", "byte", 0},
	reflect.Uint16:  {"integer", "int32", 0},
	reflect.Uint32:  {"integer", "int64", 0},
	reflect.Uint64:  {"integer", "int64", 0},
	reflect.Float32: {"number", "float", 0},
	reflect.Float64: {"number", "double", 0},
}

// mustEnforceDefault is the default openapi-gen writes when a field has no
// +default marker: a struct value always serialises, so it defaults to {};
// a scalar that is not omitempty defaults to its zero value; pointers,
// lists and maps have none.
func mustEnforceDefault(t reflect.Type, omitEmpty bool) any {
	switch t.Kind() {
	case reflect.Struct:
		return map[string]any{}
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map, reflect.Interface:
		return nil
	}
	if omitEmpty {
		return nil
	}
	if info, ok := scalarTypes[t.Kind()]; ok {
		return info.zero
	}
	return nil
}
