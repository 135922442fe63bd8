package job

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
)

func TestOrderedIntervals(t *testing.T) {
	tests := []struct {
		in   string
		add  []int
		want string
	}{
		{"", []int{0}, "0"},
		{"0", []int{1}, "0,1"},
		{"0,1", []int{2, 5}, "0-2,5"},
		{"1-3,7", []int{5, 6}, "1-3,5-7"},
	}
	for _, tt := range tests {
		got := parseIndexesFromString(tt.in, 10).withOrderedIndexes(tt.add)
		if got.String() != tt.want {
			t.Errorf("%q + %v = %q, want %q", tt.in, tt.add, got.String(), tt.want)
		}
	}
}

func TestIndexedPodTemplate(t *testing.T) {
	job := newJob(3, 1, func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) })
	base := job.Spec.Template.DeepCopy()
	addCompletionIndexEnvVariables(base)
	tmpl, generateName := indexedTemplate(job, base, 2)
	if generateName != "pi-2-" || tmpl.Spec.Hostname != "pi-2" ||
		tmpl.Annotations[batchv1.JobCompletionIndexAnnotation] != "2" || tmpl.Labels[batchv1.JobCompletionIndexAnnotation] != "2" {
		t.Errorf("generateName %q, hostname %q, annotations %v, labels %v", generateName, tmpl.Spec.Hostname, tmpl.Annotations, tmpl.Labels)
	}
	env := tmpl.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("env = %+v", env)
	}
}
