package validation

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestJobCreate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []string
	}{
		{name: "valid", mutate: func(*batchv1.Job) {}},
		{
			// Left out, restartPolicy defaults to Always, which a Job refuses.
			name:   "restartPolicy left out",
			mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" },
			want:   []string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		},
		{
			name:   "restartPolicy Always",
			mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			want:   []string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		},
		{
			name: "negative counts",
			mutate: func(j *batchv1.Job) {
				j.Spec.Completions, j.Spec.Parallelism, j.Spec.BackoffLimit = ptr.To[int32](-1), ptr.To[int32](-2), ptr.To[int32](-3)
			},
			want: []string{
				`spec.completions: Invalid value: -1: must be greater than or equal to 0`,
				`spec.parallelism: Invalid value: -2: must be greater than or equal to 0`,
				`spec.backoffLimit: Invalid value: -3: must be greater than or equal to 0`,
			},
		},
		{
			name:   "no uid: no generated selector",
			mutate: func(j *batchv1.Job) { j.UID = "" },
			want: []string{
				`spec.selector: Required value`,
				"spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`",
			},
		},
		{
			name: "manual selector that does not match",
			mutate: func(j *batchv1.Job) {
				j.Spec.ManualSelector = ptr.To(true)
				j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
			},
			want: []string{"spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`"},
		},
		{
			name:   "pod label that fights the generated one",
			mutate: func(j *batchv1.Job) { j.Spec.Template.Labels = map[string]string{"job-name": "other"} },
			want: []string{
				`spec.template.metadata.labels[job-name]: Invalid value: {"batch.kubernetes.io/controller-uid":"0b7c4d1e-5a2f-4c3b-9e8d-1f2a3b4c5d6e","batch.kubernetes.io/job-name":"pi","controller-uid":"0b7c4d1e-5a2f-4c3b-9e8d-1f2a3b4c5d6e","job-name":"other"}: must be 'pi'`,
			},
		},
		{
			name: "indexed job needs completions",
			mutate: func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Parallelism = ptr.To[int32](2)
			},
			want: []string{`spec.completions: Required value: when completion mode is Indexed`},
		},
		{
			name: "indexed pod hostnames must be DNS labels",
			mutate: func(j *batchv1.Job) {
				j.Name = strings.Repeat("p", 62)
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Completions = ptr.To[int32](10)
			},
			want: []string{
				`metadata.name: Invalid value: "` + strings.Repeat("p", 62) + `": will not able to create pod with invalid DNS label: ` + strings.Repeat("p", 62) + `-9`,
			},
		},
		{
			name:   "per-index backoff needs indexed mode",
			mutate: func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](1) },
			want:   []string{`spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, ValidateCreate(validJob(tt.mutate)), tt.want...)
		})
	}
}

func TestJobUpdate(t *testing.T) {
	old := validJob()
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []string
	}{
		{name: "suspend", mutate: func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }},
		{name: "parallelism", mutate: func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](4) }},
		{
			name:   "completions",
			mutate: func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](3) },
			want:   []string{`spec.completions: Invalid value: 3: field is immutable`},
		},
		{
			name:   "selector",
			mutate: func(j *batchv1.Job) { j.Spec.Selector.MatchLabels["batch.kubernetes.io/job-name"] = "pi" },
			want:   []string{`spec.selector: Invalid value: {"matchLabels":{"batch.kubernetes.io/controller-uid":"0b7c4d1e-5a2f-4c3b-9e8d-1f2a3b4c5d6e","batch.kubernetes.io/job-name":"pi"}}: field is immutable`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := old.DeepCopy()
			tt.mutate(job)
			checkErrors(t, ValidateUpdate(job, old), tt.want...)
		})
	}

	// The template is immutable too; the error shows the whole template.
	job := old.DeepCopy()
	job.Spec.Template.Spec.Containers[0].Image = "perl:5.40"
	errs := ValidateUpdate(job, old)
	if len(errs) != 1 || errs[0].Field != "spec.template" || !strings.HasSuffix(errs[0].Error(), ": field is immutable") {
		t.Errorf("changing the template: got %v, want one spec.template immutable error", errs)
	}
}

func TestJobStatusUpdate(t *testing.T) {
	old := validJob()
	job := old.DeepCopy()
	job.Status = batchv1.JobStatus{Active: -1, Ready: ptr.To[int32](-1),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a", ""}, Failed: []types.UID{"a"}}}
	checkErrors(t, ValidateStatusUpdate(job, old),
		`status.active: Invalid value: -1: must be greater than or equal to 0`,
		`status.ready: Invalid value: -1: must be greater than or equal to 0`,
		`status.uncountedTerminatedPods.succeeded[1]: Invalid value: "": must not be empty`,
		`status.uncountedTerminatedPods.failed[0]: Duplicate value: "a"`,
	)
}
