package openapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	protomodels "k8s.io/kube-openapi/pkg/util/proto"
	kubectlopenapi "k8s.io/kubectl/pkg/util/openapi"
)

var hashedURL = regexp.MustCompile(`^/openapi/v3/(api/v1|apis/[a-z0-9.]+/v[0-9a-z]+)\?hash=[0-9A-F]{128}$`)

func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range header {
		req.Header.Set(key, value)
	}
	// Redirects are part of what is tested.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp, body
}

func fetchIndex(t *testing.T, f *fixture) openAPIV3Discovery {
	t.Helper()
	resp, body := get(t, f.server.URL+"/openapi/v3", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi/v3 = %d", resp.StatusCode)
	}
	var index openAPIV3Discovery
	if err := json.Unmarshal(body, &index); err != nil {
		t.Fatalf("decode index: %v", err)
	}
	return index
}

func TestV3Index(t *testing.T) {
	f := newFixture(t)
	index := fetchIndex(t, f)
	want := []string{"api/v1", "apis/apps/v1", "apis/autoscaling/v2", "apis/batch/v1", "apis/coordination.k8s.io/v1",
		"apis/discovery.k8s.io/v1", "apis/networking.k8s.io/v1", "apis/policy/v1", "apis/rbac.authorization.k8s.io/v1",
		"apis/scheduling.k8s.io/v1", "apis/storage.k8s.io/v1"}
	if len(index.Paths) != len(want) {
		t.Errorf("index has %d group-versions, want %d: %v", len(index.Paths), len(want), index.Paths)
	}
	for _, key := range want {
		entry, ok := index.Paths[key]
		if !ok {
			t.Errorf("index lacks %s", key)
			continue
		}
		if !hashedURL.MatchString(entry.ServerRelativeURL) {
			t.Errorf("index URL of %s = %q, want /openapi/v3/%s?hash=<128 hex digits>", key, entry.ServerRelativeURL, key)
		}
	}
}

func TestV3Caching(t *testing.T) {
	f := newFixture(t)
	current := fetchIndex(t, f).Paths["apis/apps/v1"].ServerRelativeURL
	resp, _ := get(t, f.server.URL+current, nil)
	etag := resp.Header.Get("ETag")

	tests := []struct {
		name         string
		path         string
		header       map[string]string
		wantStatus   int
		wantCache    string
		wantLocation string
	}{
		{name: "current hash is immutable", path: current, wantStatus: http.StatusOK, wantCache: "public, immutable"},
		{name: "no hash is not cached", path: "/openapi/v3/apis/apps/v1", wantStatus: http.StatusOK},
		{name: "stale hash redirects to the current one", path: "/openapi/v3/apis/apps/v1?hash=0123",
			wantStatus: http.StatusMovedPermanently, wantLocation: current},
		{name: "matching ETag is not modified", path: "/openapi/v3/apis/apps/v1",
			header: map[string]string{"If-None-Match": etag}, wantStatus: http.StatusNotModified},
		{name: "unserved group-version", path: "/openapi/v3/apis/example.com/v1", wantStatus: http.StatusNotFound},
		{name: "not an openapi path", path: "/openapi/v4", wantStatus: http.StatusNotFound},
		{name: "json only for the index", path: "/openapi/v3",
			header: map[string]string{"Accept": "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"}, wantStatus: http.StatusNotAcceptable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := get(t, f.server.URL+tt.path, tt.header)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("GET %s = %d, want %d", tt.path, resp.StatusCode, tt.wantStatus)
			}
			if got := resp.Header.Get("Cache-Control"); got != tt.wantCache {
				t.Errorf("Cache-Control = %q, want %q", got, tt.wantCache)
			}
			if got := resp.Header.Get("Location"); got != tt.wantLocation {
				t.Errorf("Location = %q, want %q", got, tt.wantLocation)
			}
		})
	}
	if _, err := strconv.Unquote(etag); err != nil {
		t.Errorf("ETag %s is not a quoted string", etag)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	f := newFixture(t)
	resp, err := http.Post(f.server.URL+"/openapi/v3", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /openapi/v3 = %d, want 405", resp.StatusCode)
	}
}

// TestDocumentEncodings fetches each document in each encoding a client
// may ask for and decodes it with the matching gnostic model.
func TestDocumentEncodings(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name            string
		path            string
		accept          string
		wantStatus      int
		wantContentType string
		decode          func([]byte) error
	}{
		{"v2 as JSON", "/openapi/v2", "application/json", http.StatusOK, "application/json", decodeJSON},
		{"v2 as protobuf, client-go spelling", "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
			http.StatusOK, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", decodeProto(&openapiv2.Document{})},
		{"v2 as protobuf, new spelling", "/openapi/v2", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
			http.StatusOK, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", decodeProto(&openapiv2.Document{})},
		{"v2 prefers the first acceptable type", "/openapi/v2", "text/html, application/json;q=0.9, */*;q=0.1",
			http.StatusOK, "application/json", decodeJSON},
		{"v2 as HTML is not acceptable", "/openapi/v2", "text/html", http.StatusNotAcceptable, "", nil},
		{"v3 as JSON", "/openapi/v3/api/v1", "application/json", http.StatusOK, "application/json", decodeJSON},
		{"v3 as protobuf", "/openapi/v3/api/v1", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf",
			http.StatusOK, "application/com.github.proto-openapi.spec.v3.v1.0+protobuf", decodeProto(&openapiv3.Document{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, f.server.URL+tt.path, map[string]string{"Accept": tt.accept})
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("GET %s = %d, want %d", tt.path, resp.StatusCode, tt.wantStatus)
			}
			if tt.decode == nil {
				return
			}
			if got := resp.Header.Get("Content-Type"); got != tt.wantContentType {
				t.Errorf("Content-Type = %q, want %q", got, tt.wantContentType)
			}
			if err := tt.decode(body); err != nil {
				t.Errorf("decode: %v", err)
			}
		})
	}
}

func decodeJSON(data []byte) error {
	var doc map[string]any
	return json.Unmarshal(data, &doc)
}

func decodeProto(doc proto.Message) func([]byte) error {
	return func(data []byte) error { return proto.Unmarshal(data, doc) }
}

// TestV2Document reads /openapi/v2 through client-go's discovery client,
// which only takes protobuf, and kubectl's model parser, which rejects
// unresolved references and malformed types.
func TestV2Document(t *testing.T) {
	f := newFixture(t)
	doc, err := f.discovery.OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	definitions := map[string]bool{}
	for _, named := range doc.GetDefinitions().GetAdditionalProperties() {
		definitions[named.GetName()] = true
	}
	for _, name := range []string{"io.k8s.api.core.v1.Pod", "io.k8s.api.apps.v1.Deployment",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
		"io.k8s.api.autoscaling.v1.Scale"} {
		if !definitions[name] {
			t.Errorf("v2 definitions lack %s", name)
		}
	}
	resources, err := kubectlopenapi.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("kubectl cannot parse the v2 document: %v", err)
	}
	for _, r := range testResources() {
		t.Run(r.Kind, func(t *testing.T) {
			kind, ok := resources.LookupResource(r.gvk()).(*protomodels.Kind)
			if !ok {
				t.Fatalf("LookupResource(%v) = %T, want *protomodels.Kind", r.gvk(), resources.LookupResource(r.gvk()))
			}
			if _, ok := kind.Fields["metadata"]; !ok {
				t.Errorf("%s has no metadata field in v2", r.Kind)
			}
		})
	}
	if resources.LookupResource(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}) != nil {
		t.Error("LookupResource found an unserved kind")
	}
}

// TestConcurrentFirstRequests has kubectl-like clients arrive together at
// a fresh handler, whose documents are encoded by the first of them.
func TestConcurrentFirstRequests(t *testing.T) {
	h, err := NewHandler(testResources())
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	paths := []string{"/openapi/v3", "/openapi/v3/apis/apps/v1", "/openapi/v3/api/v1", "/openapi/v3"}
	bodies := make([][]byte, len(paths))
	codes := make([]int, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Go(func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			codes[i], bodies[i] = rec.Code, rec.Body.Bytes()
		})
	}
	wg.Wait()
	for i, path := range paths {
		if codes[i] != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", path, codes[i])
		}
	}
	if !bytes.Equal(bodies[0], bodies[3]) {
		t.Error("two concurrent index requests got different bodies")
	}
}
