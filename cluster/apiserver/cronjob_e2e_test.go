package apiserver_test

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestCronJobServed checks CronJobs as upstream serves them to kubectl:
// kubectl create cronjob and create job --from=cronjob/x, the defaults,
// the Table columns, category all, and the schedule's validation.
func TestCronJobServed(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	cs := adminClient(t, c)
	const ns = "cron"
	createNamespace(ctx, t, cs, ns)
	k := newKubectl(t, c, auth.AdminUser)
	wantLines(t, "kubectl create cronjob", k.ok(ctx, t, "-n", ns, "create", "cronjob", "hello", "--image=busybox:1.37", "--schedule=*/1 * * * *", "--", "date"),
		"cronjob.batch/hello created")
	cj, err := cs.BatchV1().CronJobs(ns).Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent || ptr.Deref(cj.Spec.Suspend, true) || ptr.Deref(cj.Spec.SuccessfulJobsHistoryLimit, 0) != 3 ||
		ptr.Deref(cj.Spec.FailedJobsHistoryLimit, 0) != 1 || cj.Generation != 1 {
		t.Errorf("defaults not as upstream's: %+v, generation %d", cj.Spec, cj.Generation)
	}

	tables := parseTables(k.ok(ctx, t, "-n", ns, "get", "cj", "-o", "wide"))
	if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"}) {
		t.Fatalf("get cj -o wide: %+v", tables)
	}
	r := tables[0].row("hello")
	if tables[0].column(r, "SCHEDULE") != "*/1 * * * *" || tables[0].column(r, "SUSPEND") != "False" || tables[0].column(r, "ACTIVE") != "0" ||
		tables[0].column(r, "LAST SCHEDULE") != "<none>" || tables[0].column(r, "TIMEZONE") != "<none>" || tables[0].column(r, "IMAGES") != "busybox:1.37" {
		t.Errorf("cronjob row %v", r)
	}
	wantLines(t, "kubectl get all -o name", k.ok(ctx, t, "-n", ns, "get", "all", "-o", "name"), "cronjob.batch/hello")

	wantLines(t, "kubectl create job --from", k.ok(ctx, t, "-n", ns, "create", "job", "manual", "--from=cronjob/hello"), "job.batch/manual created")
	job, err := cs.BatchV1().Jobs(ns).Get(ctx, "manual", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" || metav1.GetControllerOf(job) == nil || metav1.GetControllerOf(job).UID != cj.UID {
		t.Errorf("job from the cronjob: annotations %v owner %v", job.Annotations, job.OwnerReferences)
	}

	res := k.run(ctx, t, nil, "-n", ns, "create", "cronjob", "bad", "--image=busybox:1.37", "--schedule=every minute")
	if res.code == 0 || !strings.Contains(res.stderr, `spec.schedule: Invalid value: "every minute"`) {
		t.Errorf("bad schedule: exit %d, %s", res.code, res.stderr)
	}
	res = k.run(ctx, t, nil, "-n", ns, "create", "cronjob", "tz", "--image=busybox:1.37", "--schedule=CRON_TZ=UTC */5 * * * *")
	if res.code == 0 || !strings.Contains(res.stderr, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead") {
		t.Errorf("TZ in schedule: exit %d, %s", res.code, res.stderr)
	}
	long := strings.Repeat("a", 53)
	_, err = cs.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: long}, Spec: cj.Spec}, metav1.CreateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, `CronJob.batch "`+long+`" is invalid: metadata.name: Invalid value: "`+long+`": must be no more than 52 characters`)
}
