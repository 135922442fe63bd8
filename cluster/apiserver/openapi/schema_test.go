package openapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// schemaFragment returns the JSON of a definition, or of one property of
// it, with descriptions stripped: the shapes below are upstream's, the
// prose comes from k8s.io/api and is not under test.
func schemaFragment(t *testing.T, doc any, section, name, property string) string {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var tree map[string]any
	if err := json.Unmarshal(data, &tree); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	var node any = tree
	for _, key := range strings.Split(section, "/") {
		node = node.(map[string]any)[key]
	}
	node = node.(map[string]any)[name]
	if node == nil {
		t.Fatalf("no definition %s", name)
	}
	if property != "" {
		node = node.(map[string]any)["properties"].(map[string]any)[property]
		if node == nil {
			t.Fatalf("definition %s has no property %s", name, property)
		}
	}
	out, _ := json.Marshal(stripDescriptions(node))
	return string(out)
}

func stripDescriptions(node any) any {
	switch value := node.(type) {
	case map[string]any:
		delete(value, "description")
		for key, child := range value {
			value[key] = stripDescriptions(child)
		}
	case []any:
		for i, child := range value {
			value[i] = stripDescriptions(child)
		}
	}
	return node
}

func normalJSON(t *testing.T, text string) string {
	t.Helper()
	var value any
	if err := json.Unmarshal([]byte(text), &value); err != nil {
		t.Fatalf("bad want %s: %v", text, err)
	}
	out, _ := json.Marshal(value)
	return string(out)
}

// TestSchemaShapes pins the schemas whose shape kubectl depends on to what
// kube-apiserver publishes for them.
func TestSchemaShapes(t *testing.T) {
	docs, err := buildDocuments(testResources())
	if err != nil {
		t.Fatalf("buildDocuments: %v", err)
	}
	const (
		meta = "io.k8s.apimachinery.pkg.apis.meta.v1."
		core = "io.k8s.api.core.v1."
		apps = "io.k8s.api.apps.v1."
	)
	v3 := docs.v3["apis/apps/v1"]
	v3Core := docs.v3["api/v1"]
	tests := []struct {
		name              string
		doc               any
		section           string
		definition, field string
		want              string
	}{
		{"v3 IntOrString is integer or string", v3, "components/schemas", "io.k8s.apimachinery.pkg.util.intstr.IntOrString", "",
			`{"format":"int-or-string","oneOf":[{"type":"integer"},{"type":"string"}]}`},
		{"v3 Quantity is string or number", v3, "components/schemas", "io.k8s.apimachinery.pkg.api.resource.Quantity", "",
			`{"oneOf":[{"type":"string"},{"type":"number"}]}`},
		{"v3 Time is a date-time string", v3, "components/schemas", meta + "Time", "", `{"type":"string","format":"date-time"}`},
		{"v3 RawExtension is any object", v3Core, "components/schemas", "io.k8s.apimachinery.pkg.runtime.RawExtension", "", `{"type":"object"}`},
		{"v3 FieldsV1 is any object", v3, "components/schemas", meta + "FieldsV1", "", `{"type":"object"}`},
		{"v3 Patch is an empty object", v3, "components/schemas", meta + "Patch", "", `{"type":"object"}`},
		{"v3 struct field: allOf ref with default and patch strategy", v3, "components/schemas", apps + "DeploymentSpec", "strategy",
			`{"allOf":[{"$ref":"#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}],"default":{},"x-kubernetes-patch-strategy":"retainKeys"}`},
		{"v3 pointer field: no default", v3, "components/schemas", apps + "DeploymentSpec", "selector",
			`{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"}]}`},
		{"v3 merge list keyed by name", v3, "components/schemas", core + "PodSpec", "containers",
			`{"type":"array","items":{"default":{},"allOf":[{"$ref":"#/components/schemas/io.k8s.api.core.v1.Container"}]},
			"x-kubernetes-patch-merge-key":"name","x-kubernetes-patch-strategy":"merge",
			"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"]}`},
		{"v3 merge list of strings", v3, "components/schemas", meta + "ObjectMeta", "finalizers",
			`{"type":"array","items":{"type":"string","default":""},"x-kubernetes-patch-strategy":"merge"}`},
		{"v3 string map", v3, "components/schemas", meta + "ObjectMeta", "labels",
			`{"type":"object","additionalProperties":{"type":"string","default":""}}`},
		{"v3 quantity map", v3, "components/schemas", core + "ResourceRequirements", "limits",
			`{"type":"object","additionalProperties":{"default":{},"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}]}}`},
		{"v3 byte map", v3Core, "components/schemas", core + "ConfigMap", "binaryData",
			`{"type":"object","additionalProperties":{"type":"string","format":"byte"}}`},
		{"v3 required int32 with zero default", v3Core, "components/schemas", core + "ServicePort", "port",
			`{"type":"integer","format":"int32","default":0}`},
		{"v3 time field", v3, "components/schemas", meta + "ObjectMeta", "creationTimestamp",
			`{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}],"default":{}}`},
		{"v2 IntOrString is a string", docs.v2, "definitions", "io.k8s.apimachinery.pkg.util.intstr.IntOrString", "",
			`{"type":"string","format":"int-or-string"}`},
		{"v2 Quantity is a string", docs.v2, "definitions", "io.k8s.apimachinery.pkg.api.resource.Quantity", "", `{"type":"string"}`},
		{"v2 ref keeps its extensions beside it", docs.v2, "definitions", apps + "DeploymentSpec", "strategy",
			`{"$ref":"#/definitions/io.k8s.api.apps.v1.DeploymentStrategy","x-kubernetes-patch-strategy":"retainKeys"}`},
		{"v2 list items have no default", docs.v2, "definitions", core + "PodSpec", "containers",
			`{"type":"array","items":{"$ref":"#/definitions/io.k8s.api.core.v1.Container"},
			"x-kubernetes-patch-merge-key":"name","x-kubernetes-patch-strategy":"merge",
			"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schemaFragment(t, tt.doc, tt.section, tt.definition, tt.field)
			if want := normalJSON(t, tt.want); got != want {
				t.Errorf("%s %s:\n got %s\nwant %s", tt.definition, tt.field, got, want)
			}
		})
	}
}

func TestKindsAndRequiredFields(t *testing.T) {
	docs, err := buildDocuments(testResources())
	if err != nil {
		t.Fatalf("buildDocuments: %v", err)
	}
	schemas := docs.v3["apis/apps/v1"].Components.Schemas
	tests := []struct {
		definition   string
		wantKinds    string
		wantRequired []string
	}{
		{"io.k8s.api.apps.v1.Deployment", `[{"group":"apps","kind":"Deployment","version":"v1"}]`, nil},
		{"io.k8s.api.apps.v1.DeploymentList", `[{"group":"apps","kind":"DeploymentList","version":"v1"}]`, []string{"items"}},
		{"io.k8s.api.autoscaling.v1.Scale", `[{"group":"autoscaling","kind":"Scale","version":"v1"}]`, nil},
		{"io.k8s.api.apps.v1.DeploymentSpec", `null`, []string{"selector", "template"}},
		{"io.k8s.api.core.v1.Container", `null`, []string{"name"}},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.Status", `[{"group":"","kind":"Status","version":"v1"}]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.definition, func(t *testing.T) {
			def, ok := schemas[tt.definition]
			if !ok {
				t.Fatalf("apps/v1 document lacks %s", tt.definition)
			}
			kinds, _ := json.Marshal(def.Extensions[extGVK])
			if string(kinds) != tt.wantKinds {
				t.Errorf("kinds = %s, want %s", kinds, tt.wantKinds)
			}
			if !reflect.DeepEqual(def.Required, tt.wantRequired) {
				t.Errorf("required = %v, want %v", def.Required, tt.wantRequired)
			}
		})
	}
}

// The types below exercise what k8s.io/api has little of.
type treeNode struct {
	Name     string            `json:"name"`
	Children []treeNode        `json:"children,omitempty"`
	Parent   *treeNode         `json:"parent,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Blobs    map[string][]byte `json:"blobs,omitempty"`
	Extra    any               `json:"extra,omitempty"`
	Point    struct {
		X int32 `json:"x"`
	} `json:"point"`
	*embeddedPart
	Ignored  string `json:"-"`
	internal string
}

type embeddedPart struct {
	Note string `json:"note,omitempty"`
}

func TestRecursiveAndUnusualTypes(t *testing.T) {
	tree := Resource{Group: "example.com", Version: "v1", Resource: "trees", Kind: "Tree",
		Verbs: []string{"get", "patch"}, Type: reflect.TypeFor[treeNode]()}
	docs, err := buildDocuments([]Resource{tree})
	if err != nil {
		t.Fatalf("buildDocuments: %v", err)
	}
	const name = "com.github.klab-dev.klab.cluster.apiserver.openapi.treeNode"
	got := schemaFragment(t, docs.v3["apis/example.com/v1"], "components/schemas", name, "")
	want := normalJSON(t, `{
		"type":"object",
		"required":["name","point"],
		"x-kubernetes-group-version-kind":[{"group":"example.com","kind":"Tree","version":"v1"}],
		"properties":{
			"name":{"type":"string","default":""},
			"children":{"type":"array","items":{"default":{},"allOf":[{"$ref":"#/components/schemas/`+name+`"}]}},
			"parent":{"$ref":"#/components/schemas/`+name+`"},
			"labels":{"type":"object","additionalProperties":{"type":"string","default":""}},
			"blobs":{"type":"object","additionalProperties":{"type":"string","format":"byte"}},
			"extra":{"type":"object"},
			"point":{"type":"object","default":{},"required":["x"],"properties":{"x":{"type":"integer","format":"int32","default":0}}},
			"note":{"type":"string"}
		}}`)
	if got != want {
		t.Errorf("tree schema:\n got %s\nwant %s", got, want)
	}
}

func TestInvalidResources(t *testing.T) {
	pod := resourceOf[corev1.Pod, corev1.PodList]("", "v1", "pods", true)
	with := func(change func(*Resource)) []Resource {
		r := pod
		change(&r)
		return []Resource{r}
	}
	tests := []struct {
		name      string
		resources []Resource
		want      string
	}{
		{"no type", with(func(r *Resource) { r.Type = nil }), "Type is nil"},
		{"type is not a struct", with(func(r *Resource) { r.Type = reflect.TypeFor[string]() }), "is not a struct"},
		{"no kind", with(func(r *Resource) { r.Kind = "" }), "version, resource and kind are required"},
		{"list verb without list type", with(func(r *Resource) { r.ListType = nil }), "list verbs need ListKind and ListType"},
		{"unknown verb", with(func(r *Resource) { r.Verbs = []string{"get", "explode"} }), `unknown verb "explode"`},
		{"unknown subresource", with(func(r *Resource) { r.Subresources = []string{"teleport"} }), `unknown subresource "teleport"`},
		{"listed twice", []Resource{pod, pod}, "listed twice"},
		{"two kinds in one group-version are fine", []Resource{pod, resourceOf[corev1.Service, corev1.ServiceList]("", "v1", "services", true)}, ""},
		{"two types claim a kind", append(with(func(*Resource) {}), func() Resource {
			r := resourceOf[corev1.Service, corev1.ServiceList]("", "v1", "services", true)
			r.Kind = "Pod"
			return r
		}()), "kind /v1, Kind=Pod is served as both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewHandler(tt.resources)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("NewHandler: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewHandler = %v, want an error containing %q", err, tt.want)
			}
			if !errors.Is(err, errInvalidResource) {
				t.Errorf("error %v does not wrap errInvalidResource", err)
			}
		})
	}
}

// BenchmarkNewHandler measures what the API server pays at start-up, and
// what the first `kubectl apply` adds by asking for /openapi/v3, which
// encodes every v3 document.
func BenchmarkNewHandler(b *testing.B) {
	resources := testResources()
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			if _, err := NewHandler(resources); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("build and encode v3", func(b *testing.B) {
		for b.Loop() {
			h, err := NewHandler(resources)
			if err != nil {
				b.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi/v3", nil))
			if rec.Code != http.StatusOK {
				b.Fatalf("GET /openapi/v3 = %d", rec.Code)
			}
		}
	})
}
