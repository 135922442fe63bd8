package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// requestInfo is what a request's method and path say about it, as
// upstream's RequestInfoFactory reads them:
//
//	/api/v1/namespaces/{namespace}/{resource}/{name}/{subresource}
//	/apis/{group}/{version}/{resource}/{name}
//
// Anything else (discovery, health, OpenAPI) is a non-resource request.
type requestInfo struct {
	resourceRequest bool
	path            string
	verb            string // get list watch create update patch delete deletecollection; for non-resource requests the lower-case method
	gv              schema.GroupVersion
	resource        string
	subresource     string
	namespace       string
	name            string
}

func parseRequestInfo(r *http.Request) requestInfo {
	info := requestInfo{path: r.URL.Path, verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.gv = schema.GroupVersion{Version: parts[1]}
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.gv = schema.GroupVersion{Group: parts[1], Version: parts[2]}
		parts = parts[3:]
	default:
		return info
	}
	info.resourceRequest = true
	// namespaces/{ns}/{resource}... addresses a namespaced resource; the
	// namespaces resource itself is namespaces[/{name}[/status|finalize]].
	if parts[0] == "namespaces" && len(parts) > 1 {
		info.namespace = parts[1]
		if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
			parts = parts[2:]
		}
	}
	if len(parts) > 0 {
		info.resource = parts[0]
	}
	if len(parts) > 1 {
		info.name = parts[1]
	}
	if len(parts) > 2 {
		info.subresource = parts[2]
	}
	// Only a proxy subresource goes deeper: the rest is the path to pass
	// on (pods/web/proxy/healthz).
	if len(parts) > 3 && info.subresource != registry.SubProxy {
		info.resourceRequest = false
		return info
	}

	watching := isTrue(r.URL.Query().Get("watch"))
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case info.name != "":
			info.verb = registry.VerbGet
		case watching:
			info.verb = registry.VerbWatch
		default:
			info.verb = registry.VerbList
		}
	case http.MethodPost:
		info.verb = registry.VerbCreate
	case http.MethodPut:
		info.verb = registry.VerbUpdate
	case http.MethodPatch:
		info.verb = registry.VerbPatch
	case http.MethodDelete:
		if info.name != "" {
			info.verb = registry.VerbDelete
		} else {
			info.verb = registry.VerbDeleteCollection
		}
	}
	return info
}

// gvr returns the request's group, version and resource.
func (i requestInfo) gvr() schema.GroupVersionResource { return i.gv.WithResource(i.resource) }

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func isTrue(s string) bool { return s == "true" || s == "1" }
