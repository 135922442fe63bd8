package openapi

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
)

// TestQueryParamVerifier runs cli-runtime's verifiers, the ones kubectl
// asks before it sends fieldValidation=Strict or dryRun, against the served
// documents: v3 first, v2 as kubectl's fallback.
func TestQueryParamVerifier(t *testing.T) {
	f := newFixture(t)
	// cli-runtime no longer names dryRun, but the verifier checks any parameter.
	params := []resource.VerifiableQueryParam{resource.QueryParamFieldValidation, "dryRun"}
	tests := []struct {
		name      string
		gvk       schema.GroupVersionKind
		supported bool
	}{
		{"Pod", schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, true},
		{"Service", schema.GroupVersionKind{Version: "v1", Kind: "Service"}, true},
		{"ConfigMap", schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, true},
		{"cluster-scoped Namespace", schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, true},
		{"cluster-scoped Node", schema.GroupVersionKind{Version: "v1", Kind: "Node"}, true},
		{"Deployment", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, true},
		{"Job", schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, true},
		{"ClusterRole in a dotted group", schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, true},
		{"unknown group", schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, false},
		{"unknown kind in a served group", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Widget"}, false},
		{"v1 List is never patched", schema.GroupVersionKind{Version: "v1", Kind: "List"}, false},
	}
	for _, param := range params {
		v3 := resource.NewQueryParamVerifierV3(f.dynamic, f.openAPIV3, param)
		v2 := resource.NewQueryParamVerifier(f.dynamic, f.discovery, param)
		for _, tt := range tests {
			t.Run(string(param)+"/"+tt.name, func(t *testing.T) {
				err := v3.HasSupport(tt.gvk)
				if tt.supported && err != nil {
					t.Errorf("v3 HasSupport(%v) = %v, want nil", tt.gvk, err)
				}
				if !tt.supported && err == nil {
					t.Errorf("v3 HasSupport(%v) = nil, want an error", tt.gvk)
				}
				err = v2.HasSupport(tt.gvk)
				if tt.supported && err != nil {
					t.Errorf("v2 HasSupport(%v) = %v, want nil", tt.gvk, err)
				}
				if !tt.supported && err == nil {
					t.Errorf("v2 HasSupport(%v) = nil, want an error", tt.gvk)
				}
			})
		}
	}
}

// TestQueryParamVerifierUnknownGroupIsUnsupported checks the exact error
// kubectl turns into "falling back to client-side validation" rather than
// a failure.
func TestQueryParamVerifierUnknownGroupIsUnsupported(t *testing.T) {
	f := newFixture(t)
	v3 := resource.NewQueryParamVerifierV3(f.dynamic, f.openAPIV3, resource.QueryParamFieldValidation)
	err := v3.HasSupport(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	if !resource.IsParamUnsupportedError(err) {
		t.Errorf("HasSupport for an unserved group = %v, want a ParamUnsupportedError", err)
	}
}
