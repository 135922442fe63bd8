package endpointslice

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/klab-dev/klab/cluster/controller/endpointslice/endpointsliceutil"
)

// reconciler turns a Service's pods and its existing slices into the
// creates, updates and deletes that make the slices list exactly those
// pods, changing as few slices as it can: an endpoint that did not change
// stays where it is, a changed one is updated in its slice, new ones fill
// slices already being written before any other, and only then go into an
// untouched slice they fit in whole, or new slices.
type reconciler struct {
	client               kubernetes.Interface
	nodeLister           corelisters.NodeLister
	maxEndpointsPerSlice int
	tracker              *sliceTracker
}

// plan is the writes one reconcile makes.
type plan struct {
	create, update, delete []*discoveryv1.EndpointSlice
}

func (p *plan) add(o plan) {
	p.create = append(p.create, o.create...)
	p.update = append(p.update, o.update...)
	p.delete = append(p.delete, o.delete...)
}

// reconcile converges the Service's slices. existing are the slices of
// this controller labelled with the Service's name.
func (r *reconciler) reconcile(ctx context.Context, service *corev1.Service, pods []*corev1.Pod, existing []*discoveryv1.EndpointSlice, triggerTime time.Time) error {
	wanted := addressTypesForService(service)
	byType := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	var unwanted []*discoveryv1.EndpointSlice
	for _, s := range existing {
		if !wanted.Has(s.AddressType) {
			unwanted = append(unwanted, s)
			continue
		}
		byType[s.AddressType] = append(byType[s.AddressType], s)
	}
	var errs []error
	for _, addressType := range sets.List(wanted) {
		if err := r.reconcileByAddressType(ctx, service, pods, byType[addressType], triggerTime, addressType); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range unwanted {
		if err := r.deleteSlice(ctx, service, s); err != nil {
			errs = append(errs, fmt.Errorf("error deleting %s EndpointSlice for Service %s/%s: %w", s.Name, service.Namespace, service.Name, err))
		}
	}
	return utilerrors.NewAggregate(errs)
}

func (r *reconciler) reconcileByAddressType(ctx context.Context, service *corev1.Service, pods []*corev1.Pod,
	existing []*discoveryv1.EndpointSlice, triggerTime time.Time, addressType discoveryv1.AddressType) error {
	var errs []error
	var total plan

	// Existing slices by their ports; slices of another Service object of
	// the same name (deleted and recreated) are not ours to reuse.
	existingByPorts := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if ownedBy(s, service) {
			key := portMapKey(s.Ports)
			existingByPorts[key] = append(existingByPorts[key], s)
		} else {
			total.delete = append(total.delete, s)
		}
	}

	// Desired endpoints, grouped by the ports their pod serves.
	desiredByPorts := map[string]map[string]*discoveryv1.Endpoint{}
	portsByKey := map[string][]discoveryv1.EndpointPort{}
	for _, pod := range pods {
		// Terminating pods stay, marked terminating, so that kube-proxy can
		// drain them.
		if !endpointsliceutil.ShouldPodBeInEndpoints(pod, true) {
			continue
		}
		ports := endpointPorts(service, pod)
		key := portMapKey(ports)
		if desiredByPorts[key] == nil {
			desiredByPorts[key] = map[string]*discoveryv1.Endpoint{}
			portsByKey[key] = ports
		}
		node, err := r.nodeLister.Get(pod.Spec.NodeName)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				return err
			}
			// A pod on a Node that does not exist (yet) is left out and the
			// Service retried, unless the Service publishes every address.
			if !service.Spec.PublishNotReadyAddresses {
				errs = append(errs, fmt.Errorf("skipping Pod %s for Service %s/%s: Node %s Not Found", pod.Name, service.Namespace, service.Name, pod.Spec.NodeName))
				continue
			}
		}
		ep := podToEndpoint(pod, node, service, addressType)
		if len(ep.Addresses) > 0 {
			desiredByPorts[key][endpointKey(&ep)] = &ep
		}
	}

	for _, key := range slices.Sorted(maps.Keys(desiredByPorts)) {
		total.add(r.reconcileByPortMapping(service, existingByPorts[key], desiredByPorts[key], portsByKey[key], addressType))
	}
	// Slices of port sets no pod serves any more go.
	for key, slicesOfPorts := range existingByPorts {
		if _, ok := desiredByPorts[key]; !ok {
			total.delete = append(total.delete, slicesOfPorts...)
		}
	}

	// A Service with no endpoints keeps one empty placeholder slice, so
	// that consumers see "no endpoints" rather than "not synced yet".
	if len(existing) == len(total.delete) && len(total.create) == 0 {
		placeholder := newEndpointSlice(service, []discoveryv1.EndpointPort{}, addressType)
		if len(total.delete) == 1 && isPlaceholderOf(total.delete[0], placeholder) {
			total.delete = nil
		} else {
			total.create = append(total.create, placeholder)
		}
	}

	if err := r.finalize(ctx, service, total, triggerTime); err != nil {
		errs = append(errs, err)
	}
	return utilerrors.NewAggregate(errs)
}

// isPlaceholderOf reports whether an existing slice is already the
// placeholder: no endpoints, no ports, the same owner and labels.
func isPlaceholderOf(existing, placeholder *discoveryv1.EndpointSlice) bool {
	return len(existing.Endpoints) == 0 && len(existing.Ports) == 0 &&
		existing.AddressType == placeholder.AddressType &&
		existing.Namespace == placeholder.Namespace &&
		apiequality.Semantic.DeepEqual(existing.OwnerReferences, placeholder.OwnerReferences) &&
		apiequality.Semantic.DeepEqual(existing.Labels, placeholder.Labels)
}

// reconcileByPortMapping plans the slices of one port set:
//  1. In each existing slice, keep the endpoints still desired (updating
//     changed ones), drop the others; a slice left empty is deleted, a
//     changed one or one whose Service labels changed is updated.
//  2. Fill the slices being updated with new endpoints, fullest first.
//  3. Put the rest into an untouched slice they fit in whole, or into new
//     slices of at most maxEndpointsPerSlice endpoints.
func (r *reconciler) reconcileByPortMapping(service *corev1.Service, existing []*discoveryv1.EndpointSlice,
	desired map[string]*discoveryv1.Endpoint, ports []discoveryv1.EndpointPort, addressType discoveryv1.AddressType) plan {
	var p plan
	var toUpdate, unchanged []*discoveryv1.EndpointSlice

	for _, s := range existing {
		var kept []discoveryv1.Endpoint
		changed := false
		for i := range s.Endpoints {
			key := endpointKey(&s.Endpoints[i])
			want, ok := desired[key]
			if !ok {
				continue
			}
			kept = append(kept, *want)
			if !endpointsEqualBeyondKey(want, &s.Endpoints[i]) {
				changed = true
			}
			// Placed: it needs no other slice.
			delete(desired, key)
		}
		labels, labelsChanged := sliceLabels(s, service)
		switch {
		case changed || len(kept) != len(s.Endpoints):
			if len(kept) == 0 {
				p.delete = append(p.delete, s)
				continue
			}
			updated := s.DeepCopy()
			updated.Endpoints = kept
			updated.Labels = labels
			toUpdate = append(toUpdate, updated)
		case labelsChanged:
			updated := s.DeepCopy()
			updated.Labels = labels
			toUpdate = append(toUpdate, updated)
		default:
			unchanged = append(unchanged, s)
		}
	}

	// What is left to place, in a stable order so that a sync is
	// repeatable.
	remaining := make([]*discoveryv1.Endpoint, 0, len(desired))
	for _, key := range slices.Sorted(maps.Keys(desired)) {
		remaining = append(remaining, desired[key])
	}
	fill := func(s *discoveryv1.EndpointSlice) {
		for len(remaining) > 0 && len(s.Endpoints) < r.maxEndpointsPerSlice {
			s.Endpoints = append(s.Endpoints, *remaining[0])
			remaining = remaining[1:]
		}
	}

	// 2. Slices being written anyway take new endpoints first.
	slices.SortStableFunc(toUpdate, func(a, b *discoveryv1.EndpointSlice) int {
		return cmp.Compare(len(b.Endpoints), len(a.Endpoints))
	})
	for _, s := range toUpdate {
		fill(s)
	}

	// 3. The rest: one untouched slice that takes them all, as full as
	// possible afterwards, else new slices.
	for len(remaining) > 0 {
		var target *discoveryv1.EndpointSlice
		if len(remaining) < r.maxEndpointsPerSlice {
			if i := sliceToFill(unchanged, len(remaining), r.maxEndpointsPerSlice); i >= 0 {
				target = unchanged[i].DeepCopy()
				unchanged = slices.Delete(unchanged, i, i+1)
				toUpdate = append(toUpdate, target)
			}
		}
		if target == nil {
			target = newEndpointSlice(service, ports, addressType)
			p.create = append(p.create, target)
		}
		fill(target)
	}
	p.update = toUpdate
	return p
}

// sliceToFill returns the index of the slice that ends closest to full
// after taking n endpoints, or -1 if none has room.
func sliceToFill(candidates []*discoveryv1.EndpointSlice, n, max int) int {
	best, bestGap := -1, max
	for i, s := range candidates {
		gap := max - (n + len(s.Endpoints))
		if gap >= 0 && gap < bestGap {
			best, bestGap = i, gap
		}
	}
	return best
}

// finalize sends the plan: creates (turned into updates of slices that
// would be deleted, to save a delete and a create), updates, deletes.
func (r *reconciler) finalize(ctx context.Context, service *corev1.Service, p plan, triggerTime time.Time) error {
	for i := 0; i < len(p.delete) && len(p.create) > 0; {
		old := p.delete[i]
		s := p.create[len(p.create)-1]
		if old.AddressType == s.AddressType && ownedBy(old, service) {
			s.Name = old.Name
			s.GenerateName = old.GenerateName
			s.ResourceVersion = old.ResourceVersion
			p.create = p.create[:len(p.create)-1]
			p.update = append(p.update, s)
			p.delete = slices.Delete(p.delete, i, i+1)
			continue
		}
		i++
	}

	// No new slices for a Service being deleted: the garbage collector is
	// deleting its slices, and new ones would race with it.
	if service.DeletionTimestamp == nil {
		for _, s := range p.create {
			setTriggerTime(s, triggerTime)
			created, err := r.client.DiscoveryV1().EndpointSlices(service.Namespace).Create(ctx, s, metav1.CreateOptions{})
			if err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				return fmt.Errorf("failed to create EndpointSlice for Service %s/%s: %w", service.Namespace, service.Name, err)
			}
			r.tracker.written(service, created, "")
		}
	}
	for _, s := range p.update {
		setTriggerTime(s, triggerTime)
		updated, err := r.client.DiscoveryV1().EndpointSlices(service.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("failed to update %s EndpointSlice for Service %s/%s: %w", s.Name, service.Namespace, service.Name, err)
		}
		r.tracker.written(service, updated, s.ResourceVersion)
	}
	for _, s := range p.delete {
		if err := r.deleteSlice(ctx, service, s); err != nil {
			return fmt.Errorf("failed to delete %s EndpointSlice for Service %s/%s: %w", s.Name, service.Namespace, service.Name, err)
		}
	}
	return nil
}

func (r *reconciler) deleteSlice(ctx context.Context, service *corev1.Service, s *discoveryv1.EndpointSlice) error {
	err := r.client.DiscoveryV1().EndpointSlices(service.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	r.tracker.deleted(service, s)
	return nil
}

func setTriggerTime(s *discoveryv1.EndpointSlice, triggerTime time.Time) {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	if triggerTime.IsZero() {
		delete(s.Annotations, corev1.EndpointsLastChangeTriggerTime)
		return
	}
	s.Annotations[corev1.EndpointsLastChangeTriggerTime] = triggerTime.UTC().Format(time.RFC3339Nano)
}
