package openapi

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi/cached"
	"k8s.io/client-go/rest"
)

// fixture is the handler behind a real HTTP server, with the clients
// kubectl builds against it: client-go's discovery client (which fetches
// /openapi/v2 as protobuf), its OpenAPI v3 client wrapped in the memory
// cache as kubectl's factory does, and a dynamic client.
type fixture struct {
	server    *httptest.Server
	discovery *discovery.DiscoveryClient
	openAPIV3 openapi.Client
	dynamic   dynamic.Interface
}

// sharedHandler is built once for the package's tests: building and
// encoding take a noticeable fraction of a second.
var sharedHandler = sync.OnceValues(func() (http.Handler, error) {
	return NewHandler(testResources())
})

func newFixture(t *testing.T) *fixture {
	t.Helper()
	handler, err := sharedHandler()
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	config := &rest.Config{Host: server.URL}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		t.Fatalf("discovery client: %v", err)
	}
	dynamicClient, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	return &fixture{
		server:    server,
		discovery: discoveryClient,
		openAPIV3: cached.NewClient(discoveryClient.OpenAPIV3()),
		dynamic:   dynamicClient,
	}
}
