package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/klab-dev/klab/cluster/apiserver/defaults"
	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// Field management, as kube-apiserver wires apimachinery's managedfields
// into its create, update and patch handlers: every write records in
// metadata.managedFields which manager set which fields, with the
// operation (Update for create, update and non-apply patches; Apply for
// server-side apply) and the API version; server-side apply merges by that
// ownership and reports conflicts.
//
// The library needs a type converter: the structured-merge-diff schema of
// each kind, which tells it how lists merge (a set, a map keyed by name,
// or atomic). kube-apiserver builds it from its generated OpenAPI models.
// klab's own OpenAPI documents are derived by reflection and cannot see
// the +listType markers (package openapi says so), so it uses the schema
// client-go carries for the same k8s.io/api types, generated from
// upstream's OpenAPI with every marker: ownership of a container's ports,
// say, is keyed by containerPort and protocol exactly as upstream keys it.

// typeConverter is built once per process: parsing the schema takes a
// while and it never changes.
var typeConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(scheme.Scheme)
})

// fieldManagerMaxLength is upstream's limit on a manager's name
// (validation.FieldManagerMaxLength).
const fieldManagerMaxLength = 128

// kubeAPIServerManager is the manager of what the API server writes itself
// (the default namespaces, the kubernetes Service), as upstream names it.
const kubeAPIServerManager = "kube-apiserver"

// fieldManagerKey names one field manager: upstream has one per resource
// and subresource.
type fieldManagerKey struct {
	gvr schema.GroupVersionResource
	sub string
}

// fieldManagers builds and keeps the field managers.
type fieldManagers struct {
	mu   sync.Mutex
	byID map[fieldManagerKey]*managedfields.FieldManager
}

// get returns the field manager of res and its subresource sub ("" for
// the resource itself).
func (f *fieldManagers) get(res *registry.Resource, sub string) (*managedfields.FieldManager, error) {
	key := fieldManagerKey{res.GroupVersionResource, sub}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fm, ok := f.byID[key]; ok {
		return fm, nil
	}
	gv := res.GroupVersion()
	fm, err := managedfields.NewDefaultFieldManager(typeConverter(), versionConvertor{scheme.Scheme}, defaulter{}, scheme.Scheme,
		res.GVK(), gv, sub, resetFields(res, sub))
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", res.GroupVersionResource, err)
	}
	if f.byID == nil {
		f.byID = map[fieldManagerKey]*managedfields.FieldManager{}
	}
	f.byID[key] = fm
	return fm, nil
}

// resetFields are the fields a write through res/sub cannot set (the
// strategy puts them back), so nobody comes to own them through it: the
// status through the resource when it has a status subresource, the spec
// through /status (a pod's status writer cannot touch its deletion stamp
// or owners either). They are each strategy's GetResetFields upstream.
func resetFields(res *registry.Resource, sub string) map[fieldpath.APIVersion]fieldpath.Filter {
	var set *fieldpath.Set
	switch {
	case sub == "" && res.HasSubresource(registry.SubStatus):
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	case sub == registry.SubStatus && res.Resource == "pods":
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "deletionTimestamp"), fieldpath.MakePathOrDie("metadata", "ownerReferences"))
	case sub == registry.SubStatus && res.Group == "apps":
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata", "labels"))
	case sub == registry.SubStatus:
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	case sub == registry.SubFinalize:
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	default:
		return nil
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(res.GroupVersion().String()): fieldpath.NewExcludeSetFilter(set),
	}
}

// defaulter gives an applied object klab's defaults, as the scheme's
// defaulting functions do upstream.
type defaulter struct{}

func (defaulter) Default(obj runtime.Object) { defaults.Default(obj) }

// manageFields records manager's update of current into obj in obj's
// managedFields. Like upstream's UpdateNoErrors it never fails a write: a
// managedFields it cannot compute keeps the current one.
func (s *Server) manageFields(res *registry.Resource, sub string, current, obj runtime.Object, manager string) runtime.Object {
	fm, err := s.fieldManagers.get(res, sub)
	if err != nil {
		return obj
	}
	return fm.UpdateNoErrors(current, obj, manager)
}

// managerOf returns the request's field manager: the fieldManager query
// parameter, or else what its User-Agent begins with ("kubectl",
// "kube-controller-manager"), as upstream's managerOrUserAgent.
func managerOf(r *http.Request) string {
	if m := r.URL.Query().Get("fieldManager"); m != "" {
		return m
	}
	ua, _, _ := strings.Cut(r.UserAgent(), "/")
	var b bytes.Buffer
	for _, c := range ua {
		if !unicode.IsPrint(c) {
			continue
		}
		if b.Len()+utf8.RuneLen(c) > fieldManagerMaxLength {
			break
		}
		b.WriteRune(c)
	}
	return b.String()
}

// writeOptions reads and validates the query parameters of a write as
// upstream's Create, Update and PatchOptions; patchType is "" for creates
// and updates.
func writeOptions(r *http.Request, patchType types.PatchType) (metav1.PatchOptions, error) {
	q := r.URL.Query()
	opts := metav1.PatchOptions{DryRun: q["dryRun"], FieldManager: q.Get("fieldManager")}
	if f := q.Get("force"); f != "" {
		force, err := strconv.ParseBool(f)
		if err != nil {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("invalid force %q: %v", f, err))
		}
		opts.Force = &force
	}
	var errs field.ErrorList
	kind := "PatchOptions"
	switch r.Method {
	case http.MethodPost:
		kind = "CreateOptions"
		errs = metav1validation.ValidateCreateOptions(&metav1.CreateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager})
	case http.MethodPut:
		kind = "UpdateOptions"
		errs = metav1validation.ValidateUpdateOptions(&metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager})
	default:
		errs = metav1validation.ValidatePatchOptions(&opts, patchType)
	}
	if len(errs) > 0 {
		return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	return opts, nil
}
