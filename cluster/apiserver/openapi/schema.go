package openapi

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// dialect selects between the two shapes kube-apiserver publishes.
type dialect int

const (
	// swagger2 is /openapi/v2: refs point into #/definitions/, a ref sits
	// next to its description and extensions, and there are no defaults.
	swagger2 dialect = iota
	// openAPI3 is /openapi/v3: refs point into #/components/schemas/ and a
	// ref with siblings is wrapped in allOf, because OpenAPI 3.0 ignores
	// keywords next to $ref.
	openAPI3
)

// Extension keys, spelled as kube-apiserver spells them.
const (
	extGVK           = "x-kubernetes-group-version-kind"
	extPatchStrategy = "x-kubernetes-patch-strategy"
	extPatchMergeKey = "x-kubernetes-patch-merge-key"
	extListType      = "x-kubernetes-list-type"
	extListMapKeys   = "x-kubernetes-list-map-keys"
	extAction        = "x-kubernetes-action"
)

// The interfaces below are the hooks kube-openapi's generator honours.
// apimachinery implements them on the types whose JSON form is not their
// Go shape: Time and MicroTime are strings, Quantity and IntOrString are
// "int or string".
type (
	openAPIModelNamer interface{ OpenAPIModelName() string }
	openAPITyper      interface{ OpenAPISchemaType() []string }
	openAPIFormatter  interface{ OpenAPISchemaFormat() string }
	openAPIV3OneOfer  interface{ OpenAPIV3OneOfTypes() []string }
	swaggerDocer      interface{ SwaggerDoc() map[string]string }
)

var timeType = reflect.TypeFor[time.Time]()

// modelBuilder turns Go types into named definitions of one dialect.
// Every named struct becomes a definition and is referenced by $ref, so
// recursive types terminate: a type is registered before its fields are
// walked.
type modelBuilder struct {
	dialect dialect
	defs    map[string]*spec.Schema
	names   map[reflect.Type]string
	gvks    map[reflect.Type][]schema.GroupVersionKind
	// inlining guards against named non-struct types that contain
	// themselves (type T []T), which have no definition to point at.
	inlining map[reflect.Type]bool
	err      error
}

func newModelBuilder(d dialect, gvks map[reflect.Type][]schema.GroupVersionKind) *modelBuilder {
	return &modelBuilder{
		dialect:  d,
		defs:     map[string]*spec.Schema{},
		names:    map[reflect.Type]string{},
		gvks:     gvks,
		inlining: map[reflect.Type]bool{},
	}
}

// fail keeps the first error; building goes on so callers need not check
// after every step.
func (b *modelBuilder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

func (b *modelBuilder) refPrefix() string {
	if b.dialect == openAPI3 {
		return "#/components/schemas/"
	}
	return "#/definitions/"
}

// refTo returns a schema that is only a $ref to the definition of t,
// building the definition first if needed.
func (b *modelBuilder) refTo(t reflect.Type) spec.Schema {
	name := b.define(t)
	ref, err := spec.NewRef(b.refPrefix() + name)
	if err != nil {
		b.fail(fmt.Errorf("reference definition %s: %w", name, err))
	}
	return spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref}}
}

// definitionName is the upstream name of a type's definition. k8s.io/api
// and apimachinery generate OpenAPIModelName for this; other types get the
// same reverse-domain form kube-openapi derives from the package path.
func definitionName(t reflect.Type) string {
	if namer, ok := reflect.Zero(t).Interface().(openAPIModelNamer); ok {
		return namer.OpenAPIModelName()
	}
	return util.ToRESTFriendlyName(util.GetCanonicalTypeName(reflect.Zero(t).Interface()))
}

// define builds the definition of the named type t once and returns its
// name.
func (b *modelBuilder) define(t reflect.Type) string {
	if name, ok := b.names[t]; ok {
		return name
	}
	name := definitionName(t)
	if _, taken := b.defs[name]; taken {
		b.fail(fmt.Errorf("definition %s is claimed by two Go types, the second is %v", name, t))
	}
	def := &spec.Schema{}
	b.names[t] = name
	b.defs[name] = def

	value := reflect.Zero(t).Interface()
	if docer, ok := value.(swaggerDocer); ok {
		def.Description = docer.SwaggerDoc()[""]
	}
	if typer, ok := value.(openAPITyper); ok {
		b.fillCustomType(def, value, typer)
	} else {
		def.Type = spec.StringOrArray{"object"}
		b.addFields(def, t)
	}
	if gvks := b.gvks[t]; len(gvks) > 0 {
		list := make([]map[string]string, 0, len(gvks))
		for _, gvk := range gvks {
			list = append(list, gvkValue(gvk))
		}
		def.AddExtension(extGVK, list)
	}
	return name
}

// fillCustomType describes a type that declares its own JSON type. In v3
// a type that can be one of several JSON types is a oneOf, as upstream
// publishes IntOrString ({integer, string}) and Quantity ({string, number}).
func (b *modelBuilder) fillCustomType(def *spec.Schema, value any, typer openAPITyper) {
	if formatter, ok := value.(openAPIFormatter); ok {
		def.Format = formatter.OpenAPISchemaFormat()
	}
	if oneOfer, ok := value.(openAPIV3OneOfer); ok && b.dialect == openAPI3 {
		for _, typ := range oneOfer.OpenAPIV3OneOfTypes() {
			def.OneOf = append(def.OneOf, spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{typ}}})
		}
		return
	}
	def.Type = spec.StringOrArray(typer.OpenAPISchemaType())
}

// addFields adds the JSON fields of struct t to def, flattening embedded
// structs the way encoding/json does (TypeMeta, ObjectMeta inline).
func (b *modelBuilder) addFields(def *spec.Schema, t reflect.Type) {
	var docs map[string]string
	if docer, ok := reflect.Zero(t).Interface().(swaggerDocer); ok {
		docs = docer.SwaggerDoc()
	}
	for i := range t.NumField() {
		field := t.Field(i)
		name, omitEmpty, skip := jsonField(field)
		if skip {
			continue
		}
		if name == "" {
			// An embedded struct without a JSON name is inlined.
			b.addFields(def, derefType(field.Type))
			continue
		}
		prop := b.schemaOf(field.Type)
		extensions := patchExtensions(field, field.Type)
		prop = b.decorate(prop, docs[name], mustEnforceDefault(field.Type, omitEmpty), extensions)
		if def.Properties == nil {
			def.Properties = map[string]spec.Schema{}
		}
		def.Properties[name] = prop
		// openapi-gen marks a field required unless it is omitempty or
		// commented +optional; comments are not visible here, so a few
		// +optional fields without omitempty come out required.
		if !omitEmpty {
			def.Required = append(def.Required, name)
		}
	}
}

// jsonField reads a field's JSON name and omitempty. An embedded struct
// without a name in its tag is reported with an empty name: its fields
// belong to the parent.
func jsonField(field reflect.StructField) (name string, omitEmpty, skip bool) {
	tag := field.Tag.Get("json")
	if tag == "-" {
		return "", false, true
	}
	name, options, _ := strings.Cut(tag, ",")
	for option := range strings.SplitSeq(options, ",") {
		if option == "omitempty" || option == "omitzero" {
			omitEmpty = true
		}
	}
	if field.Anonymous && name == "" && derefType(field.Type).Kind() == reflect.Struct {
		return "", omitEmpty, false
	}
	if !field.IsExported() {
		return "", false, true
	}
	if name == "" {
		name = field.Name
	}
	return name, omitEmpty, false
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// patchExtensions turns the patchStrategy and patchMergeKey struct tags
// into the extensions kubectl's strategic merge patch reads. A merge list
// keyed by a field is also a map list keyed by it.
func patchExtensions(field reflect.StructField, t reflect.Type) spec.Extensions {
	strategy := field.Tag.Get("patchStrategy")
	mergeKey := field.Tag.Get("patchMergeKey")
	if strategy == "" && mergeKey == "" {
		return nil
	}
	extensions := spec.Extensions{}
	if strategy != "" {
		extensions.Add(extPatchStrategy, strategy)
	}
	if mergeKey != "" {
		extensions.Add(extPatchMergeKey, mergeKey)
		isList := derefType(t).Kind() == reflect.Slice
		if isList && slices.Contains(strings.Split(strategy, ","), "merge") {
			extensions.Add(extListType, "map")
			extensions.Add(extListMapKeys, []string{mergeKey})
		}
	}
	return extensions
}

// decorate attaches a description, a default and extensions to a field or
// element schema. In v3 a $ref cannot carry siblings, so it is wrapped in
// allOf as upstream does; v2 keeps them side by side and has no defaults.
func (b *modelBuilder) decorate(s spec.Schema, description string, def any, extensions spec.Extensions) spec.Schema {
	if b.dialect == swagger2 {
		def = nil
	}
	if description == "" && def == nil && len(extensions) == 0 {
		return s
	}
	if s.Ref.String() != "" && b.dialect == openAPI3 {
		s = spec.Schema{SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{s}}}
	}
	s.Description = description
	s.Default = def
	for key, value := range extensions {
		s.AddExtension(key, value)
	}
	return s
}

// schemaOf is the schema of a value of type t where it appears: named
// structs become references, everything else is written inline.
func (b *modelBuilder) schemaOf(t reflect.Type) spec.Schema {
	t = derefType(t)
	if t == timeType {
		return primitive("string", "date-time")
	}
	if _, custom := reflect.Zero(t).Interface().(openAPITyper); custom {
		return b.refTo(t)
	}
	if t.Kind() == reflect.Struct {
		if t.Name() == "" {
			anonymous := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
			b.addFields(&anonymous, t)
			return anonymous
		}
		return b.refTo(t)
	}
	if b.inlining[t] {
		return spec.Schema{}
	}
	if t.Name() != "" {
		b.inlining[t] = true
		defer delete(b.inlining, t)
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return primitive("string", "byte") // []byte travels base64-encoded
		}
		items := b.decorate(b.schemaOf(t.Elem()), "", mustEnforceDefault(t.Elem(), false), nil)
		return spec.Schema{SchemaProps: spec.SchemaProps{
			Type:  spec.StringOrArray{"array"},
			Items: &spec.SchemaOrArray{Schema: &items},
		}}
	case reflect.Map:
		values := b.decorate(b.schemaOf(t.Elem()), "", mustEnforceDefault(t.Elem(), false), nil)
		return spec.Schema{SchemaProps: spec.SchemaProps{
			Type:                 spec.StringOrArray{"object"},
			AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &values},
		}}
	case reflect.Interface:
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
	}
	if info, ok := scalarTypes[t.Kind()]; ok {
		return primitive(info.typ, info.format)
	}
	b.fail(fmt.Errorf("type %v of kind %v has no OpenAPI form", t, t.Kind()))
	return spec.Schema{}
}

func gvkValue(gvk schema.GroupVersionKind) map[string]string {
	return map[string]string{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}
