package endpoints

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

const (
	// LabelManagedBy marks the Endpoints this controller writes, so that
	// they can be told from Endpoints written by hand for Services without
	// a selector (upstream's endpoints.kubernetes.io/managed-by).
	LabelManagedBy = "endpoints.kubernetes.io/managed-by"
	// managedByValue is the label's value on this controller's Endpoints.
	managedByValue = "endpoint-controller"
)

// syncService makes the Endpoints named like the Service match it. It reads
// only from the informer caches and writes at most one object, so running
// it again changes nothing.
func (e *Controller) syncService(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	service, err := e.serviceLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// The Service is gone: so are its Endpoints.
		err = e.client.CoreV1().Endpoints(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete endpoints %s: %w", key, err)
		}
		e.triggerTimes.DeleteService(namespace, name)
		e.stale.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if service.Spec.Type == corev1.ServiceTypeExternalName || service.Spec.Selector == nil {
		// An ExternalName Service has no endpoints; a Service without a
		// selector gets the Endpoints someone writes for it.
		return nil
	}

	pods, err := e.podLister.Pods(namespace).List(labels.Set(service.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		return err
	}
	// Computed on every sync, even one that writes nothing, so the tracker
	// remembers what this sync saw.
	triggerTime := e.triggerTimes.ComputeEndpointLastChangeTriggerTime(namespace, service, pods)
	subsets, ready, notReady := buildSubsets(service, pods)

	current, err := e.endpointsLister.Endpoints(namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		current = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	case err != nil:
		return err
	case e.stale.isStale(key, current):
		return fmt.Errorf("endpoints informer cache is out of date, resource version %s already processed for endpoints %s", current.ResourceVersion, key)
	}
	create := current.ResourceVersion == ""

	wantLabels := endpointsLabels(service)
	if !create && equalSubsets(current.Subsets, subsets) && maps.Equal(current.Labels, wantLabels) &&
		capacityAnnotationSetCorrectly(current.Annotations, current.Subsets) {
		return nil
	}

	desired := current.DeepCopy()
	desired.Subsets = subsets
	desired.Labels = wantLabels
	if desired.Annotations == nil {
		desired.Annotations = map[string]string{}
	}
	if triggerTime.IsZero() {
		delete(desired.Annotations, corev1.EndpointsLastChangeTriggerTime)
	} else {
		desired.Annotations[corev1.EndpointsLastChangeTriggerTime] = triggerTime.UTC().Format(time.RFC3339Nano)
	}
	if truncateEndpoints(desired) {
		desired.Annotations[corev1.EndpointsOverCapacity] = truncated
	} else {
		delete(desired.Annotations, corev1.EndpointsOverCapacity)
	}

	e.logger.Debug("Update endpoints", "service", key, "readyEndpoints", ready, "notreadyEndpoints", notReady)
	if create {
		_, err = e.client.CoreV1().Endpoints(namespace).Create(ctx, desired, metav1.CreateOptions{})
	} else {
		var updated *corev1.Endpoints
		updated, err = e.client.CoreV1().Endpoints(namespace).Update(ctx, desired, metav1.UpdateOptions{})
		if err == nil && updated.ResourceVersion != current.ResourceVersion {
			// Until the cache shows a newer version, what it holds is older
			// than what this sync wrote.
			e.stale.markStale(key, current.ResourceVersion)
		}
	}
	if err == nil {
		return nil
	}
	if create && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		// Creates in a terminating namespace keep failing: drop the item.
		return nil
	}
	if create {
		e.recorder.Eventf(desired, corev1.EventTypeWarning, "FailedToCreateEndpoint", "Failed to create endpoint for service %v/%v: %v", namespace, name, err)
		return fmt.Errorf("create endpoints %s: %w", key, err)
	}
	e.recorder.Eventf(desired, corev1.EventTypeWarning, "FailedToUpdateEndpoint", "Failed to update endpoint %v/%v: %v", namespace, name, err)
	return fmt.Errorf("update endpoints %s: %w", key, err)
}

// endpointsLabels are the Service's labels, plus the headless marker for a
// Service without a cluster IP (DNS answers with the pod IPs for those) and
// the managed-by label.
func endpointsLabels(service *corev1.Service) map[string]string {
	out := make(map[string]string, len(service.Labels)+2)
	maps.Copy(out, service.Labels)
	delete(out, corev1.IsHeadlessService)
	if service.Spec.ClusterIP == corev1.ClusterIPNone || service.Spec.ClusterIP == "" {
		out[corev1.IsHeadlessService] = ""
	}
	out[LabelManagedBy] = managedByValue
	return out
}

// equalSubsets compares subsets ignoring the pods' resourceVersions in the
// target references, so that a pod update that changes nothing the
// endpoints show writes nothing.
func equalSubsets(a, b []corev1.EndpointSubset) bool {
	return apiequality.Semantic.DeepEqual(withoutResourceVersions(a), withoutResourceVersions(b))
}

func withoutResourceVersions(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	out := make([]corev1.EndpointSubset, len(subsets))
	for i := range subsets {
		s := subsets[i].DeepCopy()
		for _, addrs := range [][]corev1.EndpointAddress{s.Addresses, s.NotReadyAddresses} {
			for j := range addrs {
				if addrs[j].TargetRef != nil {
					addrs[j].TargetRef.ResourceVersion = ""
				}
			}
		}
		out[i] = *s
	}
	return out
}

// checkLeftoverEndpoints queues the Service of every Endpoints in the
// cache, so that Endpoints whose Service was deleted while no controller
// ran are deleted too. Endpoints holding a leader-election record (an old
// way of electing leaders) are not a Service's and are skipped.
func (e *Controller) checkLeftoverEndpoints() {
	list, err := e.endpointsLister.List(labels.Everything())
	if err != nil {
		e.logger.Error("Unable to list endpoints; orphaned endpoints will not be cleaned up", "err", err)
		return
	}
	for _, ep := range list {
		if _, ok := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]; ok {
			continue
		}
		e.enqueueService(ep)
	}
}

// staleTracker remembers, per Service, the resourceVersion of the
// Endpoints that its last update replaced. Seeing that version in the
// cache again means the cache has not caught up with the update yet, and a
// sync from it would undo the update.
type staleTracker struct {
	mu       sync.Mutex
	replaced map[string]string // Service key -> replaced resourceVersion
}

func newStaleTracker() *staleTracker { return &staleTracker{replaced: map[string]string{}} }

func (s *staleTracker) markStale(key, resourceVersion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replaced[key] = resourceVersion
}

func (s *staleTracker) isStale(key string, ep *corev1.Endpoints) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replaced[key] != "" && s.replaced[key] == ep.ResourceVersion
}

func (s *staleTracker) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.replaced, key)
}
