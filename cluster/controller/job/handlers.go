package job

import (
	"reflect"
	"time"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// The handlers only decide which Jobs (and orphan pods) to sync, and
// record what the informer showed against the expectations.

// enqueueAfter adds the Job's key after delay. Pod events wait a batch
// period, so that a burst of them makes one sync.
func (jm *Controller) enqueueAfter(job *batchv1.Job, delay time.Duration) {
	if key, err := cache.MetaNamespaceKeyFunc(job); err == nil {
		jm.queue.AddAfter(key, delay)
	}
}

func (jm *Controller) enqueueBatched(job *batchv1.Job) { jm.enqueueAfter(job, jm.batchPeriod) }

func (jm *Controller) enqueueOrphanPod(pod *corev1.Pod) {
	if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
		jm.orphanQueue.Add(key)
	}
}

func (jm *Controller) addJob(obj any) { jm.enqueueAfter(obj.(*batchv1.Job), 0) }

func (jm *Controller) updateJob(old, cur any) {
	oldJob, curJob := old.(*batchv1.Job), cur.(*batchv1.Job)
	if curJob.Generation == oldJob.Generation {
		// A status write, most likely this controller's own: batch it.
		jm.enqueueBatched(curJob)
	} else {
		jm.enqueueAfter(curJob, 0)
	}
	// A finished Job's pods must lose their finalizers even if a sync
	// missed some.
	if isJobFinished(curJob) {
		jm.cleanupPodFinalizers(curJob)
	}
	// A changed deadline needs a sync when it passes.
	if curJob.Status.StartTime != nil && curJob.Spec.ActiveDeadlineSeconds != nil {
		if oldADS := oldJob.Spec.ActiveDeadlineSeconds; oldADS == nil || *oldADS != *curJob.Spec.ActiveDeadlineSeconds {
			total := time.Duration(*curJob.Spec.ActiveDeadlineSeconds) * time.Second
			jm.enqueueAfter(curJob, total-jm.clock.Since(curJob.Status.StartTime.Time))
		}
	}
}

func (jm *Controller) deleteJob(obj any) {
	job, ok := controllerutil.DeletedObject[*batchv1.Job](obj)
	if !ok {
		return
	}
	jm.enqueueAfter(job, 0)
	jm.cleanupPodFinalizers(job)
}

// cleanupPodFinalizers queues the Job's pods that still carry the
// tracking finalizer for its removal.
func (jm *Controller) cleanupPodFinalizers(job *batchv1.Job) {
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return
	}
	pods, err := jm.podLister.Pods(job.Namespace).List(selector)
	if err != nil {
		return
	}
	for _, pod := range pods {
		if metav1.IsControlledBy(pod, job) && hasJobTrackingFinalizer(pod) {
			jm.enqueueOrphanPod(pod)
		}
	}
}

func (jm *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	job, err := jm.jobLister.Jobs(namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

// jobsForPod returns the Jobs whose selector matches an orphan pod.
func (jm *Controller) jobsForPod(pod *corev1.Pod) []*batchv1.Job {
	if len(pod.Labels) == 0 {
		return nil
	}
	list, err := jm.jobLister.Jobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return controllerutil.Selecting(list, func(c *batchv1.Job) *metav1.LabelSelector { return c.Spec.Selector }, pod.Labels)
}

func jobKey(job *batchv1.Job) string {
	key, _ := cache.MetaNamespaceKeyFunc(job)
	return key
}

func (jm *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// Seen for the first time while being deleted (after a restart):
		// not a creation to observe.
		jm.deletePod(pod, false)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		job := jm.resolveControllerRef(pod.Namespace, ref)
		if job == nil {
			return
		}
		jm.expectations.CreationObserved(jobKey(job))
		jm.enqueueBatched(job)
		return
	}
	if hasJobTrackingFinalizer(pod) {
		jm.enqueueOrphanPod(pod)
	}
	for _, job := range jm.jobsForPod(pod) {
		jm.enqueueBatched(job)
	}
}

func (jm *Controller) updatePod(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if curPod.ResourceVersion == oldPod.ResourceVersion {
		return // a periodic resync
	}
	if curPod.DeletionTimestamp != nil {
		// A graceful delete: replace the pod now, not when it is gone.
		jm.deletePod(curPod, false)
		return
	}
	// The current state decides: during a change of owner the finalizer
	// may be added and removed again within one event.
	finalizerRemoved := !hasJobTrackingFinalizer(curPod)
	curRef, oldRef := metav1.GetControllerOf(curPod), metav1.GetControllerOf(oldPod)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if job := jm.resolveControllerRef(oldPod.Namespace, oldRef); job != nil {
			if finalizerRemoved {
				jm.finalizerExpectations.finalizerRemovalObserved(jobKey(job), string(curPod.UID))
			}
			jm.enqueueBatched(job)
		}
	}
	if curRef != nil {
		job := jm.resolveControllerRef(curPod.Namespace, curRef)
		if job == nil {
			return
		}
		if finalizerRemoved {
			jm.finalizerExpectations.finalizerRemovalObserved(jobKey(job), string(curPod.UID))
		}
		jm.enqueueBatched(job)
		return
	}
	if hasJobTrackingFinalizer(curPod) {
		jm.enqueueOrphanPod(curPod)
	}
	if refChanged || !reflect.DeepEqual(curPod.Labels, oldPod.Labels) {
		for _, job := range jm.jobsForPod(curPod) {
			jm.enqueueBatched(job)
		}
	}
}

// deletePod handles a pod that is gone (final) or being deleted.
func (jm *Controller) deletePod(obj any, final bool) {
	pod, ok := controllerutil.DeletedObject[*corev1.Pod](obj)
	if !ok {
		return
	}
	hasFinalizer := hasJobTrackingFinalizer(pod)
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		// The garbage collector may have removed the reference of a pod
		// that still has the finalizer.
		if hasFinalizer {
			jm.enqueueOrphanPod(pod)
		}
		return
	}
	job := jm.resolveControllerRef(pod.Namespace, ref)
	if job == nil || isJobFinished(job) {
		// No Job sync will remove this finalizer.
		if hasFinalizer {
			jm.enqueueOrphanPod(pod)
		}
		return
	}
	key := jobKey(job)
	jm.expectations.DeletionObserved(key)
	if final || !hasFinalizer {
		jm.finalizerExpectations.finalizerRemovalObserved(key, string(pod.UID))
	}
	jm.enqueueBatched(job)
}
