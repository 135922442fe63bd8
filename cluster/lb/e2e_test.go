package lb

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/pki"
)

// TestThroughBalancerWithClusterPKI puts the pieces together as a cluster
// does: API servers serving the cluster's certificate and checking tokens,
// the balancer in front with the /readyz check, and a client configured
// from the kubeconfig that points at the balancer. The client verifies the
// API server's certificate through the balancer, so TLS really passed
// through.
func TestThroughBalancerWithClusterPKI(t *testing.T) {
	dir := t.TempDir()
	p, err := pki.Ensure(dir, nil, []string{"master-1", "master-2"})
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig, err := p.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.LoadTokenFile(dir + "/" + pki.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	authz := auth.NewAuthorizerFor(auth.DefaultPolicy()...)

	var backends []string
	for i := range 2 {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", tlsConfig)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: miniAPIServer(fmt.Sprintf("master-%d", i+1), authn, authz)}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		backends = append(backends, ln.Addr().String())
	}
	lb, err := Start(t.Context(), Config{
		Listen: "127.0.0.1:0", Backends: backends, Health: HTTPSHealth(p.CAPEM),
		Interval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Stop()

	do := func(user, method string) (int, string) {
		t.Helper()
		var rc *rest.Config
		if user == "" {
			rc = &rest.Config{Host: "https://" + lb.Addr(), TLSClientConfig: rest.TLSClientConfig{CAData: p.CAPEM}}
		} else if rc, err = p.RESTConfig("demo", "https://"+lb.Addr(), user); err != nil {
			t.Fatal(err)
		}
		client, err := rest.HTTPClientFor(rc)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(t.Context(), method, "https://"+lb.Addr()+"/api/v1/namespaces/default/pods", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", user, method, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	tests := []struct {
		name, user, method string
		wantCode           int
		wantBody           string
	}{
		{"admin creates", auth.AdminUser, http.MethodPost, http.StatusCreated, "created by kubernetes-admin"},
		{"viewer lists", auth.ViewerUser, http.MethodGet, http.StatusOK, "listed for klab-viewer"},
		{"viewer creates", auth.ViewerUser, http.MethodPost, http.StatusForbidden,
			`User "klab-viewer" cannot create resource "pods" in API group "" in the namespace "default"`},
		{"no token", "", http.MethodGet, http.StatusUnauthorized, "Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(tt.user, tt.method)
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Errorf("got %d %q, want %d with %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}

	// The health check passes on the cluster's own certificate: both
	// backends have been checked and neither check ever failed.
	waitStatus(t, lb, "both backends checked", func(s []BackendStatus) bool {
		return !s[0].LastCheck.IsZero() && !s[1].LastCheck.IsZero()
	})
	for _, s := range lb.Status() {
		if !s.Healthy || s.LastError != "" {
			t.Errorf("%s: healthy %v, last error %q", s.Backend, s.Healthy, s.LastError)
		}
	}
}

// miniAPIServer does what the API server does before it serves anything:
// authenticate (401), then authorize (403), for the pods of namespace
// default only.
func miniAPIServer(name string, authn *auth.TokenAuthenticator, authz *auth.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := authn.AuthenticateRequest(r)
		if !ok {
			if _, hasToken := auth.BearerToken(r); hasToken || r.URL.Path != "/readyz" {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			user = auth.Anonymous
		}
		attrs := auth.Attributes{User: user, Verb: strings.ToLower(r.Method), Path: r.URL.Path}
		if r.URL.Path == "/api/v1/namespaces/default/pods" {
			verb := map[string]string{http.MethodGet: "list", http.MethodPost: "create"}[r.Method]
			attrs = auth.Attributes{User: user, Verb: verb, APIVersion: "v1", Resource: "pods", Namespace: "default", ResourceRequest: true}
		}
		if d, _ := authz.Authorize(attrs); d != auth.DecisionAllow {
			http.Error(w, auth.ForbiddenMessage(attrs), http.StatusForbidden)
			return
		}
		switch {
		case r.URL.Path == "/readyz":
			io.WriteString(w, "ok")
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "created by %s on %s", user.Name, name)
		default:
			fmt.Fprintf(w, "listed for %s on %s", user.Name, name)
		}
	})
}
