package job

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newJob returns a Job as the API server stores it after defaulting and
// generating its selector.
func newJob(completions, parallelism int32, opts ...func(*batchv1.Job)) *batchv1.Job {
	labels := map[string]string{
		batchv1.ControllerUidLabel: "pi-uid", batchv1.JobNameLabel: "pi",
		"controller-uid": "pi-uid", "job-name": "pi",
	}
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "pi-uid", Generation: 1},
		Spec: batchv1.JobSpec{
			Completions:          ptr.To(completions),
			Parallelism:          ptr.To(parallelism),
			BackoffLimit:         ptr.To[int32](6),
			CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
			Suspend:              ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "pi-uid"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "pi", Image: "klab/app"}},
				},
			},
		},
		Status: batchv1.JobStatus{StartTime: ptr.To(metav1.NewTime(now.Add(-time.Minute)))},
	}
	for _, o := range opts {
		o(j)
	}
	return j
}

// jobPod returns a pod of job with the tracking finalizer.
func jobPod(name string, job *batchv1.Job, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID(name + "-uid"),
			Labels:            job.Spec.Template.Labels,
			Finalizers:        []string{batchv1.JobTrackingFinalizer},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Minute)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(job, controllerKind)},
		},
		Spec:   corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// finished ends the pod in phase, its container terminated ago.
func finished(phase corev1.PodPhase, ago time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = phase
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  "pi",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(now.Add(-ago))}},
		}}
	}
}

func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
}

func indexed(ix string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: ix}
	}
}

func fixture(t *testing.T, objects ...runtime.Object) (*controllertest.Fixture, *Controller) {
	t.Helper()
	f := controllertest.New(objects...)
	jm, err := newController(f.Context)
	if err != nil {
		t.Fatal(err)
	}
	jm.clock = clocktesting.NewFakePassiveClock(now)
	if err := f.Index(objects...); err != nil {
		t.Fatal(err)
	}
	return f, jm
}

// statuses returns the Job statuses the sync wrote, in order.
func statuses(f *controllertest.Fixture) []batchv1.JobStatus {
	var out []batchv1.JobStatus
	for _, a := range f.Client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			out = append(out, u.GetObject().(*batchv1.Job).Status)
		}
	}
	return out
}

// conditions writes a status's conditions as "Type Status Reason".
func conditions(st batchv1.JobStatus) []string {
	var out []string
	for _, c := range st.Conditions {
		out = append(out, string(c.Type)+" "+string(c.Status)+" "+c.Reason)
	}
	return out
}

func TestSyncJob(t *testing.T) {
	job := newJob(1, 1)
	tests := []struct {
		name        string
		objects     []runtime.Object
		wantActions []string
		wantEvents  []string
		// check looks at the statuses written, in order.
		check func(t *testing.T, sts []batchv1.JobStatus)
	}{
		{
			name:        "a new Job starts parallelism pods",
			objects:     []runtime.Object{newJob(5, 2, func(j *batchv1.Job) { j.Status = batchv1.JobStatus{} })},
			wantActions: []string{"create pods pi-", "create pods pi-", "update jobs/status pi"},
			wantEvents:  []string{"Normal SuccessfulCreate Created pod: pi-1", "Normal SuccessfulCreate Created pod: pi-2"},
			check: func(t *testing.T, sts []batchv1.JobStatus) {
				st := sts[0]
				if st.StartTime == nil || !st.StartTime.Time.Equal(now) || st.Active != 2 || *st.Ready != 0 || *st.Terminating != 0 ||
					st.UncountedTerminatedPods == nil {
					t.Errorf("status = %+v; want started now, 2 active, 0 ready and terminating, empty uncounted", st)
				}
			},
		},
		{
			name:        "a succeeded pod is counted and completes the Job",
			objects:     []runtime.Object{job, jobPod("pi-a", job, finished(corev1.PodSucceeded, time.Second))},
			wantActions: []string{"update jobs/status pi", "patch pods pi-a", "update jobs/status pi"},
			wantEvents:  []string{"Normal Completed Job completed"},
			check: func(t *testing.T, sts []batchv1.JobStatus) {
				if got := sts[0].UncountedTerminatedPods.Succeeded; !cmp.Equal(got, []types.UID{"pi-a-uid"}) {
					t.Errorf("first write: uncounted succeeded %v, want the pod before its finalizer goes", got)
				}
				if diff := cmp.Diff([]string{"SuccessCriteriaMet True CompletionsReached"}, conditions(sts[0])); diff != "" {
					t.Errorf("first write conditions (-want +got):\n%s", diff)
				}
				last := sts[1]
				if last.Succeeded != 1 || len(last.UncountedTerminatedPods.Succeeded) != 0 || last.CompletionTime == nil {
					t.Errorf("last write = %+v; want 1 succeeded, none uncounted, a completion time", last)
				}
				want := []string{"SuccessCriteriaMet True CompletionsReached", "Complete True CompletionsReached"}
				if diff := cmp.Diff(want, conditions(last)); diff != "" {
					t.Errorf("conditions (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:        "a failed pod is replaced once the backoff passed",
			objects:     []runtime.Object{job, jobPod("pi-a", job, finished(corev1.PodFailed, 20*time.Second))},
			wantActions: []string{"create pods pi-", "update jobs/status pi", "patch pods pi-a", "update jobs/status pi"},
			wantEvents:  []string{"Normal SuccessfulCreate Created pod: pi-1"},
			check: func(t *testing.T, sts []batchv1.JobStatus) {
				if last := sts[1]; last.Failed != 1 || last.Active != 1 || len(conditions(last)) != 0 {
					t.Errorf("status = %+v; want 1 failed, 1 active, no condition", last)
				}
			},
		},
		{
			name:        "a failed pod is not replaced within the 10 s backoff",
			objects:     []runtime.Object{job, jobPod("pi-a", job, finished(corev1.PodFailed, 5*time.Second))},
			wantActions: []string{"update jobs/status pi", "patch pods pi-a", "update jobs/status pi"},
		},
		{
			name: "more failures than backoffLimit fail the Job",
			objects: []runtime.Object{newJob(1, 1, func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](1) }),
				jobPod("pi-a", job, finished(corev1.PodFailed, time.Minute)), jobPod("pi-b", job, finished(corev1.PodFailed, time.Second))},
			wantActions: []string{"update jobs/status pi", "patch pods pi-a", "patch pods pi-b", "update jobs/status pi"},
			wantEvents:  []string{"Warning BackoffLimitExceeded Job has reached the specified backoff limit"},
			check: func(t *testing.T, sts []batchv1.JobStatus) {
				if diff := cmp.Diff([]string{"FailureTarget True BackoffLimitExceeded"}, conditions(sts[0])); diff != "" {
					t.Errorf("first write conditions (-want +got):\n%s", diff)
				}
				last := sts[1]
				want := []string{"FailureTarget True BackoffLimitExceeded", "Failed True BackoffLimitExceeded"}
				if diff := cmp.Diff(want, conditions(last)); diff != "" {
					t.Errorf("conditions (-want +got):\n%s", diff)
				}
				if last.Failed != 2 || last.Conditions[1].Message != "Job has reached the specified backoff limit" || last.CompletionTime != nil {
					t.Errorf("status = %+v; want 2 failed, the backoff message, no completion time", last)
				}
			},
		},
		{
			name: "activeDeadlineSeconds deletes the running pods and marks the failure",
			objects: []runtime.Object{newJob(1, 1, func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](10) }),
				jobPod("pi-a", job, ready)},
			wantActions: []string{"delete pods pi-a", "update jobs/status pi", "patch pods pi-a", "update jobs/status pi"},
			wantEvents:  []string{"Normal SuccessfulDelete Deleted pod: pi-a"},
			check: func(t *testing.T, sts []batchv1.JobStatus) {
				last := sts[1]
				// Failed waits until the deleted pod is gone.
				if diff := cmp.Diff([]string{"FailureTarget True DeadlineExceeded"}, conditions(last)); diff != "" {
					t.Errorf("conditions (-want +got):\n%s", diff)
				}
				if last.Failed != 1 || last.Active != 0 || *last.Terminating != 1 || *last.Ready != 0 {
					t.Errorf("status = %+v; want 1 failed, 0 active, 1 terminating", last)
				}
			},
		},
		{
			name: "a FailureTarget Job fails once its pods are gone",
			objects: []runtime.Object{newJob(1, 1, func(j *batchv1.Job) {
				j.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
				j.Status.Failed = 1
				j.Status.Terminating = ptr.To[int32](1)
				j.Status.Ready = ptr.To[int32](0)
				j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
				j.Status.Conditions = []batchv1.JobCondition{*newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue,
					batchv1.JobReasonDeadlineExceeded, deadlineExceededMessage, now.Add(-time.Second))}
			})},
			// The counters change first (terminating drops to 0), then the
			// condition is added, as upstream writes them.
			wantActions: []string{"update jobs/status pi", "update jobs/status pi"},
			wantEvents:  []string{"Warning DeadlineExceeded Job was active longer than specified deadline"},
			check: func(t *testing.T, sts []batchv1.JobStatus) {
				want := []string{"FailureTarget True DeadlineExceeded", "Failed True DeadlineExceeded"}
				if diff := cmp.Diff(want, conditions(sts[1])); diff != "" {
					t.Errorf("conditions (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "lowering parallelism deletes the extra pod without counting it",
			objects: []runtime.Object{newJob(5, 1),
				jobPod("pi-ready", job, ready), jobPod("pi-pending", job, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })},
			wantActions: []string{"patch pods pi-pending", "delete pods pi-pending", "update jobs/status pi"},
			wantEvents:  []string{"Normal SuccessfulDelete Deleted pod: pi-pending"},
			check: func(t *testing.T, sts []batchv1.JobStatus) {
				if st := sts[0]; st.Active != 1 || st.Failed != 0 {
					t.Errorf("status = %+v; want 1 active and nothing failed", st)
				}
			},
		},
		{
			name: "an Indexed Job runs the pending indexes",
			objects: func() []runtime.Object {
				j := newJob(3, 2, func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) })
				return []runtime.Object{j, jobPod("pi-0-x", j, indexed("0"), finished(corev1.PodSucceeded, time.Second))}
			}(),
			wantActions: []string{"create pods pi-1-", "create pods pi-2-", "update jobs/status pi", "patch pods pi-0-x"},
			wantEvents:  []string{"Normal SuccessfulCreate Created pod: pi-1-1", "Normal SuccessfulCreate Created pod: pi-2-2"},
			check: func(t *testing.T, sts []batchv1.JobStatus) {
				if st := sts[0]; st.CompletedIndexes != "0" || st.Succeeded != 1 || st.Active != 2 {
					t.Errorf("status = %+v; want completed index 0, 1 succeeded, 2 active", st)
				}
			},
		},
		{
			name: "a suspended Job deletes its pods",
			objects: []runtime.Object{newJob(5, 1, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }),
				jobPod("pi-a", job, ready)},
			wantActions: []string{"patch pods pi-a", "delete pods pi-a", "update jobs/status pi"},
			wantEvents:  []string{"Normal SuccessfulDelete Deleted pod: pi-a", "Normal Suspended Job suspended"},
			check: func(t *testing.T, sts []batchv1.JobStatus) {
				if diff := cmp.Diff([]string{"Suspended True JobSuspended"}, conditions(sts[0])); diff != "" {
					t.Errorf("conditions (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "a counted pod without its finalizer is not counted again",
			objects: []runtime.Object{newJob(2, 1, func(j *batchv1.Job) {
				j.Status.Succeeded, j.Status.Active = 1, 1
				j.Status.Ready, j.Status.Terminating = ptr.To[int32](0), ptr.To[int32](0)
				j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
			}),
				jobPod("pi-a", job, finished(corev1.PodSucceeded, time.Minute), func(p *corev1.Pod) { p.Finalizers = nil }),
				jobPod("pi-b", job)},
		},
		{
			name: "adopts a matching orphan pod, adding the tracking finalizer",
			objects: []runtime.Object{job, jobPod("stray", job, func(p *corev1.Pod) {
				p.OwnerReferences, p.Finalizers = nil, nil
			})},
			wantActions: []string{"get jobs pi", "patch pods stray", "update jobs/status pi"},
			check: func(t *testing.T, sts []batchv1.JobStatus) {
				if st := sts[0]; st.Active != 1 {
					t.Errorf("status = %+v; want the adopted pod active", st)
				}
			},
		},
		{
			name: "a finished Job is left alone",
			objects: []runtime.Object{newJob(1, 1, func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{*newCondition(batchv1.JobComplete, corev1.ConditionTrue, batchv1.JobReasonCompletionsReached, completionsReachedMessage, now)}
			}), jobPod("pi-a", job)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, jm := fixture(t, tt.objects...)
			if err := jm.syncJob(context.Background(), "default/pi"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			// Patches of several pods go out in parallel.
			if diff := cmp.Diff(tt.wantActions, sortRuns(f.Actions())); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(controllertest.Sorted(tt.wantEvents), controllertest.Sorted(f.Events())); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tt.check != nil {
				tt.check(t, statuses(f))
			}
		})
	}
}

// sortRuns sorts each run of consecutive actions with the same verb and
// resource: the sync issues such runs in parallel.
func sortRuns(actions []string) []string {
	prefix := func(s string) string {
		for i, n := 0, 0; i < len(s); i++ {
			if s[i] == ' ' {
				if n++; n == 2 {
					return s[:i]
				}
			}
		}
		return s
	}
	out := append([]string(nil), actions...)
	for start := 0; start < len(out); {
		end := start + 1
		for end < len(out) && prefix(out[end]) == prefix(out[start]) {
			end++
		}
		copy(out[start:end], controllertest.Sorted(out[start:end]))
		start = end
	}
	return out
}

func TestCreatedPodsCarryFinalizerAndLabels(t *testing.T) {
	f, jm := fixture(t, newJob(1, 1))
	if err := jm.syncJob(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	pods, err := f.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods = %v, %v; want one", pods, err)
	}
	pod := pods.Items[0]
	wantLabels := map[string]string{
		"batch.kubernetes.io/controller-uid": "pi-uid", "batch.kubernetes.io/job-name": "pi",
		"controller-uid": "pi-uid", "job-name": "pi",
	}
	if diff := cmp.Diff(wantLabels, pod.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if !cmp.Equal(pod.Finalizers, []string{"batch.kubernetes.io/job-tracking"}) {
		t.Errorf("finalizers = %v", pod.Finalizers)
	}
	if ref := metav1.GetControllerOf(&pod); ref == nil || ref.Kind != "Job" || ref.APIVersion != "batch/v1" || ref.UID != "pi-uid" {
		t.Errorf("controller ref = %+v", ref)
	}
}

func TestOrphanPodLosesItsFinalizer(t *testing.T) {
	job := newJob(1, 1)
	// The Job is gone (not in the cache); its pod still has the finalizer.
	f, jm := fixture(t, jobPod("pi-a", job, finished(corev1.PodSucceeded, time.Second)))
	if err := jm.syncOrphanPod(context.Background(), "default/pi-a"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"patch pods pi-a"}, f.Actions()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	pod, err := f.Client.CoreV1().Pods("default").Get(context.Background(), "pi-a", metav1.GetOptions{})
	if err != nil || len(pod.Finalizers) != 0 {
		t.Errorf("finalizers after the patch = %v (%v), want none", pod.Finalizers, err)
	}
}

func TestAdoptionAddsTheTrackingFinalizer(t *testing.T) {
	job := newJob(1, 1)
	stray := jobPod("stray", job, func(p *corev1.Pod) { p.OwnerReferences, p.Finalizers = nil, nil })
	f, jm := fixture(t, job, stray)
	if err := jm.syncJob(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	pod, err := f.Client.CoreV1().Pods("default").Get(context.Background(), "stray", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != job.UID || !cmp.Equal(pod.Finalizers, []string{batchv1.JobTrackingFinalizer}) {
		t.Errorf("adopted pod: controller %v, finalizers %v; want the Job and the tracking finalizer", ref, pod.Finalizers)
	}
}
