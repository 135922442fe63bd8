package cronjob

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// scheduledTimestampAnnotation records on a Job the schedule time it was
// made for.
const scheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

// maxMissedSchedules bounds how many missed times a sync walks through
// before it says the CronJob is too far behind (upstream's 100).
const maxMissedSchedules = 100

// nextScheduleDelta is added to the wait for the next time, so the sync
// runs just after it, not just before.
const nextScheduleDelta = 100 * time.Millisecond

// sync converges one CronJob: its status from its Jobs, its history
// limits, and a new Job if a scheduled time has come.
func (jm *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a malformed key never becomes valid
	}
	shared, err := jm.cronJobLister.CronJobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // its Jobs go with it through the garbage collector
	}
	if err != nil {
		return err
	}
	cj := shared.DeepCopy() // never mutate the informer's copy
	jobs, err := jm.jobsOf(cj)
	if err != nil {
		return err
	}
	before := cj.Status.DeepCopy()

	requeue, syncErr := jm.syncCronJob(ctx, cj, jobs)
	if !apiequality.Semantic.DeepEqual(before, &cj.Status) {
		if _, err := jm.client.BatchV1().CronJobs(cj.Namespace).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if syncErr != nil {
		return syncErr
	}
	if cj.DeletionTimestamp == nil {
		if err := jm.cleanupFinishedJobs(ctx, cj, jobs); err != nil {
			return err
		}
	}
	if requeue > 0 {
		return controllerutil.RequeueAfter(requeue)
	}
	return nil
}

// jobsOf returns the Jobs the CronJob controls.
func (jm *Controller) jobsOf(cj *batchv1.CronJob) ([]*batchv1.Job, error) {
	all, err := jm.jobLister.Jobs(cj.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*batchv1.Job
	for _, j := range all {
		if ref := metav1.GetControllerOf(j); ref != nil && ref.Kind == controllerKind.Kind && ref.UID == cj.UID {
			out = append(out, j)
		}
	}
	return out, nil
}

// syncCronJob updates cj's status in place and makes a Job if one is due.
// It returns how long until the CronJob should be looked at again.
func (jm *Controller) syncCronJob(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (time.Duration, error) {
	now := jm.now().Time
	children := map[types.UID]bool{}
	for _, j := range jobs {
		children[j.UID] = true
		found := inActiveList(cj, j.UID)
		switch {
		case !found && !isJobFinished(j):
			jm.recorder.Eventf(cj, corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		case found && isJobFinished(j):
			deleteFromActiveList(cj, j.UID)
			jm.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, finishedCondition(j))
		}
		if isJobSucceeded(j) && j.Status.CompletionTime != nil &&
			(cj.Status.LastSuccessfulTime == nil || j.Status.CompletionTime.After(cj.Status.LastSuccessfulTime.Time)) {
			cj.Status.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
		}
	}
	// An active Job the informer no longer shows may be gone: ask the API
	// server, as the lister may be behind.
	for _, ref := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
		if children[ref.UID] {
			continue
		}
		_, err := jm.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			jm.recorder.Eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", ref.Name)
			deleteFromActiveList(cj, ref.UID)
		case err != nil:
			return 0, err
		}
	}

	if cj.DeletionTimestamp != nil {
		return 0, nil
	}
	loc := time.Local
	if cj.Spec.TimeZone != nil {
		var err error
		if loc, err = time.LoadLocation(*cj.Spec.TimeZone); err != nil {
			jm.recorder.Eventf(cj, corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *cj.Spec.TimeZone, err)
			return 0, nil
		}
	}
	if ptr.Deref(cj.Spec.Suspend, false) {
		return 0, nil
	}
	sched, err := cron.ParseStandard(cj.Spec.Schedule)
	if err != nil {
		// Validation refuses such a schedule; an old object may hold one.
		jm.recorder.Eventf(cj, corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return 0, nil
	}
	next := func() time.Duration {
		return sched.Next(now.In(loc)).Sub(now) + nextScheduleDelta
	}

	scheduled, tooMany := mostRecentScheduleTime(cj, now.In(loc), sched)
	if tooMany {
		jm.recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes",
			"too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	if scheduled == nil {
		return next(), nil // nothing due yet
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		jm.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return next(), nil
	}
	jobName := jobNameFor(cj, *scheduled)
	if inActiveListByName(cj, jobName) || (cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Equal(&metav1.Time{Time: *scheduled})) {
		return next(), nil // this time has its Job already
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			jm.recorder.Eventf(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return next(), nil
		}
	case batchv1.ReplaceConcurrent:
		for _, ref := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
			if err := jm.deleteJob(ctx, cj, ref.Name); err != nil && !apierrors.IsNotFound(err) {
				return 0, err
			}
			deleteFromActiveList(cj, ref.UID)
		}
	}

	job := jobFromTemplate(cj, jobName, *scheduled)
	created, err := jm.client.BatchV1().Jobs(cj.Namespace).Create(ctx, job, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Made by an earlier sync whose status write was lost: take it
		// as ours if it is.
		existing, getErr := jm.client.BatchV1().Jobs(cj.Namespace).Get(ctx, jobName, metav1.GetOptions{})
		if getErr != nil {
			return 0, getErr
		}
		if ref := metav1.GetControllerOf(existing); ref == nil || ref.UID != cj.UID {
			return next(), nil
		}
		created = existing
	case err != nil:
		jm.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return 0, err
	default:
		jm.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
	}
	if !inActiveList(cj, created.UID) {
		cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{
			Kind: "Job", Namespace: created.Namespace, Name: created.Name, UID: created.UID,
			APIVersion: batchv1.SchemeGroupVersion.String(), ResourceVersion: created.ResourceVersion,
		})
	}
	cj.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	return next(), nil
}

// mostRecentScheduleTime returns the latest time the schedule named since
// the CronJob last ran (or was made), if that time has come; tooMany says
// more than maxMissedSchedules times were missed. A startingDeadlineSeconds
// limits how far back it looks.
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) (*time.Time, bool) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if deadline := now.Add(-time.Duration(*d) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}
	var latest *time.Time
	missed := 0
	for t := sched.Next(earliest.In(now.Location())); !t.After(now); t = sched.Next(t) {
		latest = &t
		if missed++; missed > maxMissedSchedules {
			// Jump to the last one rather than walk through every
			// missed time.
			for n := sched.Next(t); !n.After(now); n = sched.Next(n) {
				latest = &n
			}
			return latest, true
		}
	}
	return latest, false
}

// jobNameFor is <cronjob>-<scheduled time in minutes since the epoch>.
func jobNameFor(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}

// jobFromTemplate makes the Job for one scheduled time.
func jobFromTemplate(cj *batchv1.CronJob, name string, scheduled time.Time) *batchv1.Job {
	t := cj.Spec.JobTemplate
	annotations := map[string]string{}
	for k, v := range t.Annotations {
		annotations[k] = v
	}
	loc := time.Local
	if cj.Spec.TimeZone != nil {
		if l, err := time.LoadLocation(*cj.Spec.TimeZone); err == nil {
			loc = l
		}
	}
	annotations[scheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	jobLabels := map[string]string{}
	for k, v := range t.Labels {
		jobLabels[k] = v
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: cj.Namespace, Labels: jobLabels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, controllerKind)},
		},
		Spec: *t.Spec.DeepCopy(),
	}
}

// cleanupFinishedJobs deletes the oldest finished Jobs beyond the
// history limits, succeeded and failed counted apart.
func (jm *Controller) cleanupFinishedJobs(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) error {
	if cj.Spec.SuccessfulJobsHistoryLimit == nil && cj.Spec.FailedJobsHistoryLimit == nil {
		return nil
	}
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch {
		case isJobSucceeded(j):
			succeeded = append(succeeded, j)
		case isJobFinished(j):
			failed = append(failed, j)
		}
	}
	for _, set := range []struct {
		jobs  []*batchv1.Job
		limit *int32
	}{{succeeded, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if set.limit == nil || len(set.jobs) <= int(*set.limit) {
			continue
		}
		sort.Slice(set.jobs, func(i, k int) bool { return startedBefore(set.jobs[i], set.jobs[k]) })
		for _, j := range set.jobs[:len(set.jobs)-int(*set.limit)] {
			if err := jm.deleteJob(ctx, cj, j.Name); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

// startedBefore orders Jobs by start time, those not started first, then
// by name.
func startedBefore(a, b *batchv1.Job) bool {
	switch {
	case a.Status.StartTime == nil && b.Status.StartTime != nil:
		return true
	case a.Status.StartTime != nil && b.Status.StartTime == nil:
		return false
	case a.Status.StartTime != nil && !a.Status.StartTime.Equal(b.Status.StartTime):
		return a.Status.StartTime.Before(b.Status.StartTime)
	}
	return a.Name < b.Name
}

// deleteJob deletes a Job and its Pods (background propagation).
func (jm *Controller) deleteJob(ctx context.Context, cj *batchv1.CronJob, name string) error {
	err := jm.client.BatchV1().Jobs(cj.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			jm.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		}
		return err
	}
	jm.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", name)
	return nil
}

func inActiveList(cj *batchv1.CronJob, uid types.UID) bool {
	for _, ref := range cj.Status.Active {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

func inActiveListByName(cj *batchv1.CronJob, name string) bool {
	for _, ref := range cj.Status.Active {
		if ref.Name == name {
			return true
		}
	}
	return false
}

func deleteFromActiveList(cj *batchv1.CronJob, uid types.UID) {
	kept := cj.Status.Active[:0]
	for _, ref := range cj.Status.Active {
		if ref.UID != uid {
			kept = append(kept, ref)
		}
	}
	cj.Status.Active = kept
	if len(kept) == 0 {
		cj.Status.Active = nil
	}
}

// finishedCondition returns Complete or Failed, whichever is true.
func finishedCondition(j *batchv1.Job) batchv1.JobConditionType {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

func isJobFinished(j *batchv1.Job) bool { return finishedCondition(j) != "" }

func isJobSucceeded(j *batchv1.Job) bool { return finishedCondition(j) == batchv1.JobComplete }
