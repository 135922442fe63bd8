package defaults

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// defaultDeployment sets apps/v1's Deployment defaults: one replica, a
// RollingUpdate that may run 25% more or 25% fewer Pods than wanted, ten old
// ReplicaSets kept for rollback, and ten minutes before a stuck rollout is
// reported as ProgressDeadlineExceeded.
func defaultDeployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To[int32](1)
	}
	strategy := &d.Spec.Strategy
	if strategy.Type == "" {
		strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if strategy.RollingUpdate == nil {
			strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if strategy.RollingUpdate.MaxUnavailable == nil {
			strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		}
		if strategy.RollingUpdate.MaxSurge == nil {
			strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	defaultPodSpec(&d.Spec.Template.Spec)
}

func defaultReplicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr.To[int32](1)
	}
	defaultPodSpec(&rs.Spec.Template.Spec)
}

// defaultDaemonSet sets a RollingUpdate that replaces one node's Pod at a
// time and never runs two on a node, and ten kept revisions.
func defaultDaemonSet(ds *appsv1.DaemonSet) {
	strategy := &ds.Spec.UpdateStrategy
	if strategy.Type == "" {
		strategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if strategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if strategy.RollingUpdate == nil {
			strategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if strategy.RollingUpdate.MaxUnavailable == nil {
			strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		if strategy.RollingUpdate.MaxSurge == nil {
			strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	defaultPodSpec(&ds.Spec.Template.Spec)
}

// defaultJob sets batch/v1's Job defaults and, as the job strategy does on
// create, generates the selector that ties the Job to its Pods.
func defaultJob(job *batchv1.Job) {
	spec := &job.Spec
	// A Job that says neither how many Pods must finish nor how many may run
	// at once runs one Pod to completion.
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To[int32](1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To[int32](1)
	}
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = ptr.To[int32](1<<31 - 1)
		} else {
			spec.BackoffLimit = ptr.To[int32](6)
		}
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.PodReplacementPolicy == nil {
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	if !ptr.Deref(spec.ManualSelector, false) {
		generateJobSelector(job)
	}
	// A Job without labels takes its Pods' labels. Upstream sees the
	// generated ones too the next time it decodes the stored Job; doing it
	// after generation gives that same object right away.
	if spec.Template.Labels != nil && len(job.Labels) == 0 {
		job.Labels = maps.Clone(spec.Template.Labels)
	}
	defaultPodSpec(&spec.Template.Spec)
}

// The unprefixed labels every Job controller before 1.27 put on its Pods.
// Upstream still sets them, next to the batch.kubernetes.io/ ones, so that
// old selectors keep matching.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

// generateJobSelector labels the Job's Pods with its name and UID and selects
// them by UID, so that no other Job's Pods can ever match. It needs the UID:
// without one it does nothing and validation reports metadata.uid missing.
// Labels a user already set are kept; if they conflict, validation says so.
func generateJobSelector(job *batchv1.Job) {
	if job.UID == "" {
		return
	}
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	generated := map[string]string{
		legacyJobNameLabel:         job.Name,
		batchv1.JobNameLabel:       job.Name,
		legacyControllerUIDLabel:   string(job.UID),
		batchv1.ControllerUidLabel: string(job.UID),
	}
	for key, value := range generated {
		if _, ok := job.Spec.Template.Labels[key]; !ok {
			job.Spec.Template.Labels[key] = value
		}
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{}
	}
	if job.Spec.Selector.MatchLabels == nil {
		job.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(job.UID)
	}
}
