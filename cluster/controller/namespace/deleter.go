package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// finalizerEstimateSeconds is how long the controller assumes finalizers
// on remaining objects take (the garbage collector, usually).
const finalizerEstimateSeconds = int64(15)

// resourcesRemainingError says that content is still being removed and
// about how many seconds that will take; the controller looks again after
// half of it.
type resourcesRemainingError struct {
	Estimate int64
}

func (e *resourcesRemainingError) Error() string {
	return fmt.Sprintf("some content remains in the namespace, estimate %d seconds before it is removed", e.Estimate)
}

// deletableResource is a namespaced resource the API server lets the
// controller delete, and whether it can delete and list it in bulk.
type deletableResource struct {
	gvr              schema.GroupVersionResource
	deleteCollection bool
	list             bool
}

// deleteNamespace empties a namespace that is being deleted and then
// removes the "kubernetes" finalizer from it, after which the API server
// deletes it. It returns a *resourcesRemainingError while content is
// still going away.
func (c *Controller) deleteNamespace(ctx context.Context, name string) error {
	// Several controllers may edit a terminating namespace: read the
	// latest rather than trust the cache.
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get namespace %s: %w", name, err)
	}
	if ns.DeletionTimestamp == nil {
		return nil
	}
	ns, err = c.retryOnConflict(ctx, ns, c.markTerminating)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark namespace %s terminating: %w", name, err)
	}
	if ns.DeletionTimestamp.IsZero() || len(ns.Spec.Finalizers) == 0 {
		return nil // no longer being deleted, or already finalized
	}
	estimate, err := c.deleteAllContent(ctx, ns)
	if err != nil {
		return err
	}
	if estimate > 0 {
		return &resourcesRemainingError{Estimate: estimate}
	}
	if _, err := c.retryOnConflict(ctx, ns, c.finalize); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalize namespace %s: %w", name, err)
	}
	return nil
}

// retryOnConflict calls fn until it does not fail with a conflict,
// reading the namespace again in between; a namespace that was replaced
// by another of the same name is an error.
func (c *Controller) retryOnConflict(ctx context.Context, ns *v1.Namespace, fn func(context.Context, *v1.Namespace) (*v1.Namespace, error)) (*v1.Namespace, error) {
	for {
		result, err := fn(ctx, ns)
		if err == nil || !apierrors.IsConflict(err) {
			return result, err
		}
		latest, err := c.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if latest.UID != ns.UID {
			return nil, errors.New("namespace uid has changed across retries")
		}
		ns = latest
	}
}

// markTerminating sets the Terminating phase if the API server has not.
func (c *Controller) markTerminating(ctx context.Context, ns *v1.Namespace) (*v1.Namespace, error) {
	if ns.DeletionTimestamp.IsZero() || ns.Status.Phase == v1.NamespaceTerminating {
		return ns, nil
	}
	updated := ns.DeepCopy()
	updated.Status.Phase = v1.NamespaceTerminating
	return c.client.CoreV1().Namespaces().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
}

// finalize removes this controller's finalizer from spec.finalizers
// through the namespaces/finalize subresource.
func (c *Controller) finalize(ctx context.Context, ns *v1.Namespace) (*v1.Namespace, error) {
	out := v1.Namespace{ObjectMeta: ns.ObjectMeta, Spec: ns.Spec}
	var rest []v1.FinalizerName
	for _, f := range ns.Spec.Finalizers {
		if f != v1.FinalizerKubernetes && !slices.Contains(rest, f) {
			rest = append(rest, f)
		}
	}
	slices.Sort(rest)
	out.Spec.Finalizers = append([]v1.FinalizerName{}, rest...)
	return c.client.CoreV1().Namespaces().Finalize(ctx, &out, metav1.UpdateOptions{})
}

// deleteAllContent deletes every namespaced resource in the namespace and
// records the outcome in its conditions. It returns how many seconds the
// rest should take to go (0: nothing left).
func (c *Controller) deleteAllContent(ctx context.Context, ns *v1.Namespace) (int64, error) {
	var errs []error
	conditions := conditionUpdater{now: c.clock.Now()}
	lists, err := c.discover()
	if err != nil {
		// Discovery failing for some groups still leaves the others to
		// work on.
		errs = append(errs, fmt.Errorf("discover resources: %w", err))
		conditions.discoveryFailed(err)
	}
	resources, err := deletableResources(lists)
	if err != nil {
		errs = append(errs, err)
		conditions.groupVersionFailed(err)
	}

	estimate := int64(0)
	remaining := map[schema.GroupVersionResource]int{}
	byFinalizer := map[string]int{}
	for _, r := range resources {
		left, err := c.deleteAllContentFor(ctx, r, ns)
		if err != nil {
			errs = append(errs, err)
			conditions.deleteContentFailed(err)
		}
		estimate = max(estimate, left.estimate)
		if left.count > 0 {
			remaining[r.gvr] = left.count
			for f, n := range left.byFinalizer {
				byFinalizer[f] += n
			}
		}
	}
	conditions.contentTotals(remaining, byFinalizer)
	// Always write the conditions: one that said "failing" must flip back
	// once things work.
	if conditions.update(ns) {
		if _, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{}); err != nil {
			c.logger.Error("Couldn't update status condition for namespace", "namespace", ns.Name, "err", err)
		}
	}
	return estimate, errors.Join(errs...)
}

// deletableResources picks the resources that support delete out of
// discovery's lists, sorted for a stable order.
func deletableResources(lists []*metav1.APIResourceList) ([]deletableResource, error) {
	var out []deletableResource
	var errs []error
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			errs = append(errs, fmt.Errorf("parse group version %q: %w", list.GroupVersion, err))
			continue
		}
		for _, r := range list.APIResources {
			if !slices.Contains(r.Verbs, "delete") {
				continue
			}
			out = append(out, deletableResource{
				gvr:              gv.WithResource(r.Name),
				deleteCollection: slices.Contains(r.Verbs, "deletecollection"),
				list:             slices.Contains(r.Verbs, "list"),
			})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvr.String() < out[j].gvr.String() })
	return out, errors.Join(errs...)
}

// leftovers is what remains of one resource after a deletion pass.
type leftovers struct {
	estimate    int64
	count       int
	byFinalizer map[string]int
}

// deleteAllContentFor deletes every object of one resource in the
// namespace and reports what is left.
func (c *Controller) deleteAllContentFor(ctx context.Context, r deletableResource, ns *v1.Namespace) (leftovers, error) {
	estimate, err := c.estimateGracefulTermination(ctx, r.gvr, ns)
	if err != nil {
		return leftovers{}, err
	}
	client := c.metadata.Resource(r.gvr).Namespace(ns.Name)
	// Background propagation: the garbage collector must not add the
	// orphan finalizer, since the controller deletes everything anyway.
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	deleted := false
	if r.deleteCollection {
		err := client.DeleteCollection(ctx, opts, metav1.ListOptions{})
		switch {
		case err == nil:
			deleted = true
		case !apierrors.IsMethodNotSupported(err) && !apierrors.IsNotFound(err):
			return leftovers{estimate: estimate}, fmt.Errorf("delete %s in %s: %w", r.gvr.Resource, ns.Name, err)
		}
	}
	if !r.list {
		return leftovers{estimate: estimate}, nil
	}
	if !deleted {
		items, err := client.List(ctx, metav1.ListOptions{})
		if err != nil && !apierrors.IsMethodNotSupported(err) && !apierrors.IsNotFound(err) {
			return leftovers{estimate: estimate}, fmt.Errorf("list %s in %s: %w", r.gvr.Resource, ns.Name, err)
		}
		if items != nil {
			for _, item := range items.Items {
				err := client.Delete(ctx, item.Name, opts)
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
					return leftovers{estimate: estimate}, fmt.Errorf("delete %s %s/%s: %w", r.gvr.Resource, ns.Name, item.Name, err)
				}
			}
		}
	}

	// What is still there?
	items, err := client.List(ctx, metav1.ListOptions{})
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		return leftovers{estimate: estimate}, nil
	}
	if err != nil {
		return leftovers{estimate: estimate}, fmt.Errorf("list %s in %s: %w", r.gvr.Resource, ns.Name, err)
	}
	if len(items.Items) == 0 {
		return leftovers{}, nil
	}
	byFinalizer := map[string]int{}
	for _, item := range items.Items {
		for _, f := range item.Finalizers {
			byFinalizer[f]++
		}
	}
	left := leftovers{estimate: estimate, count: len(items.Items), byFinalizer: byFinalizer}
	switch {
	case estimate > 0:
		// Pods still terminating within their grace period.
		return left, nil
	case len(byFinalizer) > 0:
		// Waiting for finalizers is normal; give them some time.
		left.estimate = finalizerEstimateSeconds
		return left, nil
	default:
		return left, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", ns.Name, r.gvr)
	}
}

// estimateGracefulTermination is how many seconds the pods of the
// namespace may still take to terminate: the longest grace period of a
// pod that has not finished, or 0 once that long (divided by the lab's
// speed) has passed since the namespace was deleted.
func (c *Controller) estimateGracefulTermination(ctx context.Context, gvr schema.GroupVersionResource, ns *v1.Namespace) (int64, error) {
	if gvr.GroupResource() != (schema.GroupResource{Resource: "pods"}) {
		return 0, nil
	}
	pods, err := c.client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list pods in %s: %w", ns.Name, err)
	}
	estimate := int64(0)
	for _, pod := range pods.Items {
		if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g > estimate {
			estimate = *g
		}
	}
	if c.clock.Since(ns.DeletionTimestamp.Time) >= c.speed.Scale(time.Duration(estimate)*time.Second) {
		return 0, nil
	}
	return estimate, nil
}
