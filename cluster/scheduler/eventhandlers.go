package scheduler

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/scheduler/internal/queue"
)

// addAllEventHandlers wires the informers to the cache and the queue, as
// upstream: bound pods go to the cache, pending pods of this scheduler to
// the queue, nodes to the cache. Changes that may let a waiting pod fit
// move the queue's unschedulable pods back into play.
func (s *Scheduler) addAllEventHandlers() error {
	pods := s.informerFactory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(toolscache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			pod, ok := podOf(obj)
			return ok && assignedPod(pod)
		},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    s.addPodToCache,
			UpdateFunc: s.updatePodInCache,
			DeleteFunc: s.deletePodFromCache,
		},
	}); err != nil {
		return fmt.Errorf("add bound pod handler: %w", err)
	}
	if _, err := pods.AddEventHandler(toolscache.FilteringResourceEventHandler{
		// A pod that gets bound leaves this filter: the handler sees a
		// delete and the queue forgets it.
		FilterFunc: func(obj any) bool {
			pod, ok := podOf(obj)
			return ok && !assignedPod(pod) && responsibleForPod(pod)
		},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    s.addPodToSchedulingQueue,
			UpdateFunc: s.updatePodInSchedulingQueue,
			DeleteFunc: s.deletePodFromSchedulingQueue,
		},
	}); err != nil {
		return fmt.Errorf("add pending pod handler: %w", err)
	}
	if _, err := s.informerFactory.Core().V1().Nodes().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    s.addNodeToCache,
		UpdateFunc: s.updateNodeInCache,
		DeleteFunc: s.deleteNodeFromCache,
	}); err != nil {
		return fmt.Errorf("add node handler: %w", err)
	}
	return nil
}

// podOf unwraps a pod, also from the tombstone of a missed delete.
func podOf(obj any) (*v1.Pod, bool) {
	switch t := obj.(type) {
	case *v1.Pod:
		return t, true
	case toolscache.DeletedFinalStateUnknown:
		pod, ok := t.Obj.(*v1.Pod)
		return pod, ok
	}
	return nil, false
}

func nodeOf(obj any) (*v1.Node, bool) {
	switch t := obj.(type) {
	case *v1.Node:
		return t, true
	case toolscache.DeletedFinalStateUnknown:
		node, ok := t.Obj.(*v1.Node)
		return node, ok
	}
	return nil, false
}

func assignedPod(pod *v1.Pod) bool { return pod.Spec.NodeName != "" }

// responsibleForPod reports whether the pod asks for this scheduler (an
// empty name is the API server's default, default-scheduler).
func responsibleForPod(pod *v1.Pod) bool {
	return pod.Spec.SchedulerName == SchedulerName || pod.Spec.SchedulerName == ""
}

func (s *Scheduler) addPodToCache(obj any) {
	pod, _ := podOf(obj)
	if err := s.cache.AddPod(pod); err != nil {
		s.log.Error("scheduler cache AddPod failed", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	s.queue.AssignedPodAdded(pod)
}

func (s *Scheduler) updatePodInCache(oldObj, newObj any) {
	oldPod, _ := podOf(oldObj)
	newPod, _ := podOf(newObj)
	if oldPod.UID != newPod.UID {
		// A delete and a re-create merged into one update.
		s.deletePodFromCache(oldObj)
		s.addPodToCache(newObj)
		return
	}
	if err := s.cache.UpdatePod(oldPod, newPod); err != nil {
		s.log.Error("scheduler cache UpdatePod failed", "pod", newPod.Namespace+"/"+newPod.Name, "err", err)
	}
	s.queue.AssignedPodUpdated(oldPod, newPod)
}

func (s *Scheduler) deletePodFromCache(obj any) {
	pod, ok := podOf(obj)
	if !ok {
		return
	}
	if err := s.cache.RemovePod(pod); err != nil {
		s.log.Error("scheduler cache RemovePod failed", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	// Its resources are free: any waiting pod may fit now.
	s.queue.MoveAllToActiveOrBackoffQueue(nil)
}

func (s *Scheduler) addPodToSchedulingQueue(obj any) {
	pod, _ := podOf(obj)
	s.queue.Add(pod)
}

func (s *Scheduler) updatePodInSchedulingQueue(oldObj, newObj any) {
	oldPod, _ := podOf(oldObj)
	newPod, _ := podOf(newObj)
	// A resync delivers the same object again; scheduling it twice would
	// be wrong.
	if oldPod.ResourceVersion == newPod.ResourceVersion {
		return
	}
	s.queue.Update(oldPod, newPod)
}

func (s *Scheduler) deletePodFromSchedulingQueue(obj any) {
	if pod, ok := podOf(obj); ok {
		s.queue.Delete(pod)
	}
}

func (s *Scheduler) addNodeToCache(obj any) {
	node, _ := nodeOf(obj)
	s.cache.AddNode(node)
	s.queue.MoveAllToActiveOrBackoffQueue(nil)
}

func (s *Scheduler) updateNodeInCache(oldObj, newObj any) {
	oldNode, _ := nodeOf(oldObj)
	newNode, _ := nodeOf(newObj)
	s.cache.UpdateNode(oldNode, newNode)
	if queue.NodeSchedulingPropertiesChanged(oldNode, newNode) {
		s.queue.MoveAllToActiveOrBackoffQueue(nil)
	}
}

func (s *Scheduler) deleteNodeFromCache(obj any) {
	node, ok := nodeOf(obj)
	if !ok {
		return
	}
	if err := s.cache.RemoveNode(node); err != nil {
		s.log.Error("scheduler cache RemoveNode failed", "node", node.Name, "err", err)
	}
}
