package openapi

import (
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// refsOf lists the definition names a schema points at, directly.
func refsOf(s *spec.Schema, prefix string, out []string) []string {
	if ref := s.Ref.String(); ref != "" {
		out = append(out, strings.TrimPrefix(ref, prefix))
	}
	for _, sub := range s.AllOf {
		out = refsOf(&sub, prefix, out)
	}
	for _, sub := range s.OneOf {
		out = refsOf(&sub, prefix, out)
	}
	for _, sub := range s.Properties {
		out = refsOf(&sub, prefix, out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		out = refsOf(s.Items.Schema, prefix, out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out = refsOf(s.AdditionalProperties.Schema, prefix, out)
	}
	return out
}

// closure returns the definitions reachable from roots, which is what one
// group-version document must carry.
func (b *modelBuilder) closure(roots []string) map[string]*spec.Schema {
	out := map[string]*spec.Schema{}
	prefix := b.refPrefix()
	for len(roots) > 0 {
		name := roots[len(roots)-1]
		roots = roots[:len(roots)-1]
		if _, done := out[name]; done {
			continue
		}
		def, ok := b.defs[name]
		if !ok {
			continue
		}
		out[name] = def
		roots = refsOf(def, prefix, roots)
	}
	return out
}
