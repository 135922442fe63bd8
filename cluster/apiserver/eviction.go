package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/apiserver/storage"
)

// pods/eviction is a delete that asks first. kubectl drain evicts rather
// than deletes so that a PodDisruptionBudget can say no: the API server
// finds the budget that covers the pod and, if the budget allows one more
// disruption, takes it (DisruptionsAllowed goes down by one and the pod is
// written into DisruptedPods, so the disruption controller does not count
// it healthy any more) and deletes the pod; if not, it answers 429 Too
// Many Requests, which drain reads as "try again in a while". This follows
// upstream's EvictionREST (pkg/registry/core/pod/storage/eviction.go).

var (
	evictionGVK = policyv1.SchemeGroupVersion.WithKind("Eviction")
	pdbGVR      = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
)

// maxDisruptedPods bounds PodDisruptionBudgetStatus.DisruptedPods: past it,
// the API server has let through many evictions the disruption controller
// has not yet seen, and refuses more until it catches up (upstream's
// MaxDisruptedPodSize).
const maxDisruptedPods = 2000

// The message of the 429 that refuses an eviction, upstream's word for word:
// kubectl drain prints it while it retries.
const evictionRefused = "Cannot evict pod as it would violate the pod's disruption budget."

func (s *Server) evict(w http.ResponseWriter, req *request) {
	data, err := readBody(req.Request)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	eviction := &policyv1.Eviction{}
	if _, err := decodeObject(req.Request, data, eviction, evictionGVK); err != nil {
		writeError(w, req.Request, err)
		return
	}
	if eviction.Name != req.info.name {
		writeError(w, req.Request, apierrors.NewBadRequest("name in URL does not match name in Eviction object"))
		return
	}
	if err := s.admitNodeRestriction(req.Context(), admissionFor(req, opCreate, eviction, nil)); err != nil {
		writeError(w, req.Request, err)
		return
	}
	opts, err := evictionDeleteOptions(req.Request, eviction)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	status, err := s.evictPod(req.Context(), req.res, req.info.namespace, req.info.name, opts)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	code := http.StatusCreated
	if status.Code != 0 {
		code = int(status.Code)
	}
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeRaw(w, code, negotiate(req.Request).yaml, status)
}

// evictionDeleteOptions joins the request's dryRun to the Eviction's own
// delete options; the two may not disagree.
func evictionDeleteOptions(r *http.Request, eviction *policyv1.Eviction) (*metav1.DeleteOptions, error) {
	var dryRun []string
	if isDryRun(r) {
		dryRun = []string{metav1.DryRunAll}
	}
	if eviction.DeleteOptions == nil {
		return &metav1.DeleteOptions{DryRun: dryRun}, nil
	}
	opts := eviction.DeleteOptions.DeepCopy()
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = dryRun
	case len(dryRun) > 0 && (len(opts.DryRun) != 1 || opts.DryRun[0] != dryRun[0]):
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", dryRun, opts.DryRun))
	}
	return opts, nil
}

// evictPod evicts one pod, as EvictionREST.Create does.
func (s *Server) evictPod(ctx context.Context, podsRes *registry.Resource, namespace, name string, opts *metav1.DeleteOptions) (*metav1.Status, error) {
	obj, err := s.getObject(ctx, podsRes, namespace, name)
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	// A pod that is not running (done, failed, never started) or already
	// going disrupts nothing more by going: no budget is asked.
	if canIgnoreBudget(pod) {
		if err := s.deletePodForEviction(ctx, podsRes, pod, opts, enforceResourceVersion(pod)); err != nil {
			return nil, err
		}
		return &metav1.Status{Status: metav1.StatusSuccess}, nil
	}

	budgets, err := s.budgetsFor(ctx, pod)
	if err != nil {
		return nil, err
	}
	if len(budgets) > 1 {
		return &metav1.Status{
			Status:  metav1.StatusFailure,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
			Code:    http.StatusInternalServerError,
		}, nil
	}
	pinVersion := false
	if len(budgets) == 1 {
		pdb := budgets[0]
		if !isPodReady(pod) && pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
			// The pod is not counted healthy, and the budget holds
			// without it: it goes without spending a disruption, as long
			// as it does not become ready in the meantime.
			pinVersion = true
		} else if unhealthyAlwaysAllowed(pdb) && !isPodReady(pod) {
			pinVersion = true
		} else if err := s.takeDisruption(ctx, pdb, pod.Name, isDryRunOptions(opts)); err != nil {
			return nil, err
		}
	}
	if err := s.deletePodForEviction(ctx, podsRes, pod, opts, pinVersion); err != nil {
		if apierrors.IsConflict(err) && pinVersion && (opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil) {
			// The pod changed since we looked (it may be ready now):
			// tell the client to try again.
			return nil, stillProcessing(budgets[0].Name)
		}
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess}, nil
}

// deletePodForEviction deletes the pod with the eviction's options; with
// pin, only the pod as it was seen (its resourceVersion), so one that has
// just become ready is not taken without the budget's say.
func (s *Server) deletePodForEviction(ctx context.Context, podsRes *registry.Resource, pod *corev1.Pod, opts *metav1.DeleteOptions, pin bool) error {
	if pin && (opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil) {
		opts = opts.DeepCopy()
		if opts.Preconditions == nil {
			opts.Preconditions = &metav1.Preconditions{}
		}
		rv := pod.ResourceVersion
		opts.Preconditions.ResourceVersion = &rv
	}
	_, _, err := s.deleteObject(ctx, podsRes, pod.Namespace, pod.Name, opts)
	return err
}

// takeDisruption spends one of the budget's allowed disruptions on the
// named pod, re-reading the budget on a conflicting write.
func (s *Server) takeDisruption(ctx context.Context, pdb *policyv1.PodDisruptionBudget, podName string, dryRun bool) error {
	res, _ := s.reg.Lookup(pdbGVR)
	if dryRun {
		_, err := checkAndDecrement(pdb.DeepCopy(), podName)
		return err
	}
	_, err := s.store.GuaranteedUpdate(ctx, s.storageResource(res), pdb.Namespace, pdb.Name, func(cur runtime.Object) (runtime.Object, error) {
		current := s.fromStorage(res, cur).(*policyv1.PodDisruptionBudget)
		return checkAndDecrement(current, podName)
	})
	if apierrors.IsNotFound(err) {
		// The budget went away between the list and the write: the
		// client may try again and find none.
		return stillProcessing(pdb.Name)
	}
	return err
}

// checkAndDecrement refuses the disruption when the budget allows none (or
// the disruption controller has not yet seen its latest spec) and
// otherwise returns it with one disruption fewer and the pod recorded.
func checkAndDecrement(pdb *policyv1.PodDisruptionBudget, podName string) (runtime.Object, error) {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return nil, stillProcessing(pdb.Name)
	}
	gr := schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}
	if pdb.Status.DisruptionsAllowed < 0 {
		return nil, apierrors.NewForbidden(gr, pdb.Name, errors.New("pdb disruptions allowed is negative"))
	}
	if len(pdb.Status.DisruptedPods) > maxDisruptedPods {
		return nil, apierrors.NewForbidden(gr, pdb.Name, errors.New("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		err := apierrors.NewTooManyRequests(evictionRefused, 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    policyv1.DisruptionBudgetCause,
			Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy),
		})
		return nil, err
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		pdbhelper.UpdateDisruptionAllowedCondition(pdb)
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[podName] = metav1.NewTime(time.Now())
	return pdb, nil
}

// stillProcessing is the 429 for a budget the disruption controller has
// not caught up with.
func stillProcessing(name string) error {
	err := apierrors.NewTooManyRequests(evictionRefused, 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name),
	})
	return err
}

// budgetsFor returns the budgets of the pod's namespace whose selector
// matches it. A budget with an empty selector matches nothing here, as
// upstream's eviction has it.
func (s *Server) budgetsFor(ctx context.Context, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	res, _ := s.reg.Lookup(pdbGVR)
	list, err := s.store.List(ctx, s.storageResource(res), pod.Namespace, storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*policyv1.PodDisruptionBudget
	for i := range list.(*policyv1.PodDisruptionBudgetList).Items {
		pdb := &list.(*policyv1.PodDisruptionBudgetList).Items[i]
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || selector.Empty() || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out, nil
}

// canIgnoreBudget reports whether the pod's going disrupts nothing more.
func canIgnoreBudget(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending:
		return true
	}
	return pod.DeletionTimestamp != nil
}

// enforceResourceVersion: a pod deleted without asking its budget must
// still be the pod that was looked at, unless it is finished or going.
func enforceResourceVersion(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return false
	}
	return pod.DeletionTimestamp == nil
}

func unhealthyAlwaysAllowed(pdb *policyv1.PodDisruptionBudget) bool {
	p := pdb.Spec.UnhealthyPodEvictionPolicy
	return p != nil && *p == policyv1.AlwaysAllow
}

func isPodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func isDryRunOptions(opts *metav1.DeleteOptions) bool {
	return len(opts.DryRun) > 0 && opts.DryRun[0] == metav1.DryRunAll
}
