package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/apiserver/storage"
)

// Finalizers the garbage collector acts on, recorded when a delete asks
// for foreground deletion or orphaning (upstream's metav1 constants).
const (
	finalizerForeground = metav1.FinalizerDeleteDependents // "foregroundDeletion"
	finalizerOrphan     = metav1.FinalizerOrphanDependents // "orphan"
)

func (s *Server) delete(w http.ResponseWriter, req *request) {
	opts, err := decodeDeleteOptions(req.Request)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	if err := s.admitNodeRestriction(req.Context(), admissionFor(req, opDelete, nil, nil)); err != nil {
		writeError(w, req.Request, err)
		return
	}
	obj, gone, err := s.deleteObject(req.Context(), req.res, req.info.namespace, req.info.name, opts)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	if !gone || req.res.Resource == "pods" {
		// Still there (graceful deletion, finalizers), or a pod: the
		// object itself, as upstream answers.
		writeObject(w, req.Request, http.StatusOK, obj)
		return
	}
	m, _ := meta.Accessor(obj)
	writeRaw(w, http.StatusOK, negotiate(req.Request).yaml, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: req.info.name, Group: req.res.Group, Kind: req.res.Resource, UID: m.GetUID()},
	})
}

// deleteObject deletes the named object the way upstream's registry does:
// preconditions first; a pod on a node is deleted gracefully (it gets a
// deletionTimestamp and its kubelet finishes the deletion); an object with
// finalizers, or whose deletion asks the garbage collector to orphan or
// delete dependents first, is only marked; a namespace is marked
// Terminating for the namespace controller; anything else is removed at
// once. gone reports whether the object left etcd.
func (s *Server) deleteObject(ctx context.Context, res *registry.Resource, namespace, name string, opts *metav1.DeleteOptions) (obj runtime.Object, gone bool, err error) {
	dryRun := len(opts.DryRun) > 0 && opts.DryRun[0] == metav1.DryRunAll
	current, err := s.getObject(ctx, res, namespace, name)
	if err != nil {
		return nil, false, err
	}
	if err := checkPreconditions(res, name, current, opts.Preconditions); err != nil {
		return nil, false, err
	}
	if err := admitDelete(res, name); err != nil {
		return nil, false, err
	}
	m, _ := meta.Accessor(current)
	grace := gracePeriod(res, current, opts)
	finalizers := withPropagation(m.GetFinalizers(), opts.PropagationPolicy)
	mark := grace > 0 || len(finalizers) > 0 || res.Resource == "namespaces"
	if res.Resource == "namespaces" && m.GetDeletionTimestamp() != nil && len(finalizers) == 0 && len(current.(*corev1.Namespace).Spec.Finalizers) == 0 {
		mark = false
	}
	if dryRun {
		return current, !mark, nil
	}
	if mark {
		req := &request{Request: nil, info: requestInfo{namespace: namespace, name: name}, res: res}
		updated, err := s.markDeleted(ctx, req, grace, finalizers, opts)
		if err != nil {
			return nil, false, err
		}
		return updated, false, nil
	}
	var pre storage.Precondition
	if opts.Preconditions != nil {
		pre = func(cur runtime.Object) error {
			return checkPreconditions(res, name, cur, opts.Preconditions)
		}
	}
	deleted, err := s.store.Delete(ctx, s.storageResource(res), namespace, name, pre)
	if err != nil {
		return nil, false, err
	}
	deleted = s.fromStorage(res, deleted)
	s.releaseAll(ctx, res, deleted)
	s.notePolicyWrite(deleted, true)
	s.notePodWrite(deleted, true)
	return deleted, true, nil
}

// markDeleted sets the deletion timestamp (now + grace), the grace period
// and the finalizers.
func (s *Server) markDeleted(ctx context.Context, req *request, grace int64, finalizers []string, opts *metav1.DeleteOptions) (runtime.Object, error) {
	stored, err := s.store.GuaranteedUpdate(ctx, s.storageResource(req.res), req.info.namespace, req.info.name, func(cur runtime.Object) (runtime.Object, error) {
		obj := s.fromStorage(req.res, cur)
		if err := checkPreconditions(req.res, req.info.name, obj, opts.Preconditions); err != nil {
			return nil, err
		}
		m, _ := meta.Accessor(obj)
		if ts := m.GetDeletionTimestamp(); ts != nil {
			// Already being deleted: a shorter grace period may be asked
			// for (kubectl delete --now, --force), never a longer one.
			if old := m.GetDeletionGracePeriodSeconds(); old != nil && *old <= grace {
				return s.toStorage(req.res, obj), nil
			}
		}
		when := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second))
		m.SetDeletionTimestamp(&when)
		m.SetDeletionGracePeriodSeconds(&grace)
		m.SetFinalizers(finalizers)
		if ns, ok := obj.(*corev1.Namespace); ok {
			ns.Status.Phase = corev1.NamespaceTerminating
		}
		return s.toStorage(req.res, obj), nil
	})
	if err != nil {
		return nil, err
	}
	return s.fromStorage(req.res, stored), nil
}

// gracePeriod is how long an object has to terminate: only pods that are
// on a node and still running get one, from the delete options or the
// pod's terminationGracePeriodSeconds (upstream's pod strategy
// CheckGracefulDelete).
func gracePeriod(res *registry.Resource, obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok || res.Resource != "pods" {
		return 0
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if opts.GracePeriodSeconds != nil {
		if *opts.GracePeriodSeconds < 0 {
			return 1 // upstream turns a negative grace period into 1
		}
		return *opts.GracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// withPropagation records the propagation policy as upstream does, in the
// finalizers the garbage collector acts on.
func withPropagation(finalizers []string, policy *metav1.DeletionPropagation) []string {
	out := append([]string(nil), finalizers...)
	if policy == nil {
		return out
	}
	add := ""
	switch *policy {
	case metav1.DeletePropagationForeground:
		add = finalizerForeground
	case metav1.DeletePropagationOrphan:
		add = finalizerOrphan
	}
	if add == "" {
		return out
	}
	for _, f := range out {
		if f == add {
			return out
		}
	}
	return append(out, add)
}

func checkPreconditions(res *registry.Resource, name string, obj runtime.Object, pre *metav1.Preconditions) error {
	if pre == nil {
		return nil
	}
	m, _ := meta.Accessor(obj)
	if pre.UID != nil && *pre.UID != m.GetUID() {
		return apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, m.GetUID()))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// readyToGo reports whether an object marked for deletion whose finalizers
// are all gone can now leave etcd: a pod waits for its grace period to be
// cut to zero by its kubelet; a namespace for its spec finalizers.
func readyToGo(res *registry.Resource, obj runtime.Object) bool {
	m, _ := meta.Accessor(obj)
	if ns, ok := obj.(*corev1.Namespace); ok && len(ns.Spec.Finalizers) > 0 {
		return false
	}
	grace := m.GetDeletionGracePeriodSeconds()
	return grace == nil || *grace == 0
}

func (s *Server) deleteCollection(w http.ResponseWriter, req *request) {
	opts, err := decodeDeleteOptions(req.Request)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	lopts, err := listOptions(req.Request)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	list, err := s.store.List(req.Context(), s.storageResource(req.res), req.info.namespace, lopts)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	items, _ := meta.ExtractList(list)
	var deleted []runtime.Object
	for _, item := range items {
		m, _ := meta.Accessor(item)
		obj, _, err := s.deleteObject(req.Context(), req.res, m.GetNamespace(), m.GetName(), opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			writeError(w, req.Request, err)
			return
		}
		deleted = append(deleted, obj)
	}
	out := req.res.NewList()
	meta.SetList(out, deleted)
	writeObject(w, req.Request, http.StatusOK, out)
}
