package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// The Kubernetes version whose API klab serves (the k8s.io/api it is
// built with); kubectl compares it with its own.
const (
	kubeMajor      = "1"
	kubeMinor      = "37"
	kubeGitVersion = "v1.37.2+klab"
)

// serveNonResource serves discovery, version, health, OpenAPI and debug.
func (s *Server) serveNonResource(w http.ResponseWriter, r *http.Request, info requestInfo) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	parts := splitPath(path)
	switch {
	case path == "/version":
		componentbase.WriteJSON(w, http.StatusOK, version.Info{
			Major: kubeMajor, Minor: kubeMinor, GitVersion: kubeGitVersion, GitTreeState: "clean",
			GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
		})
	case path == "/healthz" || path == "/livez" || path == "/readyz" || strings.HasPrefix(path, "/healthz/") || strings.HasPrefix(path, "/livez/") || strings.HasPrefix(path, "/readyz/"):
		s.health(w, r, parts[0])
	case path == "/api":
		componentbase.WriteJSON(w, http.StatusOK, &metav1.APIVersions{
			TypeMeta:                   metav1.TypeMeta{Kind: "APIVersions"},
			Versions:                   []string{"v1"},
			ServerAddressByClientCIDRs: s.serverAddresses(r),
		})
	case path == "/apis":
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, g := range s.groups() {
			list.Groups = append(list.Groups, g)
		}
		componentbase.WriteJSON(w, http.StatusOK, list)
	case len(parts) == 2 && parts[0] == "apis":
		for _, g := range s.groups() {
			if g.Name == parts[1] {
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				componentbase.WriteJSON(w, http.StatusOK, &g)
				return
			}
		}
		writeError(w, r, notFoundResource())
	case len(parts) == 2 && parts[0] == "api":
		s.resourceList(w, r, schema.GroupVersion{Version: parts[1]})
	case len(parts) == 3 && parts[0] == "apis":
		s.resourceList(w, r, schema.GroupVersion{Group: parts[1], Version: parts[2]})
	case strings.HasPrefix(path, "/openapi/"):
		s.openapi.ServeHTTP(w, r)
	case strings.HasPrefix(path, "/debug/klab/"):
		s.serveDebug(w, r)
	default:
		writeError(w, r, notFoundResource())
	}
}

// groups returns the named API groups with their versions, the preferred
// one first (autoscaling serves v2, preferred, and v1, as upstream).
func (s *Server) groups() []metav1.APIGroup {
	var out []metav1.APIGroup
	for _, gv := range s.reg.GroupVersions() {
		if gv.Group == "" {
			continue
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		if n := len(out); n > 0 && out[n-1].Name == gv.Group {
			out[n-1].Versions = append(out[n-1].Versions, v)
			continue
		}
		out = append(out, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return out
}

// resourceList is the APIResourceList of one group version: every
// resource and subresource with its verbs, as `kubectl api-resources`
// reads it.
func (s *Server) resourceList(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	resources := s.reg.InGroupVersion(gv)
	if len(resources) == 0 {
		writeError(w, r, notFoundResource())
		return
	}
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, res := range resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: res.Resource, SingularName: res.SingularName, Namespaced: res.Namespaced, Kind: res.Kind,
			Verbs: res.Verbs, ShortNames: res.ShortNames, Categories: res.Categories,
		})
		for _, sub := range res.Subresources {
			ar := metav1.APIResource{Name: res.Resource + "/" + sub, Namespaced: res.Namespaced, Kind: res.Kind}
			switch sub {
			case registry.SubStatus:
				ar.Verbs = []string{registry.VerbGet, registry.VerbPatch, registry.VerbUpdate}
			case registry.SubScale:
				ar.Group, ar.Version, ar.Kind = "autoscaling", "v1", "Scale"
				ar.Verbs = []string{registry.VerbGet, registry.VerbPatch, registry.VerbUpdate}
			case registry.SubBinding:
				ar.Kind = "Binding"
				ar.Verbs = []string{registry.VerbCreate}
			case registry.SubLog:
				ar.Verbs = []string{registry.VerbGet}
			case registry.SubFinalize:
				ar.Verbs = []string{registry.VerbUpdate}
			case registry.SubEviction:
				ar.Group, ar.Version, ar.Kind = "policy", "v1", "Eviction"
				ar.Verbs = []string{registry.VerbCreate}
			case registry.SubExec, registry.SubAttach, registry.SubPortForward:
				ar.Kind = connectKinds[sub]
				ar.Verbs = []string{registry.VerbCreate, registry.VerbGet}
			case registry.SubProxy:
				ar.Kind = res.Kind + "ProxyOptions"
				ar.Verbs = []string{registry.VerbCreate, registry.VerbDelete, registry.VerbGet, registry.VerbPatch, registry.VerbUpdate}
			}
			list.APIResources = append(list.APIResources, ar)
		}
	}
	componentbase.WriteJSON(w, http.StatusOK, list)
}

func (s *Server) serverAddresses(r *http.Request) []metav1.ServerAddressByClientCIDR {
	addr := s.cfg.AdvertiseAddress
	if addr == "" {
		addr = r.Host
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, fmt.Sprint(DefaultSecurePort))
	}
	return []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: addr}}
}

// health answers /healthz, /livez and /readyz. Readiness includes reaching
// etcd; ?verbose lists the checks as upstream does.
func (s *Server) health(w http.ResponseWriter, r *http.Request, which string) {
	checks := []struct {
		name string
		err  error
	}{{"ping", nil}}
	if which != "livez" {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		_, err := s.store.CurrentRevision(ctx)
		cancel()
		checks = append(checks, struct {
			name string
			err  error
		}{"etcd", err})
	}
	failed := false
	var b strings.Builder
	for _, c := range checks {
		if c.err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", c.name)
		} else {
			fmt.Fprintf(&b, "[+]%s ok\n", c.name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		fmt.Fprintf(&b, "%s check failed\n", which)
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(b.String()))
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(&b, "%s check passed\n", which)
		w.Write([]byte(b.String()))
		return
	}
	w.Write([]byte("ok"))
}

func invalidReplicas(n int32) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), n, "must be greater than or equal to 0")}
}

func invalidField(path string, value any, detail string) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath(path), value, detail)}
}

func requiredField(path string) field.ErrorList {
	return field.ErrorList{field.Required(field.NewPath(path), "")}
}
