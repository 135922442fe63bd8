package openapi

import (
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// documents are the built OpenAPI documents before serialisation.
type documents struct {
	v2 *spec.Swagger
	v3 map[string]*spec3.OpenAPI // keyed by gvPath: "api/v1", "apis/apps/v1"
}

// buildDocuments describes resources in both dialects.
func buildDocuments(resources []Resource) (*documents, error) {
	gvks, err := kindsOf(resources)
	if err != nil {
		return nil, err
	}
	byGV := map[schema.GroupVersion][]*Resource{}
	seen := map[schema.GroupVersionResource]bool{}
	for i := range resources {
		r := &resources[i]
		gvr := r.groupVersion().WithResource(r.Resource)
		if seen[gvr] {
			return nil, fmt.Errorf("%w %q: listed twice", errInvalidResource, gvr.String())
		}
		seen[gvr] = true
		byGV[r.groupVersion()] = append(byGV[r.groupVersion()], r)
	}

	docs := &documents{v3: map[string]*spec3.OpenAPI{}}
	v3Models := newModelBuilder(openAPI3, gvks)
	v2Writer := newV2Writer(newModelBuilder(swagger2, gvks))
	order := make([]schema.GroupVersion, 0, len(byGV))
	for gv := range byGV {
		order = append(order, gv)
	}
	sort.Slice(order, func(i, j int) bool { return gvPath(order[i]) < gvPath(order[j]) })
	for _, gv := range order {
		served := byGV[gv]
		v3Writer := newV3Writer(v3Models)
		routes := []route{groupVersionRoutes(gv)}
		for _, r := range served {
			routes = append(routes, resourceRoutes(r)...)
		}
		for _, rt := range routes {
			if err := v3Writer.add(rt); err != nil {
				return nil, fmt.Errorf("build openapi v3 for %s: %w", gv, err)
			}
			if err := v2Writer.add(rt); err != nil {
				return nil, fmt.Errorf("build openapi v2 for %s: %w", gv, err)
			}
		}
		doc, err := v3Writer.document()
		if err != nil {
			return nil, fmt.Errorf("build openapi v3 for %s: %w", gv, err)
		}
		docs.v3[gvPath(gv)] = doc
	}
	if docs.v2, err = v2Writer.document(); err != nil {
		return nil, fmt.Errorf("build openapi v2: %w", err)
	}
	return docs, nil
}

// kindsOf maps each Go type to the kinds it is served as, which become the
// x-kubernetes-group-version-kind list on its definition. kubectl finds a
// kind's schema by this list, so one kind must not name two types.
func kindsOf(resources []Resource) (map[reflect.Type][]schema.GroupVersionKind, error) {
	gvks := map[reflect.Type][]schema.GroupVersionKind{}
	owner := map[schema.GroupVersionKind]reflect.Type{}
	add := func(t reflect.Type, gvk schema.GroupVersionKind) error {
		if other, ok := owner[gvk]; ok {
			if other != t {
				return fmt.Errorf("%w: kind %s is served as both %v and %v", errInvalidResource, gvk, other, t)
			}
			return nil
		}
		owner[gvk] = t
		gvks[t] = append(gvks[t], gvk)
		return nil
	}
	groupVersions := map[schema.GroupVersion]bool{}
	for i := range resources {
		r := &resources[i]
		if err := r.validate(); err != nil {
			return nil, err
		}
		groupVersions[r.groupVersion()] = true
		if err := add(r.Type, r.gvk()); err != nil {
			return nil, err
		}
		if r.ListType != nil {
			if err := add(r.ListType, r.groupVersion().WithKind(r.ListKind)); err != nil {
				return nil, err
			}
		}
		for _, sub := range r.Subresources {
			if kind := subresourceKinds[sub]; kind.typ != nil {
				if err := add(kind.typ, kind.gvk); err != nil {
					return nil, err
				}
			}
		}
	}
	// Like kube-apiserver, the meta kinds every group-version speaks are
	// registered in the core group and in each served group-version.
	served := []schema.GroupVersion{{Version: "v1"}}
	for gv := range groupVersions {
		if gv.Group != "" {
			served = append(served, gv)
		}
	}
	sort.Slice(served[1:], func(i, j int) bool { return served[1+i].String() < served[1+j].String() })
	for _, gv := range served {
		for _, meta := range []struct {
			kind string
			typ  reflect.Type
		}{{"DeleteOptions", deleteOptionsType}, {"WatchEvent", watchEventType}} {
			if err := add(meta.typ, gv.WithKind(meta.kind)); err != nil {
				return nil, err
			}
		}
	}
	if err := add(statusType, schema.GroupVersion{Version: "v1"}.WithKind("Status")); err != nil {
		return nil, err
	}
	return gvks, nil
}
