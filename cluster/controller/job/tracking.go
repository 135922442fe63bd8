package job

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
)

// uidTrackingExpectations remembers, per Job, the pods whose tracking
// finalizer this controller removed and the informer has not yet shown
// without it. Until then the cache still shows the finalizer, and such a
// pod must not be counted a second time.
type uidTrackingExpectations struct {
	mu   sync.Mutex
	uids map[string]sets.Set[string]
}

func newUIDTrackingExpectations() *uidTrackingExpectations {
	return &uidTrackingExpectations{uids: map[string]sets.Set[string]{}}
}

// getExpectedUIDs returns a copy of the Job's expected removals.
func (u *uidTrackingExpectations) getExpectedUIDs(key string) sets.Set[string] {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.uids[key].Clone()
}

func (u *uidTrackingExpectations) expectFinalizersRemoved(key string, uids []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.uids[key] == nil {
		u.uids[key] = sets.New[string]()
	}
	u.uids[key].Insert(uids...)
}

func (u *uidTrackingExpectations) finalizerRemovalObserved(key, uid string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if set := u.uids[key]; set != nil {
		set.Delete(uid)
		if set.Len() == 0 {
			delete(u.uids, key)
		}
	}
}

func (u *uidTrackingExpectations) deleteExpectations(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.uids, key)
}

// uncountedTerminatedPods is status.uncountedTerminatedPods as sets.
type uncountedTerminatedPods struct {
	succeeded, failed sets.Set[types.UID]
}

func newUncountedTerminatedPods(in batchv1.UncountedTerminatedPods) *uncountedTerminatedPods {
	return &uncountedTerminatedPods{succeeded: sets.New(in.Succeeded...), failed: sets.New(in.Failed...)}
}

func hasJobTrackingFinalizer(pod *corev1.Pod) bool {
	return slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer)
}

// removeTrackingFinalizerPatch is a strategic merge patch that removes
// the tracking finalizer, or nil if the pod does not have it.
func removeTrackingFinalizerPatch(pod *corev1.Pod) []byte {
	if !hasJobTrackingFinalizer(pod) {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
		},
	})
	return patch
}

// trackJobStatusAndRemoveFinalizers counts the finished pods: their UIDs
// are written to uncountedTerminatedPods, then their finalizers removed,
// then they move to the succeeded and failed counters. Once the Job is
// decided, the interim SuccessCriteriaMet or FailureTarget condition goes
// in first and Complete or Failed follows when no pod is left uncounted
// or terminating. needsFlush says the status changed already.
func (jm *Controller) trackJobStatusAndRemoveFinalizers(ctx context.Context, jobCtx *syncJobCtx, needsFlush bool) error {
	job := jobCtx.job
	isIndexed := isIndexedJob(job)
	if isIndexed {
		// Completed indexes are added in order.
		slices.SortStableFunc(jobCtx.pods, func(a, b *corev1.Pod) int {
			return getCompletionIndex(a.Annotations) - getCompletionIndex(b.Annotations)
		})
	}
	uidsWithFinalizer := sets.New[types.UID]()
	for _, p := range jobCtx.pods {
		if hasJobTrackingFinalizer(p) && !jobCtx.expectedRmFinalizers.Has(string(p.UID)) {
			uidsWithFinalizer.Insert(p.UID)
		}
	}
	oldCounters := job.Status
	if cleanUncountedPodsWithoutFinalizers(&job.Status, uidsWithFinalizer) {
		needsFlush = true
	}
	uncounted := job.Status.UncountedTerminatedPods
	var podsToRemoveFinalizer []*corev1.Pod
	var newSucceededIndexes []int
	reachedMaxUncountedPods := false
	for _, pod := range jobCtx.pods {
		if !hasJobTrackingFinalizer(pod) || jobCtx.expectedRmFinalizers.Has(string(pod.UID)) {
			continue // counted by an earlier sync
		}
		podFailed := isPodFailed(pod, job)
		if !canRemoveFinalizer(jobCtx, pod, podFailed) {
			continue
		}
		podsToRemoveFinalizer = append(podsToRemoveFinalizer, pod)
		switch {
		case pod.Status.Phase == corev1.PodSucceeded && !jobCtx.uncounted.failed.Has(pod.UID):
			if isIndexed {
				// The index says whether it was counted; no UID needed.
				ix := getCompletionIndex(pod.Annotations)
				if ix != unknownCompletionIndex && ix < int(*job.Spec.Completions) && !jobCtx.prevSucceededIndexes.has(ix) {
					newSucceededIndexes = append(newSucceededIndexes, ix)
					needsFlush = true
				}
			} else if !jobCtx.uncounted.succeeded.Has(pod.UID) {
				uncounted.Succeeded = append(uncounted.Succeeded, pod.UID)
				needsFlush = true
			}
		case podFailed || (jobCtx.finishedCondition != nil && jobCtx.finishedCondition.Type != batchv1.JobSuccessCriteriaMet):
			// Once the Job failed, every pod not yet finished counts as
			// failed.
			ix := getCompletionIndex(pod.Annotations)
			if !jobCtx.uncounted.failed.Has(pod.UID) && (!isIndexed || (ix != unknownCompletionIndex && ix < int(*job.Spec.Completions))) {
				uncounted.Failed = append(uncounted.Failed, pod.UID)
				needsFlush = true
			}
		}
		if len(newSucceededIndexes)+len(uncounted.Succeeded)+len(uncounted.Failed) >= MaxUncountedPods {
			// Keep the status small and let other Jobs have their turn.
			reachedMaxUncountedPods = true
			break
		}
	}
	if isIndexed {
		jobCtx.succeededIndexes = jobCtx.succeededIndexes.withOrderedIndexes(newSucceededIndexes)
		completed := jobCtx.succeededIndexes.String()
		if completed != job.Status.CompletedIndexes {
			needsFlush = true
		}
		job.Status.Succeeded = int32(jobCtx.succeededIndexes.total())
		job.Status.CompletedIndexes = completed
	}
	if c := jobCtx.finishedCondition; c != nil && c.Type == batchv1.JobFailureTarget {
		// Record why the Job failed before its pods' finalizers go.
		job.Status.Conditions = append(job.Status.Conditions, *c)
		needsFlush = true
		jobCtx.finishedCondition = newCondition(batchv1.JobFailed, corev1.ConditionTrue, c.Reason, c.Message, jm.clock.Now())
	}
	if c := jobCtx.finishedCondition; c != nil && c.Type == batchv1.JobSuccessCriteriaMet {
		if hasTrueCondition(job, batchv1.JobSuccessCriteriaMet) == nil {
			job.Status.Conditions = append(job.Status.Conditions, *c)
			needsFlush = true
		}
		jobCtx.finishedCondition = newCondition(batchv1.JobComplete, corev1.ConditionTrue, c.Reason, c.Message, jm.clock.Now())
	}
	needsFlush, err := jm.flushUncountedAndRemoveFinalizers(ctx, jobCtx, podsToRemoveFinalizer, uidsWithFinalizer, &oldCounters, needsFlush)
	if err != nil {
		return err
	}
	finished := !reachedMaxUncountedPods && jm.enactJobFinished(jobCtx)
	if finished {
		needsFlush = true
	}
	if needsFlush {
		updated, err := jm.updateStatus(ctx, jobCtx.job)
		if err != nil {
			return fmt.Errorf("removing uncounted pods from status: %w", err)
		}
		jobCtx.job = updated
		if finished {
			jm.recordJobFinished(jobCtx.job, jobCtx.finishedCondition)
		}
	}
	return nil
}

// flushUncountedAndRemoveFinalizers writes the status if needed (the UIDs
// must be recorded before the finalizers go), stores the backoff record
// that status now accounts for, removes the finalizers, and moves the
// pods whose finalizer is gone from the uncounted lists to the counters.
func (jm *Controller) flushUncountedAndRemoveFinalizers(ctx context.Context, jobCtx *syncJobCtx, podsToRemoveFinalizer []*corev1.Pod, uidsWithFinalizer sets.Set[types.UID], oldCounters *batchv1.JobStatus, needsFlush bool) (bool, error) {
	if needsFlush {
		updated, err := jm.updateStatus(ctx, jobCtx.job)
		if err != nil {
			return needsFlush, fmt.Errorf("adding uncounted pods to status: %w", err)
		}
		jobCtx.job = updated
		jm.backoffStore.update(jobCtx.newBackoffRecord)
		*oldCounters = jobCtx.job.Status
		needsFlush = false
	}
	var rmErr error
	if len(podsToRemoveFinalizer) > 0 {
		var removed []bool
		removed, rmErr = jm.removeTrackingFinalizerFromPods(ctx, jobKey(jobCtx.job), podsToRemoveFinalizer)
		for i, p := range podsToRemoveFinalizer {
			if removed[i] {
				uidsWithFinalizer.Delete(p.UID)
			}
		}
	}
	if cleanUncountedPodsWithoutFinalizers(&jobCtx.job.Status, uidsWithFinalizer) {
		needsFlush = true
	}
	if rmErr != nil && needsFlush {
		// Record the partial progress before reporting the error.
		if updated, err := jm.updateStatus(ctx, jobCtx.job); err != nil {
			return needsFlush, fmt.Errorf("removing uncounted pods from status: %w", err)
		} else {
			jobCtx.job = updated
		}
	}
	return needsFlush, rmErr
}

// cleanUncountedPodsWithoutFinalizers moves the uncounted pods whose
// finalizer is gone into the counters, reporting whether any moved.
func cleanUncountedPodsWithoutFinalizers(status *batchv1.JobStatus, uidsWithFinalizer sets.Set[types.UID]) bool {
	updated := false
	uncounted := status.UncountedTerminatedPods
	keep := func(uids []types.UID) []types.UID {
		var out []types.UID
		for _, uid := range uids {
			if uidsWithFinalizer.Has(uid) {
				out = append(out, uid)
			}
		}
		return out
	}
	if kept := keep(uncounted.Succeeded); len(kept) != len(uncounted.Succeeded) {
		status.Succeeded += int32(len(uncounted.Succeeded) - len(kept))
		uncounted.Succeeded = kept
		updated = true
	}
	if kept := keep(uncounted.Failed); len(kept) != len(uncounted.Failed) {
		status.Failed += int32(len(uncounted.Failed) - len(kept))
		uncounted.Failed = kept
		updated = true
	}
	return updated
}

// removeTrackingFinalizerFromPods patches the finalizer away from each
// pod in parallel, expecting the removals first. It reports per pod
// whether the finalizer is gone (a pod already gone counts).
func (jm *Controller) removeTrackingFinalizerFromPods(ctx context.Context, key string, pods []*corev1.Pod) ([]bool, error) {
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = string(p.UID)
	}
	jm.finalizerExpectations.expectFinalizersRemoved(key, uids)
	removed := make([]bool, len(pods))
	errs := make(chan error, len(pods))
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if patch := removeTrackingFinalizerPatch(pod); patch != nil {
				if err := jm.podControl.PatchPod(ctx, pod.Namespace, pod.Name, patch); err != nil {
					// This removal will never be observed.
					jm.finalizerExpectations.finalizerRemovalObserved(key, string(pod.UID))
					if !apierrors.IsNotFound(err) {
						errs <- fmt.Errorf("removing tracking finalizer: %w", err)
						return
					}
				}
			}
			removed[i] = true
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return removed, utilerrors.NewAggregate(all)
}

// enactJobFinished adds the Complete or Failed condition once nothing is
// left uncounted or terminating, and reports whether it did.
func (jm *Controller) enactJobFinished(jobCtx *syncJobCtx) bool {
	c := jobCtx.finishedCondition
	if c == nil {
		return false
	}
	job := jobCtx.job
	if u := job.Status.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
		return false
	}
	if jobCtx.terminating != nil && *jobCtx.terminating > 0 {
		return false
	}
	job.Status.Conditions, _ = ensureJobConditionStatus(job.Status.Conditions, c.Type, c.Status, c.Reason, c.Message, jm.clock.Now())
	if c.Type == batchv1.JobComplete {
		job.Status.CompletionTime = &c.LastTransitionTime
	}
	return true
}

// recordJobFinished records the Job's end as an event: Completed, or the
// failure's reason and message.
func (jm *Controller) recordJobFinished(job *batchv1.Job, c *batchv1.JobCondition) {
	if c.Type == batchv1.JobComplete {
		if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
			jm.recorder.Event(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
		}
		jm.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
		return
	}
	jm.recorder.Event(job, corev1.EventTypeWarning, c.Reason, c.Message)
}

// updateStatus writes the Job's status and returns what was stored.
func (jm *Controller) updateStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	return jm.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
}

// syncOrphanPod removes the tracking finalizer from a pod that no longer
// belongs to an unfinished Job: its Job is gone or done, or the pod was
// released. A pod controlled by something else is left alone.
func (jm *Controller) syncOrphanPod(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := jm.podLister.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if ref.Kind != controllerKind.Kind || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
			return nil
		}
		if job := jm.resolveControllerRef(pod.Namespace, ref); job != nil && !isJobFinished(job) {
			return nil // adopted again; the Job counts it
		}
	}
	if patch := removeTrackingFinalizerPatch(pod); patch != nil {
		if err := jm.podControl.PatchPod(ctx, namespace, name, patch); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
