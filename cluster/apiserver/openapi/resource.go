package openapi

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource describes one served resource.
type Resource struct {
	Group, Version, Resource, Kind string // e.g. "apps","v1","deployments","Deployment"; core group is ""
	ListKind                       string
	Namespaced                     bool
	Verbs                          []string     // subset of get list watch create update patch delete deletecollection
	Subresources                   []string     // e.g. "status", "scale", "binding", "log"
	Type                           reflect.Type // the struct type, e.g. reflect.TypeOf(corev1.Pod{})
	ListType                       reflect.Type
}

// knownVerbs are the verbs a Resource may list, as in API discovery.
var knownVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// errInvalidResource is wrapped by every error NewHandler returns for a
// Resource it cannot describe.
var errInvalidResource = errors.New("invalid resource")

func (r *Resource) groupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

func (r *Resource) gvk() schema.GroupVersionKind {
	return r.groupVersion().WithKind(r.Kind)
}

func (r *Resource) hasVerb(verb string) bool {
	return slices.Contains(r.Verbs, verb)
}

// validate reports the first problem that would make the documents lie
// about the resource.
func (r *Resource) validate() error {
	id := r.Resource + "." + r.Group
	switch {
	case r.Version == "" || r.Resource == "" || r.Kind == "":
		return fmt.Errorf("%w %q: version, resource and kind are required", errInvalidResource, id)
	case r.Type == nil:
		return fmt.Errorf("%w %q: Type is nil", errInvalidResource, id)
	case r.Type.Kind() != reflect.Struct:
		return fmt.Errorf("%w %q: Type %v is not a struct", errInvalidResource, id, r.Type)
	}
	if r.hasVerb("list") || r.hasVerb("watch") || r.hasVerb("deletecollection") {
		if r.ListType == nil || r.ListKind == "" {
			return fmt.Errorf("%w %q: list verbs need ListKind and ListType", errInvalidResource, id)
		}
	}
	if r.ListType != nil && r.ListType.Kind() != reflect.Struct {
		return fmt.Errorf("%w %q: ListType %v is not a struct", errInvalidResource, id, r.ListType)
	}
	for _, verb := range r.Verbs {
		if !slices.Contains(knownVerbs, verb) {
			return fmt.Errorf("%w %q: unknown verb %q", errInvalidResource, id, verb)
		}
	}
	for _, sub := range r.Subresources {
		if _, ok := subresourceKinds[sub]; !ok {
			return fmt.Errorf("%w %q: unknown subresource %q", errInvalidResource, id, sub)
		}
	}
	return nil
}

// gvPath is the key of a group-version in the /openapi/v3 index and the
// prefix of its API paths without the leading slash: "api/v1",
// "apis/apps/v1".
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}
