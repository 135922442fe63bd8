package defaults

import (
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
)

// defaultCronJob fills in upstream's CronJob defaults: concurrent runs
// allowed, not suspended, three succeeded and one failed Job kept. The
// Job template's own spec is left as written (its Jobs get the Job
// defaults when they are made); only its Pod template is defaulted.
func defaultCronJob(cj *batchv1.CronJob) {
	spec := &cj.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	}
	defaultPodSpec(&spec.JobTemplate.Spec.Template.Spec)
}
