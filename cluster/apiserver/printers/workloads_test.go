package printers

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// template is a pod template with a web server and a sidecar.
func template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "web", Image: "klab/app:1"},
		{Name: "log", Image: "busybox:1.36"},
	}}}
}

func TestDeploymentCells(t *testing.T) {
	tests := []struct {
		name     string
		replicas *int32
		selector *metav1.LabelSelector
		status   appsv1.DeploymentStatus
		want     []any // READY UP-TO-DATE AVAILABLE ... SELECTOR
	}{
		{
			name:     "rolling out",
			replicas: ptr(int32(3)),
			selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			status:   appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 1, AvailableReplicas: 2},
			want:     []any{"2/3", int64(1), int64(2), "app=web"},
		},
		{
			name:     "scaled to zero, set-based selector",
			replicas: ptr(int32(0)),
			selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}},
			want:     []any{"0/0", int64(0), int64(0), "tier in (api,web)"},
		},
		{
			name:     "invalid selector",
			replicas: ptr(int32(1)),
			selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}},
			want:     []any{"0/1", int64(0), int64(0), "<invalid>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &appsv1.Deployment{
				ObjectMeta: objectMeta("web", 26*time.Hour),
				Spec:       appsv1.DeploymentSpec{Replicas: tt.replicas, Selector: tt.selector, Template: template()},
				Status:     tt.status,
			}
			want := append([]any{"web"}, tt.want[:3]...)
			want = append(want, "26h", "web,log", "klab/app:1,busybox:1.36", tt.want[3])
			assertCells(t, rowCells(t, d), want)
		})
	}
}

func TestReplicaSetCells(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: objectMeta("web-7d9f8c6b5", 4*time.Minute+20*time.Second),
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5"}},
			Template: template(),
		},
		Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 1},
	}
	assertCells(t, rowCells(t, rs), []any{
		"web-7d9f8c6b5", int64(3), int64(3), int64(1), "4m20s",
		"web,log", "klab/app:1,busybox:1.36", "app=web,pod-template-hash=7d9f8c6b5",
	})
}

func TestDaemonSetCells(t *testing.T) {
	tests := []struct {
		name         string
		nodeSelector map[string]string
		want         string
	}{
		{name: "with node selector", nodeSelector: map[string]string{"kubernetes.io/os": "linux"}, want: "kubernetes.io/os=linux"},
		{name: "without node selector", want: "<none>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := template()
			tmpl.Spec.NodeSelector = tt.nodeSelector
			ds := &appsv1.DaemonSet{
				ObjectMeta: objectMeta("kube-proxy", 3*24*time.Hour),
				Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-proxy"}}, Template: tmpl},
				Status: appsv1.DaemonSetStatus{
					DesiredNumberScheduled: 4, CurrentNumberScheduled: 4, NumberReady: 3, UpdatedNumberScheduled: 2, NumberAvailable: 3,
				},
			}
			assertCells(t, rowCells(t, ds), []any{
				"kube-proxy", int64(4), int64(4), int64(3), int64(2), int64(3), tt.want, "3d",
				"web,log", "klab/app:1,busybox:1.36", "k8s-app=kube-proxy",
			})
		})
	}
}

func TestJobCells(t *testing.T) {
	jobCondition := func(t batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue}
	}
	tests := []struct {
		name     string
		job      func(*batchv1.Job)
		status   string
		complete string
		duration string
	}{
		{
			name:   "not started",
			job:    func(*batchv1.Job) {},
			status: "Running", complete: "0/1", duration: "",
		},
		{
			name: "running, duration so far",
			job: func(j *batchv1.Job) {
				j.Spec.Completions = ptr(int32(5))
				j.Status.StartTime = agoPtr(150 * time.Second)
				j.Status.Succeeded = 2
			},
			status: "Running", complete: "2/5", duration: "2m30s",
		},
		{
			name: "parallel without completions",
			job: func(j *batchv1.Job) {
				j.Spec.Parallelism = ptr(int32(3))
				j.Status.StartTime = agoPtr(time.Minute)
			},
			status: "Running", complete: "0/1 of 3", duration: "60s",
		},
		{
			name: "complete, duration start to end",
			job: func(j *batchv1.Job) {
				j.Spec.Completions = ptr(int32(1))
				j.Status.StartTime = agoPtr(5 * time.Minute)
				j.Status.CompletionTime = agoPtr(5*time.Minute - 12*time.Second)
				j.Status.Succeeded = 1
				j.Status.Conditions = []batchv1.JobCondition{jobCondition(batchv1.JobSuccessCriteriaMet), jobCondition(batchv1.JobComplete)}
			},
			status: "Complete", complete: "1/1", duration: "12s",
		},
		{
			name: "failed",
			job: func(j *batchv1.Job) {
				j.Status.StartTime = agoPtr(time.Hour)
				j.Status.Conditions = []batchv1.JobCondition{jobCondition(batchv1.JobFailureTarget), jobCondition(batchv1.JobFailed)}
			},
			status: "Failed", complete: "0/1", duration: "60m",
		},
		{
			name: "failure target reached, pods still terminating",
			job: func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{jobCondition(batchv1.JobFailureTarget)}
			},
			status: "FailureTarget", complete: "0/1", duration: "",
		},
		{
			name: "suspended",
			job: func(j *batchv1.Job) {
				j.Spec.Suspend = ptr(true)
				j.Status.Conditions = []batchv1.JobCondition{jobCondition(batchv1.JobSuspended)}
			},
			status: "Suspended", complete: "0/1", duration: "",
		},
		{
			name: "condition present but not true",
			job: func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse}}
			},
			status: "Running", complete: "0/1", duration: "",
		},
		{
			name: "being deleted",
			job: func(j *batchv1.Job) {
				j.DeletionTimestamp = agoPtr(time.Second)
				j.Status.Conditions = []batchv1.JobCondition{jobCondition(batchv1.JobSuspended)}
			},
			status: "Terminating", complete: "0/1", duration: "",
		},
		{
			name: "complete before being deleted",
			job: func(j *batchv1.Job) {
				j.DeletionTimestamp = agoPtr(time.Second)
				j.Status.Conditions = []batchv1.JobCondition{jobCondition(batchv1.JobComplete)}
			},
			status: "Complete", complete: "0/1", duration: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := &batchv1.Job{
				ObjectMeta: objectMeta("pi", 10*time.Minute),
				Spec: batchv1.JobSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "c0ffee"}},
					Template: template(),
				},
			}
			tt.job(job)
			assertCells(t, rowCells(t, job), []any{
				"pi", tt.status, tt.complete, tt.duration, "10m",
				"web,log", "klab/app:1,busybox:1.36", "batch.kubernetes.io/controller-uid=c0ffee",
			})
		})
	}
}
