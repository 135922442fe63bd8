package openapi

import (
	"encoding/json"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/openapi3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	kubectlopenapi "k8s.io/kubectl/pkg/util/openapi"
)

// v3PatchMeta finds the schema of gvk the way kubectl apply's patcher does:
// the PATCH operation of the kind must accept strategic merge patches, and
// the component whose x-kubernetes-group-version-kind names the kind is
// the root of the lookup.
func v3PatchMeta(t *testing.T, doc *spec3.OpenAPI, gvk schema.GroupVersionKind) strategicpatch.LookupPatchMeta {
	t.Helper()
	acceptsStrategic := false
	for _, path := range doc.Paths.Paths {
		if path.Patch == nil || !hasGVK(path.Patch.Extensions, gvk) {
			continue
		}
		if path.Patch.RequestBody != nil {
			_, acceptsStrategic = path.Patch.RequestBody.Content["application/strategic-merge-patch+json"]
		}
		break
	}
	if !acceptsStrategic {
		t.Fatalf("no PATCH operation for %v accepts application/strategic-merge-patch+json", gvk)
	}
	for _, component := range doc.Components.Schemas {
		var gvks []map[string]string
		if err := component.Extensions.GetObject(extGVK, &gvks); err != nil {
			continue
		}
		for _, candidate := range gvks {
			if candidate["group"] == gvk.Group && candidate["version"] == gvk.Version && candidate["kind"] == gvk.Kind {
				return strategicpatch.PatchMetaFromOpenAPIV3{Schema: component, SchemaList: doc.Components.Schemas}
			}
		}
	}
	t.Fatalf("no component schema carries %v", gvk)
	return nil
}

func hasGVK(extensions spec.Extensions, gvk schema.GroupVersionKind) bool {
	var value map[string]string
	if err := extensions.GetObject(extGVK, &value); err != nil {
		return false
	}
	return value["group"] == gvk.Group && value["version"] == gvk.Version && value["kind"] == gvk.Kind
}

// TestThreeWayMergePatch computes kubectl apply's patch from the served
// schemas, v3 as kubectl does first and v2 as its fallback, and checks it
// against the patch computed from the Go structs (what kubectl uses for
// types compiled into it) and against the patch upstream produces. As
// kubectl apply does by default (--overwrite), conflicts with the live
// object are overwritten.
func TestThreeWayMergePatch(t *testing.T) {
	f := newFixture(t)
	root := openapi3.NewRoot(f.openAPIV3)
	v2Doc, err := f.discovery.OpenAPISchema()
	if err != nil {
		t.Fatalf("fetch openapi v2: %v", err)
	}
	v2Resources, err := kubectlopenapi.NewOpenAPIData(v2Doc)
	if err != nil {
		t.Fatalf("kubectl cannot read the openapi v2 document: %v", err)
	}

	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	service := schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	tests := []struct {
		name     string
		gvk      schema.GroupVersionKind
		goType   any
		original string // last-applied configuration
		modified string // the file being applied
		current  string // the live object
		want     string
	}{
		{
			name:   "containers merge by name: one image edited, one env var added",
			gvk:    deployment,
			goType: appsv1.Deployment{},
			original: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"spec":{"containers":[
				{"name":"nginx","image":"nginx:1.25","env":[{"name":"A","value":"1"}]},
				{"name":"sidecar","image":"busybox:1.36"}]}}}}`,
			modified: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"spec":{"containers":[
				{"name":"nginx","image":"nginx:1.27","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]},
				{"name":"sidecar","image":"busybox:1.36"}]}}}}`,
			current: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","resourceVersion":"7"},"spec":{"replicas":1,"template":{"spec":{"containers":[
				{"name":"nginx","image":"nginx:1.25","imagePullPolicy":"IfNotPresent","env":[{"name":"A","value":"1"}]},
				{"name":"sidecar","image":"busybox:1.36","imagePullPolicy":"IfNotPresent"}]}}},"status":{"replicas":1}}`,
			want: `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"nginx"},{"name":"sidecar"}],` +
				`"containers":[{"$setElementOrder/env":[{"name":"A"},{"name":"B"}],"env":[{"name":"B","value":"2"}],"image":"nginx:1.27","name":"nginx"}]}}}}`,
		},
		{
			name:     "a container removed from the file is deleted by name",
			gvk:      deployment,
			goType:   appsv1.Deployment{},
			original: `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx"},{"name":"sidecar","image":"busybox"}]}}}}`,
			modified: `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx"}]}}}}`,
			current:  `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx"},{"name":"sidecar","image":"busybox"}]}}}}`,
			want:     `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"nginx"}],"containers":[{"$patch":"delete","name":"sidecar"}]}}}}`,
		},
		{
			name:     "strategy keeps only the applied keys (retainKeys)",
			gvk:      deployment,
			goType:   appsv1.Deployment{},
			original: `{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}}}`,
			modified: `{"spec":{"strategy":{"type":"Recreate"}}}`,
			current:  `{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1,"maxUnavailable":"25%"}}}}`,
			want:     `{"spec":{"strategy":{"$retainKeys":["type"],"rollingUpdate":null,"type":"Recreate"}}}`,
		},
		{
			name:     "a volume changing source keeps only the new keys (merge,retainKeys)",
			gvk:      pod,
			goType:   corev1.Pod{},
			original: `{"spec":{"volumes":[{"name":"data","emptyDir":{}}]}}`,
			modified: `{"spec":{"volumes":[{"name":"data","configMap":{"name":"cfg"}}]}}`,
			current:  `{"spec":{"volumes":[{"name":"data","emptyDir":{}}]}}`,
			want:     `{"spec":{"$setElementOrder/volumes":[{"name":"data"}],"volumes":[{"$retainKeys":["configMap","name"],"configMap":{"name":"cfg"},"emptyDir":null,"name":"data"}]}}`,
		},
		{
			name:     "finalizers merge as a set of strings",
			gvk:      pod,
			goType:   corev1.Pod{},
			original: `{"metadata":{"finalizers":["a"]}}`,
			modified: `{"metadata":{"finalizers":["a","b"]}}`,
			current:  `{"metadata":{"finalizers":["a","other"]}}`,
			want:     `{"metadata":{"$setElementOrder/finalizers":["a","b"],"finalizers":["b"]}}`,
		},
		{
			name:     "tolerations have no merge key and are replaced whole",
			gvk:      pod,
			goType:   corev1.Pod{},
			original: `{"spec":{"tolerations":[{"key":"a","operator":"Exists"}]}}`,
			modified: `{"spec":{"tolerations":[{"key":"b","operator":"Exists"}]}}`,
			current:  `{"spec":{"tolerations":[{"key":"a","operator":"Exists"}]}}`,
			want:     `{"spec":{"tolerations":[{"key":"b","operator":"Exists"}]}}`,
		},
		{
			name:     "service ports merge by port",
			gvk:      service,
			goType:   corev1.Service{},
			original: `{"spec":{"ports":[{"port":80,"targetPort":8080}]}}`,
			modified: `{"spec":{"ports":[{"port":80,"targetPort":9090},{"port":443,"targetPort":8443}]}}`,
			current:  `{"spec":{"ports":[{"port":80,"targetPort":8080,"protocol":"TCP"}]}}`,
			want:     `{"spec":{"$setElementOrder/ports":[{"port":80},{"port":443}],"ports":[{"port":80,"targetPort":9090},{"port":443,"targetPort":8443}]}}`,
		},
		{
			name:     "a label removed from the file is deleted",
			gvk:      deployment,
			goType:   appsv1.Deployment{},
			original: `{"metadata":{"labels":{"app":"web","tier":"front"}}}`,
			modified: `{"metadata":{"labels":{"app":"web"}}}`,
			current:  `{"metadata":{"labels":{"app":"web","tier":"front","extra":"x"}}}`,
			want:     `{"metadata":{"labels":{"tier":null}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			original, modified, current := []byte(tt.original), []byte(tt.modified), []byte(tt.current)
			fromStruct, err := strategicpatch.NewPatchMetaFromStruct(tt.goType)
			if err != nil {
				t.Fatalf("patch meta from struct: %v", err)
			}
			structPatch, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, fromStruct, true)
			if err != nil {
				t.Fatalf("patch from struct: %v", err)
			}
			assertJSONEqual(t, "patch from the Go struct", structPatch, tt.want)

			doc, err := root.GVSpec(tt.gvk.GroupVersion())
			if err != nil {
				t.Fatalf("fetch openapi v3 for %v: %v", tt.gvk.GroupVersion(), err)
			}
			v3Patch, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, v3PatchMeta(t, doc, tt.gvk), true)
			if err != nil {
				t.Fatalf("patch from openapi v3: %v", err)
			}
			assertJSONEqual(t, "patch from openapi v3", v3Patch, tt.want)

			if consumes := v2Resources.GetConsumes(tt.gvk, "PATCH"); !slices.Contains(consumes, "application/strategic-merge-patch+json") {
				t.Errorf("openapi v2 PATCH of %v consumes %v, want application/strategic-merge-patch+json", tt.gvk, consumes)
			}
			v2Schema := v2Resources.LookupResource(tt.gvk)
			if v2Schema == nil {
				t.Fatalf("openapi v2 has no schema for %v", tt.gvk)
			}
			v2Patch, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, strategicpatch.NewPatchMetaFromOpenAPI(v2Schema), true)
			if err != nil {
				t.Fatalf("patch from openapi v2: %v", err)
			}
			assertJSONEqual(t, "patch from openapi v2", v2Patch, tt.want)
		})
	}
}

func assertJSONEqual(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var gotValue, wantValue any
	if err := json.Unmarshal(got, &gotValue); err != nil {
		t.Fatalf("%s is not JSON: %v: %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &wantValue); err != nil {
		t.Fatalf("want of %s is not JSON: %v", what, err)
	}
	gotNormal, _ := json.Marshal(gotValue)
	wantNormal, _ := json.Marshal(wantValue)
	if string(gotNormal) != string(wantNormal) {
		t.Errorf("%s:\n got %s\nwant %s", what, gotNormal, wantNormal)
	}
}
