package lessons

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// servedResources are the resources klab's API server serves, which an
// object check may name.
var servedResources = registry.New().All()

// lookupResource finds a resource as kubectl get takes it: its plural
// (deployments), singular (deployment), short name (deploy) or kind
// (Deployment), optionally with its group (deployments.apps). The core
// group comes first, so events are core/v1 Events.
func lookupResource(name string) (*registry.Resource, bool) {
	res, group, _ := strings.Cut(name, ".")
	lower := strings.ToLower(res)
	for _, r := range servedResources {
		if r.Virtual || group != "" && r.Group != group {
			continue
		}
		if r.Resource == lower || r.SingularName == lower || strings.EqualFold(r.Kind, res) || slices.Contains(r.ShortNames, lower) {
			return r, true
		}
	}
	return nil, false
}

// resourceNames lists the resources an object check may name, for an
// error message.
func resourceNames() string {
	var names []string
	for _, r := range servedResources {
		if !r.Virtual && !slices.Contains(names, r.Resource) {
			names = append(names, r.Resource)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// The resources the typed checks read.
var (
	nodesResource  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	leasesResource = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
)

// objectsOf returns the observed objects of a resource, sorted by
// namespace/name, so that reasons read the same each time.
func (w *world) objectsOf(r schema.GroupResource) []ObjectObserved {
	byName := w.objects[r]
	keys := make([]string, 0, len(byName))
	for k := range byName {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]ObjectObserved, len(keys))
	for i, k := range keys {
		out[i] = byName[k]
	}
	return out
}

// nested returns the value at a path of fields in an unstructured object.
func nested(obj map[string]any, path ...string) (any, bool) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, cur != nil
}

// nestedString returns the string at a path, "" if there is none.
func nestedString(obj map[string]any, path ...string) string {
	v, _ := nested(obj, path...)
	s, _ := v.(string)
	return s
}

// nestedList returns the list of objects at a path.
func nestedList(obj map[string]any, path ...string) []map[string]any {
	v, _ := nested(obj, path...)
	items, _ := v.([]any)
	var out []map[string]any
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// objectLabels returns metadata.labels.
func objectLabels(obj map[string]any) map[string]string {
	v, _ := nested(obj, "metadata", "labels")
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func sortStrings(s []string) { slices.Sort(s) }
