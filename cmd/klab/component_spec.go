package main

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
)

// decodeSpec decodes the --spec of `klab component <component>`, the JSON
// of the component's runtime spec, into spec (a pointer to a struct).
// Decoding is strict, since a runtime and a binary of different builds
// could otherwise disagree without a word: a field the spec does not have,
// a value of the wrong type, trailing data or a missing required field (by
// JSON name) is an error naming the field.
func decodeSpec(component, data string, spec any, required []string) error {
	if err := checkTopLevelFields(component, data, reflect.TypeOf(spec).Elem()); err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(spec); err != nil {
		return specError(component, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return i18n.NewError("component.err.spec-trailing", component)
	}
	v := reflect.ValueOf(spec).Elem()
	for _, name := range required {
		if f, ok := jsonField(v, name); !ok || f.IsZero() {
			return i18n.NewError("component.err.spec-missing", component, name)
		}
	}
	return nil
}

// specError explains why the JSON of a component's spec did not decode.
func specError(component string, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return i18n.Wrap(err, "component.err.spec-syntax", component, syntax.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return i18n.NewError("component.err.spec-truncated", component)
	case errors.As(err, &typ) && typ.Field == "":
		return i18n.NewError("component.err.spec-not-object", component, typ.Value)
	case errors.As(err, &typ):
		return i18n.NewError("component.err.spec-type", component, typ.Field, jsonKind(typ.Type), typ.Value)
	}
	// encoding/json reports an unknown field with an error of no type of
	// its own, and without its path: checkTopLevelFields has already
	// caught those of the spec itself, so this one is in a nested object.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return i18n.NewError("component.err.spec-unknown-nested-field", component, strings.Trim(name, `"`))
	}
	return i18n.Wrap(err, "component.err.spec", component)
}

// checkTopLevelFields fails on the first field of the JSON object data
// (in the order of the text) that struct type t does not have, naming the
// fields it has. JSON that is not an object passes, for the decoder to
// explain.
func checkTopLevelFields(component, data string, t reflect.Type) error {
	dec := json.NewDecoder(strings.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	fields := jsonFields(t)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		// encoding/json matches field names without regard to case.
		if !slices.ContainsFunc(fields, func(f string) bool { return strings.EqualFold(f, key) }) {
			return i18n.NewError("component.err.spec-unknown-field", component, key, strings.Join(fields, ", "))
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// jsonKind names the JSON value a Go type decodes from, in the words
// encoding/json uses for the value it got.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "object"
}

// jsonFields lists the JSON names of a struct's fields, those of embedded
// structs included, in declaration order.
func jsonFields(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, embedded := fieldName(f)
		if embedded {
			names = append(names, jsonFields(f.Type)...)
		} else if name != "" {
			names = append(names, name)
		}
	}
	return names
}

// jsonField finds the field of struct value v whose JSON name is name.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		fname, embedded := fieldName(f)
		if embedded {
			if fv, ok := jsonField(v.Field(i), name); ok {
				return fv, true
			}
		} else if fname == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// fieldName returns a struct field's JSON name ("" when the field is
// skipped), or embedded when its fields are promoted into the parent's.
func fieldName(f reflect.StructField) (name string, embedded bool) {
	tag, hasTag := f.Tag.Lookup("json")
	name, _, _ = strings.Cut(tag, ",")
	if name == "-" {
		return "", false
	}
	if f.Anonymous && f.Type.Kind() == reflect.Struct && name == "" {
		return "", true
	}
	if !hasTag || name == "" {
		return f.Name, false
	}
	return name, false
}
