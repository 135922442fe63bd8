package job

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// manageJob creates or deletes pods so that as many run as parallelism
// and the remaining completions allow, and returns how many are active.
// A suspended Job has all its pods deleted. A sync either deletes or
// creates, never both; deletes come first. New pods wait out the pod
// failure backoff.
func (jm *Controller) manageJob(ctx context.Context, job *batchv1.Job, jobCtx *syncJobCtx) (int32, error) {
	active := int32(len(jobCtx.activePods))
	key := jobKey(job)
	if jobSuspended(job) {
		toDelete := activePodsForRemoval(job, jobCtx.activePods, int(active))
		jm.expectations.ExpectDeletions(key, len(toDelete))
		removedReady, removed, err := jm.deleteJobPods(ctx, job, key, toDelete)
		*jobCtx.ready -= removedReady
		return active - removed, err
	}

	parallelism := *job.Spec.Parallelism
	var wantActive int32
	switch {
	case job.Spec.Completions == nil && jobCtx.succeeded > 0:
		// A pod succeeded: let the running ones finish, start no more.
		wantActive = active
	case job.Spec.Completions == nil:
		wantActive = parallelism
	default:
		wantActive = max(min(*job.Spec.Completions-jobCtx.succeeded, parallelism), 0)
	}

	rmAtLeast := max(active-wantActive, 0)
	toDelete := activePodsForRemoval(job, jobCtx.activePods, int(rmAtLeast))
	if len(toDelete) > MaxPodCreateDeletePerSync {
		toDelete = toDelete[:MaxPodCreateDeletePerSync]
	}
	if len(toDelete) > 0 {
		jm.expectations.ExpectDeletions(key, len(toDelete))
		removedReady, removed, err := jm.deleteJobPods(ctx, job, key, toDelete)
		*jobCtx.ready -= removedReady
		return active - removed, err
	}

	// With podReplacementPolicy Failed, a terminating pod still holds its
	// place until it has failed.
	var terminating int32
	if onlyReplaceFailedPods(job) {
		terminating = *jobCtx.terminating
	}
	diff := wantActive - terminating - active
	if diff <= 0 {
		return active, nil
	}
	if wait := jobCtx.newBackoffRecord.remainingTime(jm.clock, jm.podFailureBackoff, jm.maxPodFailureBackoff); wait > 0 {
		jm.enqueueAfter(job, max(wait, jm.batchPeriod))
		return active, nil
	}
	diff = min(diff, MaxPodCreateDeletePerSync)
	var indexes []int
	if isIndexedJob(job) {
		indexes = firstPendingIndexes(jobCtx, int(diff), int(*job.Spec.Completions))
		diff = int32(len(indexes))
	}

	// Expect the creates before issuing them: the informer may show a new
	// pod before Create even returns.
	jm.expectations.ExpectCreations(key, int(diff))
	template := job.Spec.Template.DeepCopy()
	if isIndexedJob(job) {
		addCompletionIndexEnvVariables(template)
	}
	if !containsString(template.Finalizers, batchv1.JobTrackingFinalizer) {
		template.Finalizers = append(template.Finalizers, batchv1.JobTrackingFinalizer)
	}
	ref := metav1.NewControllerRef(job, controllerKind)
	active += diff
	errs := make(chan error, diff)
	var wg sync.WaitGroup
	// Slow start: batches of 1, 2, 4, ... stop after a batch with a
	// failure, so a Job whose pods are all refused sends few requests.
	for batch := min(diff, int32(controllerutil.SlowStartInitialBatchSize)); diff > 0; batch = min(2*batch, diff) {
		errorsBefore := len(errs)
		for range batch {
			ix := unknownCompletionIndex
			if len(indexes) > 0 {
				ix, indexes = indexes[0], indexes[1:]
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				t, generateName := template, ""
				if ix != unknownCompletionIndex {
					t, generateName = indexedTemplate(job, template, ix)
				}
				err := jm.podControl.CreatePodsWithGenerateName(ctx, job.Namespace, t, job, ref, generateName)
				if err == nil || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return
				}
				// This create will never be observed.
				jm.expectations.CreationObserved(key)
				atomic.AddInt32(&active, -1)
				errs <- err
			}()
		}
		wg.Wait()
		if skipped := diff - batch; len(errs) > errorsBefore && skipped > 0 {
			// Nor will the creates never sent; a later sync retries them.
			active -= skipped
			jm.expectations.LowerExpectations(key, int(skipped), 0)
			break
		}
		diff -= batch
	}
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return active, utilerrors.NewAggregate(all)
}

// activePodsForRemoval picks at least rmAtLeast active pods to delete:
// for an Indexed Job first the pods of a duplicated or out-of-range
// index, then the cheapest by ActivePods order.
func activePodsForRemoval(job *batchv1.Job, pods []*corev1.Pod, rmAtLeast int) []*corev1.Pod {
	var rm, left []*corev1.Pod
	if isIndexedJob(job) {
		rm, left = duplicatedIndexPodsForRemoval(pods, int(*job.Spec.Completions))
	} else {
		left = append([]*corev1.Pod(nil), pods...)
	}
	if len(rm) < rmAtLeast {
		sort.Sort(controllerutil.ActivePods(left))
		rm = append(rm, left[:rmAtLeast-len(rm)]...)
	}
	return rm
}

// deleteJobPods deletes pods the Job no longer wants. Their finalizer is
// removed first: such a pod did not fail and must not be counted. It
// returns how many of the deleted pods were ready, and how many went.
func (jm *Controller) deleteJobPods(ctx context.Context, job *batchv1.Job, key string, pods []*corev1.Pod) (int32, int32, error) {
	var deletedReady int32
	removed := int32(len(pods))
	errs := make(chan error, len(pods))
	fail := func(err error) {
		// This deletion will never be observed.
		jm.expectations.DeletionObserved(key)
		if !apierrors.IsNotFound(err) {
			atomic.AddInt32(&removed, -1)
			errs <- err
		}
	}
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if patch := removeTrackingFinalizerPatch(pod); patch != nil {
				if err := jm.podControl.PatchPod(ctx, pod.Namespace, pod.Name, patch); err != nil {
					fail(fmt.Errorf("removing completion finalizer: %w", err))
					return
				}
			}
			if err := jm.podControl.DeletePod(ctx, job.Namespace, pod.Name, job); err != nil {
				fail(err)
				return
			}
			if controllerutil.IsPodReady(pod) {
				atomic.AddInt32(&deletedReady, 1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return deletedReady, removed, utilerrors.NewAggregate(all)
}

// deleteActivePods deletes the running pods of a decided Job, keeping
// their finalizers: they are counted (as failed, if the Job failed)
// before they may go. It returns how many of them were ready, and how
// many deletes were issued.
func (jm *Controller) deleteActivePods(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) (int32, int32, error) {
	var deletedReady int32
	deleted := int32(len(pods))
	errs := make(chan error, len(pods))
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := jm.podControl.DeletePod(ctx, job.Namespace, pod.Name, job); err != nil && !apierrors.IsNotFound(err) {
				atomic.AddInt32(&deleted, -1)
				errs <- err
			}
			if controllerutil.IsPodReady(pod) {
				atomic.AddInt32(&deletedReady, 1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return deletedReady, deleted, utilerrors.NewAggregate(all)
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
