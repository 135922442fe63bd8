package job

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// syncJobCtx is what one sync knows about its Job.
type syncJobCtx struct {
	job        *batchv1.Job
	pods       []*corev1.Pod
	activePods []*corev1.Pod
	// succeeded and failed include pods finished but not yet counted.
	succeeded, failed int32
	terminating       *int32
	ready             *int32
	// finishedCondition is set once the Job is decided.
	finishedCondition    *batchv1.JobCondition
	uncounted            *uncountedTerminatedPods
	expectedRmFinalizers sets.Set[string]
	newBackoffRecord     backoffRecord
	// Indexed Jobs only.
	prevSucceededIndexes, succeededIndexes orderedIntervals
}

// syncJob converges the Job of key. It counts its pods (finished ones
// through the tracking finalizer), decides whether the Job failed
// (backoffLimit, activeDeadlineSeconds) or completed, otherwise creates
// or deletes pods towards parallelism and the remaining completions, and
// writes the status. A finished Job is left alone.
func (jm *Controller) syncJob(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a key we never enqueue; retrying cannot help
	}
	shared, err := jm.jobLister.Jobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		jm.expectations.DeleteExpectations(key)
		jm.finalizerExpectations.deleteExpectations(key)
		jm.backoffStore.remove(key)
		return nil
	}
	if err != nil {
		return err
	}
	// A Job another controller manages (spec.managedBy) is not ours.
	if m := shared.Spec.ManagedBy; m != nil && *m != batchv1.JobControllerName {
		return nil
	}
	if !defaulted(shared) {
		jm.logger.Info("skipping Job without the fields the API server defaults", "job", key)
		return nil
	}
	job := shared.DeepCopy()
	if isJobFinished(job) {
		jm.backoffStore.remove(key)
		return nil
	}
	if mode := job.Spec.CompletionMode; mode != nil && *mode != batchv1.NonIndexedCompletion && *mode != batchv1.IndexedCompletion {
		jm.recorder.Event(job, corev1.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown")
		return nil
	}
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	// Read the expectations before the pods: a pod created after this
	// point only defers the sync to the next event.
	satisfied := jm.expectations.SatisfiedExpectations(key)
	pods, err := jm.getPodsForJob(ctx, job)
	if err != nil {
		return err
	}
	jobCtx := &syncJobCtx{
		job:                  job,
		pods:                 pods,
		activePods:           controllerutil.FilterActivePods(pods),
		terminating:          ptr.To(controllerutil.CountTerminatingPods(pods)),
		uncounted:            newUncountedTerminatedPods(*job.Status.UncountedTerminatedPods),
		expectedRmFinalizers: jm.finalizerExpectations.getExpectedUIDs(key),
	}
	active := int32(len(jobCtx.activePods))
	newSucceeded, newFailed := getNewFinishedPods(jobCtx)
	jobCtx.succeeded = job.Status.Succeeded + int32(len(newSucceeded)) + int32(jobCtx.uncounted.succeeded.Len())
	jobCtx.failed = job.Status.Failed + int32(len(newFailed)) + int32(jobCtx.uncounted.failed.Len())
	jobCtx.ready = ptr.To(countReadyPods(jobCtx.activePods))

	// The clock starts with the first sync, unless the Job is suspended.
	if job.Status.StartTime == nil && !jobSuspended(job) {
		job.Status.StartTime = ptr.To(metav1.NewTime(jm.clock.Now()))
	}
	jobCtx.newBackoffRecord = jm.backoffStore.newBackoffRecord(key, newSucceeded, newFailed)

	jobCtx.finishedCondition = hasTrueCondition(job, batchv1.JobSuccessCriteriaMet)
	if jobCtx.finishedCondition == nil {
		if target := hasTrueCondition(job, batchv1.JobFailureTarget); target != nil {
			// Decided by an earlier sync; now only its pods must go.
			jobCtx.finishedCondition = newCondition(batchv1.JobFailed, corev1.ConditionTrue, target.Reason, target.Message, jm.clock.Now())
		} else if jobCtx.failed > *job.Spec.BackoffLimit || pastBackoffLimitOnFailure(job, pods) {
			jobCtx.finishedCondition = newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonBackoffLimitExceeded, backoffLimitExceededMessage, jm.clock.Now())
		} else if jm.pastActiveDeadline(job) {
			jobCtx.finishedCondition = newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonDeadlineExceeded, deadlineExceededMessage, jm.clock.Now())
		} else if job.Spec.ActiveDeadlineSeconds != nil && !jobSuspended(job) {
			// Nothing else wakes the Job when its deadline passes.
			left := time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - jm.clock.Since(job.Status.StartTime.Time)
			jm.queue.AddAfter(key, left)
		}
	}
	if isIndexedJob(job) {
		jobCtx.prevSucceededIndexes, jobCtx.succeededIndexes = calculateSucceededIndexes(job, pods)
		jobCtx.succeeded = int32(jobCtx.succeededIndexes.total())
	}

	var manageErr error
	suspendChanged := false
	if jobCtx.finishedCondition != nil {
		// The Job is decided: pods still running are deleted (their
		// finalizers stay until they are counted).
		deletedReady, deleted, err := jm.deleteActivePods(ctx, job, jobCtx.activePods)
		if deleted != active || !satisfied {
			// Pods may remain, or the cache may not show them all yet.
			jobCtx.finishedCondition = nil
		}
		active -= deleted
		*jobCtx.terminating += deleted
		*jobCtx.ready -= deletedReady
		manageErr = err
	} else {
		manageCalled := false
		if satisfied && job.DeletionTimestamp == nil {
			active, manageErr = jm.manageJob(ctx, job, jobCtx)
			manageCalled = true
		}
		complete := false
		if job.Spec.Completions == nil {
			// Without completions, the first success ends the Job once
			// the other pods are done: each pod can tell the work is
			// finished.
			complete = jobCtx.succeeded > 0 && active == 0
		} else {
			complete = jobCtx.succeeded >= *job.Spec.Completions && active == 0
		}
		switch {
		case complete:
			jobCtx.finishedCondition = newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonCompletionsReached, completionsReachedMessage, jm.clock.Now())
		case manageCalled && jobSuspended(job):
			var changed bool
			job.Status.Conditions, changed = ensureJobConditionStatus(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", jm.clock.Now())
			if changed {
				suspendChanged = true
				jm.recorder.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
			}
		case manageCalled:
			var changed bool
			job.Status.Conditions, changed = ensureJobConditionStatus(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", jm.clock.Now())
			if changed {
				suspendChanged = true
				jm.recorder.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
				// activeDeadlineSeconds counts continuous activity: a
				// resumed Job starts its clock again.
				job.Status.StartTime = ptr.To(metav1.NewTime(jm.clock.Now()))
			}
		}
	}

	needsStatusUpdate := suspendChanged || active != job.Status.Active ||
		!ptr.Equal(jobCtx.ready, job.Status.Ready) || !ptr.Equal(jobCtx.terminating, job.Status.Terminating)
	job.Status.Active = active
	job.Status.Ready = jobCtx.ready
	job.Status.Terminating = jobCtx.terminating
	if err := jm.trackJobStatusAndRemoveFinalizers(ctx, jobCtx, needsStatusUpdate); err != nil {
		return fmt.Errorf("tracking status: %w", err)
	}
	return manageErr
}

// getPodsForJob claims the Job's pods. Adopted pods get the tracking
// finalizer with the adoption; the returned copies show it already.
func (jm *Controller) getPodsForJob(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("couldn't convert Job selector: %w", err)
	}
	// All pods: owned ones that stopped matching must be released.
	pods, err := jm.podLister.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	canAdopt := controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := jm.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if fresh.UID != job.UID {
			return nil, fmt.Errorf("original Job %v/%v is gone: got uid %v, wanted %v", job.Namespace, job.Name, fresh.UID, job.UID)
		}
		return fresh, nil
	})
	m := controllerutil.NewPodControllerRefManager(jm.podControl, job, selector, controllerKind, canAdopt, batchv1.JobTrackingFinalizer)
	pods, err = m.ClaimPods(ctx, pods)
	for i, p := range pods {
		// A claimed pod whose cached copy names another owner (or none)
		// was adopted by this sync: the patch gave it the finalizer, the
		// cache does not show it yet. A pod the Job owned already keeps
		// what it has: its finalizer may be gone because it was counted.
		if metav1.IsControlledBy(p, job) || hasJobTrackingFinalizer(p) {
			continue
		}
		p = p.DeepCopy()
		p.Finalizers = append(p.Finalizers, batchv1.JobTrackingFinalizer)
		pods[i] = p
	}
	return pods, err
}

// getNewFinishedPods returns the pods that finished since the last count:
// they still carry the finalizer, are not in uncountedTerminatedPods, and
// their finalizer is not being removed.
func getNewFinishedPods(jobCtx *syncJobCtx) (succeeded, failed []*corev1.Pod) {
	valid := func(p *corev1.Pod, uncounted sets.Set[types.UID]) bool {
		if !hasJobTrackingFinalizer(p) || uncounted.Has(p.UID) || jobCtx.expectedRmFinalizers.Has(string(p.UID)) {
			return false
		}
		if isIndexedJob(jobCtx.job) {
			ix := getCompletionIndex(p.Annotations)
			if ix == unknownCompletionIndex || ix >= int(*jobCtx.job.Spec.Completions) {
				return false
			}
		}
		return true
	}
	for _, p := range jobCtx.pods {
		if p.Status.Phase == corev1.PodSucceeded && valid(p, jobCtx.uncounted.succeeded) {
			succeeded = append(succeeded, p)
		}
		if isPodFailed(p, jobCtx.job) && valid(p, jobCtx.uncounted.failed) {
			failed = append(failed, p)
		}
	}
	return succeeded, failed
}

// isPodFailed: a Failed pod, and, unless only Failed pods are replaced,
// a pod being deleted before it succeeded (an orphan that will never
// reach Failed).
func isPodFailed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailedPods(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

// onlyReplaceFailedPods: podReplacementPolicy Failed (implied by a
// podFailurePolicy) waits for a terminating pod to fail before replacing
// it.
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	if job.Spec.PodReplacementPolicy != nil && *job.Spec.PodReplacementPolicy == batchv1.Failed {
		return true
	}
	return job.Spec.PodFailurePolicy != nil
}

// canRemoveFinalizer: a pod may be counted once it succeeded, failed, or
// the Job is decided or deleted.
func canRemoveFinalizer(jobCtx *syncJobCtx, pod *corev1.Pod, podFailed bool) bool {
	return jobCtx.job.DeletionTimestamp != nil || jobCtx.finishedCondition != nil ||
		pod.Status.Phase == corev1.PodSucceeded || podFailed
}

// pastBackoffLimitOnFailure: with restartPolicy OnFailure, failures are
// container restarts in running pods, counted against backoffLimit.
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, s := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			restarts += s.RestartCount
		}
	}
	if *job.Spec.BackoffLimit == 0 {
		return restarts > 0
	}
	return restarts >= *job.Spec.BackoffLimit
}

// pastActiveDeadline reports whether the Job has been active for
// activeDeadlineSeconds (a suspended Job's clock is stopped).
func (jm *Controller) pastActiveDeadline(job *batchv1.Job) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || jobSuspended(job) {
		return false
	}
	return jm.clock.Since(job.Status.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

// defaulted reports whether the Job has the fields the API server
// defaults and validates (parallelism, backoffLimit, completions of an
// Indexed Job); the controller reads them without checking again.
func defaulted(job *batchv1.Job) bool {
	return job.Spec.Parallelism != nil && job.Spec.BackoffLimit != nil && job.Spec.Selector != nil &&
		(!isIndexedJob(job) || job.Spec.Completions != nil)
}

func jobSuspended(job *batchv1.Job) bool {
	return job.Spec.Suspend != nil && *job.Spec.Suspend
}

func countReadyPods(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if controllerutil.IsPodReady(p) {
			n++
		}
	}
	return n
}
