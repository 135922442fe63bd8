package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	certificatesv1 "k8s.io/api/certificates/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/apiserver/storage"
)

// errObjectModified is upstream's text for a lost optimistic-concurrency
// race.
var errObjectModified = errors.New("the object has been modified; please apply your changes to the latest version and try again")

// errDryRun stops an update before it is written.
var errDryRun = errors.New("dry run: not written")

func (s *Server) get(w http.ResponseWriter, req *request) {
	obj, err := s.getObject(req.Context(), req.res, req.info.namespace, req.info.name)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	writeObject(w, req.Request, http.StatusOK, obj)
}

// getObject reads an object of res (converting from its storage form).
func (s *Server) getObject(ctx context.Context, res *registry.Resource, namespace, name string) (runtime.Object, error) {
	stored, err := s.store.Get(ctx, s.storageResource(res), namespace, name)
	if err != nil {
		return nil, err
	}
	return s.fromStorage(res, stored), nil
}

// listOptions reads the list and watch query parameters.
func listOptions(r *http.Request) (storage.ListOptions, error) {
	q := r.URL.Query()
	opts := storage.ListOptions{
		Continue:             q.Get("continue"),
		ResourceVersion:      q.Get("resourceVersion"),
		ResourceVersionMatch: metav1.ResourceVersionMatch(q.Get("resourceVersionMatch")),
	}
	var err error
	if opts.Labels, err = labels.Parse(q.Get("labelSelector")); err != nil {
		return opts, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	if opts.Fields, err = fields.ParseSelector(q.Get("fieldSelector")); err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	if l := q.Get("limit"); l != "" {
		if opts.Limit, err = strconv.ParseInt(l, 10, 64); err != nil || opts.Limit < 0 {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("invalid limit %q", l))
		}
	}
	return opts, nil
}

func (s *Server) list(w http.ResponseWriter, req *request) {
	opts, err := listOptions(req.Request)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	list, err := s.store.List(req.Context(), s.storageResource(req.res), req.info.namespace, opts)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	writeObject(w, req.Request, http.StatusOK, s.listFromStorage(req.res, list))
}

func (s *Server) create(w http.ResponseWriter, req *request) {
	data, err := readBody(req.Request)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	obj := req.res.New()
	warnings, err := decodeObject(req.Request, data, obj, req.res.GVK())
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	addWarnings(w, warnings)
	if m, err := meta.Accessor(obj); err == nil {
		req.bodyName = m.GetName()
	}
	if req.res.Virtual {
		s.createVirtual(w, req, obj)
		return
	}
	if _, err := writeOptions(req.Request, ""); err != nil {
		writeError(w, req.Request, err)
		return
	}
	if err := s.checkEscalation(req, obj, nil); err != nil {
		writeError(w, req.Request, err)
		return
	}
	if err := s.admitNodeRestriction(req.Context(), admissionFor(req, opCreate, obj, nil)); err != nil {
		writeError(w, req.Request, err)
		return
	}
	if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
		setRequester(csr, req.user)
	}
	created, err := s.createObject(req.Context(), req.res, req.info.namespace, obj, writeParams{dryRun: isDryRun(req.Request), manager: managerOf(req.Request)})
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	writeObject(w, req.Request, http.StatusCreated, created)
}

// writeParams are what a create carries besides its object.
type writeParams struct {
	// dryRun stops the create before anything is stored.
	dryRun bool
	// manager is the field manager the object's fields are recorded for.
	manager string
	// applied is set when a server-side apply made the object and has
	// recorded its managed fields already.
	applied bool
}

// createObject runs an object through admission and validation and stores
// it.
func (s *Server) createObject(ctx context.Context, res *registry.Resource, namespace string, obj runtime.Object, p writeParams) (runtime.Object, error) {
	dryRun := p.dryRun
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if err := checkNamespace(res, m, namespace); err != nil {
		return nil, err
	}
	if res.Namespaced {
		if err := s.admitNamespace(ctx, namespace); err != nil {
			return nil, err
		}
	}
	prepareForCreate(res, obj)
	if !p.applied {
		// Upstream records the fields before mutating admission, so
		// what admission adds (a pod's service account and tolerations)
		// belongs to nobody.
		obj = s.manageFields(res, "", res.New(), obj, p.manager)
		m, _ = meta.Accessor(obj)
	}
	if err := s.admitCreate(ctx, res, obj); err != nil {
		return nil, err
	}
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	for attempt := 0; ; attempt++ {
		if generated {
			m.SetName(m.GetGenerateName() + utilrand.String(5))
		}
		if errs := validateCreate(obj); len(errs) > 0 {
			return nil, apierrors.NewInvalid(res.GVK().GroupKind(), m.GetName(), errs)
		}
		// ResourceQuota, a validating plugin (resourcequota.go).
		if err := s.admitQuota(ctx, res, obj, m.GetName(), m.GetNamespace(), dryRun); err != nil {
			return nil, err
		}
		release, err := s.allocate(ctx, res, obj, nil, dryRun)
		if err != nil {
			return nil, err
		}
		if dryRun {
			// What a real create would answer: the object as stored
			// and read back (a v1 HPA through its v2 form).
			return s.fromStorage(res, s.toStorage(res, obj)), nil
		}
		stored, err := s.store.Create(ctx, s.storageResource(res), s.toStorage(res, obj))
		if err != nil {
			release()
			if apierrors.IsAlreadyExists(err) && generated && attempt < 8 {
				continue // another random suffix
			}
			return nil, err
		}
		s.notePolicyWrite(stored, false)
		s.notePodWrite(stored, false)
		return s.fromStorage(res, stored), nil
	}
}

// checkNamespace fills the object's namespace from the URL and rejects a
// disagreeing one, as upstream.
func checkNamespace(res *registry.Resource, m metav1.Object, namespace string) error {
	if !res.Namespaced {
		if m.GetNamespace() != "" {
			m.SetNamespace("")
		}
		return nil
	}
	switch {
	case m.GetNamespace() == "":
		m.SetNamespace(namespace)
	case m.GetNamespace() != namespace:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

func (s *Server) update(w http.ResponseWriter, req *request) {
	data, err := readBody(req.Request)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	obj := req.res.New()
	warnings, err := decodeObject(req.Request, data, obj, req.res.GVK())
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	addWarnings(w, warnings)
	if _, err := writeOptions(req.Request, ""); err != nil {
		writeError(w, req.Request, err)
		return
	}
	updated, err := s.updateObject(req.Context(), req, func(current runtime.Object) (runtime.Object, error) {
		return obj.DeepCopyObject(), nil
	})
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	writeObject(w, req.Request, http.StatusOK, updated)
}

// updateObject applies newObject (the body of a PUT, or a patch applied to
// the current object) through admission and validation, retrying on
// concurrent writes unless the new object names the resourceVersion it
// was based on, in which case a concurrent write is a 409 Conflict.
func (s *Server) updateObject(ctx context.Context, req *request, newObject func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	res, sub := req.res, req.info.subresource
	gr := res.GroupResource()
	dryRun := isDryRun(req.Request)
	var dryRunResult, lastCurrent runtime.Object
	var releases []func()
	stored, err := s.store.GuaranteedUpdate(ctx, s.storageResource(res), req.info.namespace, req.info.name, func(storedCur runtime.Object) (runtime.Object, error) {
		for _, r := range releases {
			r() // allocations of an attempt that lost a race
		}
		releases = nil
		current := s.fromStorage(res, storedCur)
		lastCurrent = current
		obj, err := newObject(current.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		cm, _ := meta.Accessor(current)
		if m.GetName() != req.info.name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), req.info.name))
		}
		if err := checkNamespace(res, m, req.info.namespace); err != nil {
			return nil, err
		}
		if rv := m.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
			return nil, apierrors.NewConflict(gr, req.info.name, errObjectModified)
		}
		// An unconditional update is based on what is stored now.
		m.SetResourceVersion(cm.GetResourceVersion())
		if err := prepareForUpdate(res, sub, obj, current); err != nil {
			return nil, err
		}
		if err := s.admitNodeRestriction(ctx, admissionFor(req, opUpdate, obj, current)); err != nil {
			return nil, err
		}
		if !req.applied {
			// After the strategy, so the defaults it fills in are no
			// change and what it resets is nobody's.
			obj = s.manageFields(res, req.managedSubresource(), current, obj, managerOf(req.Request))
			m, _ = meta.Accessor(obj)
		}
		if sub == "" {
			if err := s.admitUpdate(ctx, res, obj, current); err != nil {
				return nil, err
			}
		}
		if err := s.admitCSRWrite(req, obj, current); err != nil {
			return nil, err
		}
		if errs := validateUpdate(res, sub, obj, current); len(errs) > 0 {
			return nil, apierrors.NewInvalid(res.GVK().GroupKind(), req.info.name, errs)
		}
		if sub == "" {
			if err := s.admitQuotaUpdate(ctx, res, obj, current, dryRun); err != nil {
				return nil, err
			}
		}
		if err := s.checkEscalation(req, obj, current); err != nil {
			return nil, err
		}
		release, err := s.allocate(ctx, res, obj, current, dryRun)
		if err != nil {
			return nil, err
		}
		releases = append(releases, release)
		if dryRun {
			dryRunResult = s.fromStorage(res, s.toStorage(res, obj))
			return nil, errDryRun // nothing is written
		}
		return s.toStorage(res, obj), nil
	})
	if dryRun && errors.Is(err, errDryRun) {
		return dryRunResult, nil
	}
	if err != nil {
		for _, r := range releases {
			r()
		}
		return nil, err
	}
	updated := s.fromStorage(res, stored)
	s.releaseDropped(ctx, updated, lastCurrent)
	s.notePolicyWrite(updated, false)
	s.notePodWrite(updated, false)
	// An object being deleted goes once its last finalizer is removed.
	if m, _ := meta.Accessor(updated); m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 && readyToGo(res, updated) {
		if _, err := s.store.Delete(ctx, s.storageResource(res), req.info.namespace, req.info.name, sameRevision(m.GetResourceVersion())); err == nil {
			s.releaseAll(ctx, res, updated)
		}
	}
	return updated, nil
}

// sameRevision is a delete precondition: the object is still as we saw it.
func sameRevision(rv string) storage.Precondition {
	return func(current runtime.Object) error {
		if m, _ := meta.Accessor(current); m.GetResourceVersion() != rv {
			return apierrors.NewConflict(schemaGroupResource("", ""), m.GetName(), errObjectModified)
		}
		return nil
	}
}
