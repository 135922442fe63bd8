package endpointslice

import (
	"fmt"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/controller/endpointslice/endpointsliceutil"
)

// enqueueService queues a Service (or its tombstone) at once.
func (ec *Controller) enqueueService(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get key for object %+v: %w", obj, err))
		return
	}
	ec.queue.Add(key)
}

// addPod queues the Services selecting a new pod, at once: kube-proxy
// waits on these slices.
func (ec *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	services, err := endpointsliceutil.ServicesForPod(ec.serviceLister, pod.Namespace, pod.Labels)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("unable to get pod %s/%s's service memberships: %w", pod.Namespace, pod.Name, err))
		return
	}
	for key := range services {
		ec.queue.Add(key)
	}
}

// updatePod queues the Services a pod change can show in.
func (ec *Controller) updatePod(old, cur any) {
	services, err := endpointsliceutil.ServicesToUpdateOnPodChange(ec.serviceLister, old.(*corev1.Pod), cur.(*corev1.Pod))
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("unable to get pod service memberships: %w", err))
		return
	}
	for key := range services {
		ec.queue.Add(key)
	}
}

// deletePod queues the Services that selected a deleted pod.
func (ec *Controller) deletePod(obj any) {
	if pod, ok := controllerutil.DeletedObject[*corev1.Pod](obj); ok {
		ec.addPod(pod)
	}
}

// onEndpointSliceAdd syncs the Service of a managed slice that someone
// else created.
func (ec *Controller) onEndpointSliceAdd(obj any) {
	s := obj.(*discoveryv1.EndpointSlice)
	if managedByController(s) && ec.tracker.shouldSync(s) {
		ec.queueServiceForEndpointSlice(s)
	}
}

// onEndpointSliceUpdate syncs a slice's Service when someone else changed
// the slice, when the slice moved to another Service, or when it was taken
// from or given to this controller.
func (ec *Controller) onEndpointSliceUpdate(oldObj, newObj any) {
	prev, cur := oldObj.(*discoveryv1.EndpointSlice), newObj.(*discoveryv1.EndpointSlice)
	if prev.Labels[discoveryv1.LabelServiceName] != cur.Labels[discoveryv1.LabelServiceName] {
		ec.queueServiceForEndpointSlice(cur)
		ec.queueServiceForEndpointSlice(prev)
		return
	}
	if managedByController(prev) != managedByController(cur) || (managedByController(cur) && ec.tracker.shouldSync(cur)) {
		ec.queueServiceForEndpointSlice(cur)
	}
}

// onEndpointSliceDelete syncs the Service of a managed slice that someone
// else deleted.
func (ec *Controller) onEndpointSliceDelete(obj any) {
	s, ok := controllerutil.DeletedObject[*discoveryv1.EndpointSlice](obj)
	if !ok {
		return
	}
	if managedByController(s) && !ec.tracker.handleDeletion(s) {
		ec.queueServiceForEndpointSlice(s)
	}
}

// queueServiceForEndpointSlice queues the slice's Service after a short
// delay, so that several slice changes are handled by one sync.
func (ec *Controller) queueServiceForEndpointSlice(s *discoveryv1.EndpointSlice) {
	name := s.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return
	}
	ec.queue.AddAfter(s.Namespace+"/"+name, ec.sliceChangeDelay)
}

func managedByController(s *discoveryv1.EndpointSlice) bool {
	return s.Labels[discoveryv1.LabelManagedBy] == controllerQualifiedName
}
