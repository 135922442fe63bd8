// Package registry describes the resources klab's API server serves: for
// each one its group, version and kind, whether it lives in a namespace, the
// verbs and subresources it supports, its short names and categories (what
// `kubectl api-resources` shows), where it is kept in etcd, and which fields
// a field selector may name.
//
// It plays the part of kube-apiserver's per-resource REST storage
// definitions (pkg/registry/<group>/<resource>/storage), reduced to data:
// the generic store in package storage and the handlers in package apiserver
// do the same thing for every resource, guided by this table.
package registry

import (
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// The resource metrics types are not in client-go's scheme; the API
// server serves them built in, so they join it.
func init() {
	utilruntime.Must(metricsv1beta1.AddToScheme(scheme.Scheme))
}

// The verbs a resource can support, with their Kubernetes names.
const (
	VerbGet              = "get"
	VerbList             = "list"
	VerbWatch            = "watch"
	VerbCreate           = "create"
	VerbUpdate           = "update"
	VerbPatch            = "patch"
	VerbDelete           = "delete"
	VerbDeleteCollection = "deletecollection"
)

// Subresource names.
const (
	SubStatus  = "status"
	SubScale   = "scale"
	SubBinding = "binding"
	SubLog     = "log"
	// SubToken is serviceaccounts/token, the TokenRequest API.
	SubToken = "token"
	// SubApproval is certificatesigningrequests/approval, where a CSR is
	// approved or denied.
	SubApproval = "approval"
	// SubFinalize is namespaces/finalize: the namespace controller removes
	// its spec finalizer through it once a namespace is empty.
	SubFinalize = "finalize"
	// SubEviction is pods/eviction: a delete that first asks the pod's
	// PodDisruptionBudget (policy/v1 Eviction), as kubectl drain uses it.
	SubEviction = "eviction"
	// The connect subresources stream to the kubelet or proxy to a pod,
	// service or node rather than read or write the object.
	SubExec        = "exec"
	SubAttach      = "attach"
	SubPortForward = "portforward"
	SubProxy       = "proxy"
)

var (
	allVerbs      = []string{VerbCreate, VerbDelete, VerbDeleteCollection, VerbGet, VerbList, VerbPatch, VerbUpdate, VerbWatch}
	createOnly    = []string{VerbCreate}
	getList       = []string{VerbGet, VerbList}
	namespaceVerb = []string{VerbCreate, VerbDelete, VerbGet, VerbList, VerbPatch, VerbUpdate, VerbWatch}
)

// Resource describes one served resource.
type Resource struct {
	// GroupVersionResource is the resource's address in the API
	// ("apps", "v1", "deployments").
	schema.GroupVersionResource
	// Kind and ListKind are the object and list kinds ("Deployment",
	// "DeploymentList"); SingularName is what kubectl accepts for one.
	Kind, ListKind, SingularName string
	// Namespaced is true for resources that live in a namespace.
	Namespaced bool
	// Verbs are the verbs the resource itself supports.
	Verbs []string
	// Subresources lists the resource's subresources (status, scale, ...).
	Subresources []string
	// ShortNames and Categories are what discovery reports ("deploy";
	// "all").
	ShortNames, Categories []string
	// StorageResource names the etcd key prefix, /registry/<StorageResource>.
	// It differs from Resource only where two API groups share one store
	// (events.k8s.io events are core events) or one resource is served in
	// two versions (autoscaling/v1 and v2 HorizontalPodAutoscalers).
	StorageResource string
	// Virtual resources (access reviews) are computed per request and never
	// stored.
	Virtual bool
	// FieldLabels returns the fields a field selector may name for an
	// object of this resource, with their values. metadata.name and
	// metadata.namespace are always there.
	FieldLabels func(obj runtime.Object) map[string]string
}

// GVK returns the resource's group, version and kind.
func (r *Resource) GVK() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind)
}

// HasVerb reports whether the resource supports verb.
func (r *Resource) HasVerb(verb string) bool {
	for _, v := range r.Verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// HasSubresource reports whether the resource has the named subresource.
func (r *Resource) HasSubresource(name string) bool {
	for _, s := range r.Subresources {
		if s == name {
			return true
		}
	}
	return false
}

// New returns a new empty object of the resource's kind.
func (r *Resource) New() runtime.Object {
	obj, err := scheme.Scheme.New(r.GVK())
	if err != nil {
		panic(fmt.Sprintf("registry: %s is not in the scheme: %v", r.GVK(), err)) // a programming error in the table below
	}
	return obj
}

// NewList returns a new empty list of the resource's kind.
func (r *Resource) NewList() runtime.Object {
	obj, err := scheme.Scheme.New(r.GroupVersion().WithKind(r.ListKind))
	if err != nil {
		panic(fmt.Sprintf("registry: %s is not in the scheme: %v", r.ListKind, err))
	}
	return obj
}

// Type returns the Go struct type of the resource's objects.
func (r *Resource) Type() reflect.Type { return reflect.TypeOf(r.New()).Elem() }

// ListType returns the Go struct type of the resource's lists.
func (r *Resource) ListType() reflect.Type { return reflect.TypeOf(r.NewList()).Elem() }

// Key returns the etcd key of the named object.
func (r *Resource) Key(namespace, name string) string {
	if r.Namespaced {
		return "/registry/" + r.StorageResource + "/" + namespace + "/" + name
	}
	return "/registry/" + r.StorageResource + "/" + name
}

// Prefix returns the etcd key prefix under which the resource's objects in
// namespace are kept; namespace "" means all namespaces.
func (r *Resource) Prefix(namespace string) string {
	if r.Namespaced && namespace != "" {
		return "/registry/" + r.StorageResource + "/" + namespace + "/"
	}
	return "/registry/" + r.StorageResource + "/"
}

// Registry is the set of served resources.
type Registry struct {
	resources []*Resource
	byGVR     map[schema.GroupVersionResource]*Resource
	byGVK     map[schema.GroupVersionKind]*Resource
}

// New returns the registry of every resource klab serves.
func New() *Registry {
	reg := &Registry{
		byGVR: map[schema.GroupVersionResource]*Resource{},
		byGVK: map[schema.GroupVersionKind]*Resource{},
	}
	for _, r := range builtin() {
		if r.StorageResource == "" {
			r.StorageResource = r.Resource
		}
		if r.SingularName == "" {
			r.SingularName = lower(r.Kind)
		}
		if r.ListKind == "" {
			r.ListKind = r.Kind + "List"
		}
		if _, dup := reg.byGVR[r.GroupVersionResource]; dup {
			panic("registry: duplicate resource " + r.GroupVersionResource.String())
		}
		reg.resources = append(reg.resources, r)
		reg.byGVR[r.GroupVersionResource] = r
		reg.byGVK[r.GVK()] = r
	}
	return reg
}

// All returns every resource, in discovery order.
func (reg *Registry) All() []*Resource { return reg.resources }

// Lookup returns the resource at gvr.
func (reg *Registry) Lookup(gvr schema.GroupVersionResource) (*Resource, bool) {
	r, ok := reg.byGVR[gvr]
	return r, ok
}

// ForKind returns the resource serving gvk.
func (reg *Registry) ForKind(gvk schema.GroupVersionKind) (*Resource, bool) {
	r, ok := reg.byGVK[gvk]
	return r, ok
}

// GroupVersions returns the served group versions: the core group first,
// then the named groups sorted by name, as discovery lists them.
func (reg *Registry) GroupVersions() []schema.GroupVersion {
	seen := map[schema.GroupVersion]bool{}
	var gvs []schema.GroupVersion
	for _, r := range reg.resources {
		if gv := r.GroupVersion(); !seen[gv] {
			seen[gv] = true
			gvs = append(gvs, gv)
		}
	}
	sort.SliceStable(gvs, func(i, j int) bool {
		if (gvs[i].Group == "") != (gvs[j].Group == "") {
			return gvs[i].Group == ""
		}
		return gvs[i].Group < gvs[j].Group
	})
	return gvs
}

// InGroupVersion returns the resources of one group version.
func (reg *Registry) InGroupVersion(gv schema.GroupVersion) []*Resource {
	var out []*Resource
	for _, r := range reg.resources {
		if r.GroupVersion() == gv {
			out = append(out, r)
		}
	}
	return out
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
