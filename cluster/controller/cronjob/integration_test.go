package cronjob

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestAgainstAPIServer runs the controller against klab's real API
// server. So as not to wait for a minute boundary, the test backdates the
// CronJob's lastScheduleTime: the time the schedule named since is due at
// once, gets its Job, and the Job's completion empties the active list.
func TestAgainstAPIServer(t *testing.T) {
	testenv.EndToEnd(t)
	c := controllertest.StartCluster(t, Init)
	ns := controllertest.Namespace
	ctx := context.Background()
	spec := newCronJob(batchv1.AllowConcurrent).Spec
	spec.TimeZone = nil
	cj := controllertest.Create(t, c.Client.BatchV1().CronJobs(ns).Create, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns}, Spec: spec})
	cj.Status.LastScheduleTime = &metav1.Time{Time: time.Now().Add(-90 * time.Second).Truncate(time.Minute)}
	if _, err := c.Client.BatchV1().CronJobs(ns).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var jobName string
	c.WaitFor(t, 20*time.Second, "a job and it active", func() (bool, string) {
		cur, err := c.Client.BatchV1().CronJobs(ns).Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cur.Status.Active) == 1 {
			jobName = cur.Status.Active[0].Name
		}
		return jobName != "", fmt.Sprintf("status %+v", cur.Status)
	})
	job, err := c.Client.BatchV1().Jobs(ns).Get(ctx, jobName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "CronJob" || job.Annotations[scheduledTimestampAnnotation] == "" {
		t.Errorf("job %s: owner %v annotations %v", job.Name, job.OwnerReferences, job.Annotations)
	}
	// Play the Job controller: it completed.
	done := metav1.Now()
	job.Status.StartTime = &done
	job.Status.CompletionTime = &done
	job.Status.Succeeded = 1
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: done},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: done},
	}
	if _, err := c.Client.BatchV1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(t, 20*time.Second, "no job active and a last success", func() (bool, string) {
		cur, err := c.Client.BatchV1().CronJobs(ns).Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(cur.Status.Active) == 0 && cur.Status.LastSuccessfulTime != nil, fmt.Sprintf("status %+v", cur.Status)
	})
}
