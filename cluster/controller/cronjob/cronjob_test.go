package cronjob

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
)

// now is the tests' clock: 10:02:30, a schedule of every minute last
// named 10:02.
var now = time.Date(2026, 11, 28, 10, 2, 30, 0, time.UTC)

func newCronJob(policy batchv1.ConcurrencyPolicy) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default", UID: "cj-uid", Generation: 1,
			CreationTimestamp: metav1.NewTime(now.Add(-150 * time.Second))},
		Spec: batchv1.CronJobSpec{
			Schedule: "*/1 * * * *", ConcurrencyPolicy: policy, TimeZone: ptr.To("UTC"),
			Suspend: ptr.To(false), SuccessfulJobsHistoryLimit: ptr.To[int32](1), FailedJobsHistoryLimit: ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "hello", Image: "busybox:1.37"}}},
			}}},
		},
	}
}

// job returns a Job of cj made for the given minute, finished as cond
// says ("" for still running).
func job(cj *batchv1.CronJob, minute time.Time, cond batchv1.JobConditionType) *batchv1.Job {
	j := jobFromTemplate(cj, jobNameFor(cj, minute), minute)
	j.UID = types.UID(j.Name + "-uid")
	j.Status.StartTime = &metav1.Time{Time: minute}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
		j.Status.CompletionTime = &metav1.Time{Time: minute.Add(10 * time.Second)}
	}
	return j
}

func active(cj *batchv1.CronJob, jobs ...*batchv1.Job) *batchv1.CronJob {
	cj = cj.DeepCopy()
	for _, j := range jobs {
		cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID})
	}
	return cj
}

// TestSync checks the actions of one sync at 10:02:30.
func TestSync(t *testing.T) {
	allow, forbid, replace := newCronJob(batchv1.AllowConcurrent), newCronJob(batchv1.ForbidConcurrent), newCronJob(batchv1.ReplaceConcurrent)
	min1, min2 := now.Truncate(time.Minute).Add(-time.Minute), now.Truncate(time.Minute)
	running1 := job(allow, min1, "")
	suspended := newCronJob(batchv1.AllowConcurrent)
	suspended.Spec.Suspend = ptr.To(true)
	tests := []struct {
		name        string
		objects     []runtime.Object
		wantActions []string
		wantEvents  []string
	}{
		{"the latest missed time gets its job", []runtime.Object{allow},
			[]string{"create jobs hello-" + minutes(min2), "update cronjobs/status hello"},
			[]string{"Normal SuccessfulCreate Created job hello-" + minutes(min2)}},
		{"suspended makes nothing", []runtime.Object{suspended}, nil, nil},
		{"forbid waits for the running job", []runtime.Object{active(forbid, running1), running1},
			nil, []string{"Normal JobAlreadyActive Not starting job because prior execution is running and concurrency policy is Forbid"}},
		{"replace deletes the running job first", []runtime.Object{active(replace, running1), running1},
			[]string{"delete jobs hello-" + minutes(min1), "create jobs hello-" + minutes(min2), "update cronjobs/status hello"},
			[]string{"Normal SuccessfulDelete Deleted job hello-" + minutes(min1), "Normal SuccessfulCreate Created job hello-" + minutes(min2)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := controllertest.New(tc.objects...)
			jm, err := newController(f.Context)
			if err != nil {
				t.Fatal(err)
			}
			jm.now = func() metav1.Time { return metav1.NewTime(now) }
			if err := f.Index(tc.objects...); err != nil {
				t.Fatal(err)
			}
			if err := jm.sync(context.Background(), "default/hello"); err != nil && !strings.HasPrefix(err.Error(), "requeue after ") {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantActions, f.Actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, f.Events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHistoryLimits: beyond one succeeded and one failed Job, the oldest
// finished ones go; the one that just finished leaves the active list.
func TestHistoryLimits(t *testing.T) {
	cj := newCronJob(batchv1.AllowConcurrent)
	base := now.Truncate(time.Minute)
	old, newer, failed1, failed2 := job(cj, base.Add(-5*time.Minute), batchv1.JobComplete), job(cj, base.Add(-4*time.Minute), batchv1.JobComplete),
		job(cj, base.Add(-3*time.Minute), batchv1.JobFailed), job(cj, base.Add(-2*time.Minute), batchv1.JobFailed)
	cj = active(cj, failed2)
	cj.Status.LastScheduleTime = &metav1.Time{Time: base}
	objects := []runtime.Object{cj, old, newer, failed1, failed2}
	f := controllertest.New(objects...)
	jm, err := newController(f.Context)
	if err != nil {
		t.Fatal(err)
	}
	jm.now = func() metav1.Time { return metav1.NewTime(now) }
	if err := f.Index(objects...); err != nil {
		t.Fatal(err)
	}
	if err := jm.sync(context.Background(), "default/hello"); err != nil && !strings.HasPrefix(err.Error(), "requeue after ") {
		t.Fatal(err)
	}
	want := []string{"update cronjobs/status hello", "delete jobs " + old.Name, "delete jobs " + failed1.Name}
	if diff := cmp.Diff(want, f.Actions()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

func minutes(t time.Time) string { return strings.TrimPrefix(jobNameFor(&batchv1.CronJob{}, t), "-") }
