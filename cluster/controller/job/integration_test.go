package job

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestAgainstAPIServer runs the controller against klab's real API
// server, the test playing the kubelets: a Job of two completions runs
// its pods one after the other and completes, with every pod's tracking
// finalizer removed (a strategic-merge $deleteFromPrimitiveList patch);
// a Job with backoffLimit 0 fails on its first failed pod.
func TestAgainstAPIServer(t *testing.T) {
	testenv.EndToEnd(t)
	c := controllertest.StartCluster(t, Init)
	ns := controllertest.Namespace
	ctx := context.Background()
	jobs := c.Client.BatchV1().Jobs(ns)
	newJob := func(name string, completions, backoffLimit int32) *batchv1.Job {
		return controllertest.Create(t, jobs.Create, &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: batchv1.JobSpec{
				Completions:  ptr.To(completions),
				BackoffLimit: ptr.To(backoffLimit),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "work", Image: "klab/app"}},
				}},
			},
		})
	}
	// finish plays the kubelet: the job's running pods end in phase.
	finish := func(job string, phase corev1.PodPhase) {
		for _, p := range c.Pods(t) {
			if p.Labels[batchv1.JobNameLabel] != job || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			p.Status.Phase = phase
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "work", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.Now()},
			}}}
			c.UpdatePodStatus(t, &p)
		}
	}
	waitFinished := func(name string, conditionType batchv1.JobConditionType, check func(*batchv1.Job) bool, kubelet func()) *batchv1.Job {
		t.Helper()
		var job *batchv1.Job
		c.WaitFor(t, 30*time.Second, fmt.Sprintf("Job %s %s", name, conditionType), func() (bool, string) {
			kubelet()
			var err error
			if job, err = jobs.Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			return hasTrueCondition(job, conditionType) != nil && check(job), fmt.Sprintf("status %+v", job.Status)
		})
		return job
	}

	newJob("twice", 2, 6)
	done := waitFinished("twice", batchv1.JobComplete, func(j *batchv1.Job) bool { return j.Status.Succeeded == 2 },
		func() { finish("twice", corev1.PodSucceeded) })
	if done.Status.CompletionTime == nil || done.Status.Active != 0 || done.Status.Failed != 0 {
		t.Errorf("completed Job status %+v", done.Status)
	}
	var pods int
	for _, p := range c.Pods(t) {
		if p.Labels[batchv1.JobNameLabel] != "twice" {
			continue
		}
		pods++
		if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
			t.Errorf("pod %s still has the tracking finalizer", p.Name)
		}
	}
	if pods != 2 {
		t.Errorf("the Job ran %d pods, want 2", pods)
	}

	newJob("fragile", 1, 0)
	failed := waitFinished("fragile", batchv1.JobFailed, func(j *batchv1.Job) bool { return j.Status.Failed == 1 },
		func() { finish("fragile", corev1.PodFailed) })
	if c := hasTrueCondition(failed, batchv1.JobFailed); c.Reason != "BackoffLimitExceeded" || c.Message != "Job has reached the specified backoff limit" {
		t.Errorf("Failed condition %+v", c)
	}
	c.WaitFor(t, 10*time.Second, "the BackoffLimitExceeded event", func() (bool, string) {
		events := c.Events(t, "fragile")
		return slices.Contains(events, "BackoffLimitExceeded Job has reached the specified backoff limit"), fmt.Sprintf("events %q", events)
	})
}
