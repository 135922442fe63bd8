package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// podNodeNameIndex indexes pods by spec.nodeName (upstream's
// PodNodeNameKeyIndex), so both controllers find a node's pods without
// scanning every pod.
const podNodeNameIndex = "spec.nodeName"

// addPodNodeNameIndexer adds the index to the shared pod informer unless
// another controller already did.
func addPodNodeNameIndexer(informer cache.SharedIndexInformer) error {
	if _, exists := informer.GetIndexer().GetIndexers()[podNodeNameIndex]; exists {
		return nil
	}
	return informer.AddIndexers(cache.Indexers{podNodeNameIndex: func(obj interface{}) ([]string, error) {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{pod.Spec.NodeName}, nil
	}})
}

// podsByNode lists the pods on a node from the pod informer's index.
func podsByNode(indexer cache.Indexer, nodeName string) ([]*v1.Pod, error) {
	objs, err := indexer.ByIndex(podNodeNameIndex, nodeName)
	if err != nil {
		return nil, err
	}
	pods := make([]*v1.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*v1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

func (c *Controller) podsAssignedToNode(nodeName string) ([]*v1.Pod, error) {
	return podsByNode(c.podIndexer, nodeName)
}

// updatePodCondition sets cond in status and reports whether anything
// changed. The transition time moves only when the status does.
func updatePodCondition(status *v1.PodStatus, cond v1.PodCondition, now time.Time) bool {
	cond.LastTransitionTime = metav1.NewTime(now)
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != cond.Type {
			continue
		}
		if cond.Status == old.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
		same := cond.Status == old.Status && cond.Reason == old.Reason && cond.Message == old.Message &&
			cond.LastProbeTime.Equal(&old.LastProbeTime) && cond.LastTransitionTime.Equal(&old.LastTransitionTime)
		*old = cond
		return !same
	}
	status.Conditions = append(status.Conditions, cond)
	return true
}

// markPodsNotReady sets the Ready condition of the node's pods to False, so
// that endpoints stop sending them traffic while nobody knows whether they
// run.
func (c *Controller) markPodsNotReady(ctx context.Context, pods []*v1.Pod, nodeName string) error {
	var errs []error
	for _, p := range pods {
		if p.Spec.NodeName != nodeName {
			continue
		}
		pod := p.DeepCopy() // from the informer cache: never change it in place
		var ready *v1.PodCondition
		for i := range pod.Status.Conditions {
			if pod.Status.Conditions[i].Type == v1.PodReady {
				ready = &pod.Status.Conditions[i]
			}
		}
		if ready == nil {
			continue
		}
		cond := *ready
		cond.Status = v1.ConditionFalse
		if !updatePodCondition(&pod.Status, cond, c.clock.Now()) {
			continue
		}
		c.logger.Info("Updating ready status of pod to false", "pod", pod.Namespace+"/"+pod.Name)
		if _, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue // already gone
			}
			errs = append(errs, fmt.Errorf("update status of pod %s/%s: %w", pod.Namespace, pod.Name, err))
			continue
		}
		// After the update, so that the event names a pod that exists.
		c.recorder.Event(pod, v1.EventTypeWarning, "NodeNotReady", "Node is not ready")
		c.observe(Transition{Kind: TransitionPodNotReady, Node: nodeName, Pod: pod.Namespace + "/" + pod.Name})
	}
	return errors.Join(errs...)
}

// nodeRef is the object reference events about a node point to.
func nodeRef(name string, uid types.UID) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}
}

// recordNodeEvent records an event about a node in upstream's words.
func (c *Controller) recordNodeEvent(name string, uid types.UID, eventType, reason, message string) {
	c.recorder.Eventf(nodeRef(name, uid), eventType, reason, "Node %s event: %s", name, message)
}

// recordNodeStatusChange records that a node's status is now newStatus
// ("NodeNotReady").
func (c *Controller) recordNodeStatusChange(node *v1.Node, newStatus string) {
	c.recorder.Eventf(nodeRef(node.Name, node.UID), v1.EventTypeNormal, newStatus, "Node %s status is now: %s", node.Name, newStatus)
}

// podUpdateItem names a pod whose node assignment changed.
type podUpdateItem struct {
	namespace, name string
}

// podUpdated queues a pod that was just bound to a node: if that node is
// not ready, the pod must not look ready either. The monitor pass handles
// the pods it sees; this catches the ones the cache delivered late.
func (c *Controller) podUpdated(oldPod, newPod *v1.Pod) {
	if newPod == nil {
		return
	}
	if newPod.Spec.NodeName != "" && (oldPod == nil || newPod.Spec.NodeName != oldPod.Spec.NodeName) {
		c.podUpdateQueue.Add(podUpdateItem{namespace: newPod.Namespace, name: newPod.Name})
	}
}

// processPod marks a newly bound pod not ready if its node is not ready.
func (c *Controller) processPod(ctx context.Context, item podUpdateItem) error {
	pod, err := c.podLister.Pods(item.namespace).Get(item.name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	nodeName := pod.Spec.NodeName
	health := c.health.get(nodeName)
	if health == nil {
		// Not seen by a monitor pass yet; the pass will handle the pod.
		return nil
	}
	if _, err := c.nodeLister.Get(nodeName); err != nil {
		return err
	}
	ready := getNodeCondition(health.status, v1.NodeReady)
	if ready == nil || ready.Status == v1.ConditionTrue {
		return nil
	}
	return c.markPodsNotReady(ctx, []*v1.Pod{pod}, nodeName)
}
