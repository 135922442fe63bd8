package printers

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
)

// printDeployment prints NAME READY UP-TO-DATE AVAILABLE AGE, and for -o wide
// CONTAINERS IMAGES SELECTOR. READY is ready/desired pods ("2/3").
func printDeployment(d *appsv1.Deployment, now time.Time) metav1.TableRow {
	selector := "<invalid>"
	if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		selector = s.String()
	}
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	return cells(
		d.Name,
		fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, int32Value(d.Spec.Replicas)),
		int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas),
		age(d.CreationTimestamp, now),
		names, images, selector,
	)
}

// printReplicaSet prints NAME DESIRED CURRENT READY AGE, and for -o wide
// CONTAINERS IMAGES SELECTOR.
func printReplicaSet(rs *appsv1.ReplicaSet, now time.Time) metav1.TableRow {
	names, images := containerCells(rs.Spec.Template.Spec.Containers)
	return cells(
		rs.Name,
		int64(int32Value(rs.Spec.Replicas)),
		int64(rs.Status.Replicas),
		int64(rs.Status.ReadyReplicas),
		age(rs.CreationTimestamp, now),
		names, images, metav1.FormatLabelSelector(rs.Spec.Selector),
	)
}

// printReplicationController prints NAME DESIRED CURRENT READY AGE, and for
// -o wide CONTAINERS IMAGES SELECTOR, as a ReplicaSet.
func printReplicationController(rc *corev1.ReplicationController, now time.Time) metav1.TableRow {
	var names, images string
	if rc.Spec.Template != nil {
		names, images = containerCells(rc.Spec.Template.Spec.Containers)
	}
	return cells(
		rc.Name,
		int64(int32Value(rc.Spec.Replicas)),
		int64(rc.Status.Replicas),
		int64(rc.Status.ReadyReplicas),
		age(rc.CreationTimestamp, now),
		names, images, labels.FormatLabels(rc.Spec.Selector),
	)
}

// printPodTemplate prints NAME CONTAINERS IMAGES POD LABELS.
func printPodTemplate(t *corev1.PodTemplate, _ time.Time) metav1.TableRow {
	names, images := containerCells(t.Template.Spec.Containers)
	return cells(t.Name, names, images, labels.FormatLabels(t.Template.Labels))
}

// printDaemonSet prints NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE
// SELECTOR AGE, and for -o wide CONTAINERS IMAGES SELECTOR.
func printDaemonSet(ds *appsv1.DaemonSet, now time.Time) metav1.TableRow {
	names, images := containerCells(ds.Spec.Template.Spec.Containers)
	return cells(
		ds.Name,
		int64(ds.Status.DesiredNumberScheduled),
		int64(ds.Status.CurrentNumberScheduled),
		int64(ds.Status.NumberReady),
		int64(ds.Status.UpdatedNumberScheduled),
		int64(ds.Status.NumberAvailable),
		labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		age(ds.CreationTimestamp, now),
		names, images, metav1.FormatLabelSelector(ds.Spec.Selector),
	)
}

// printStatefulSet prints NAME READY AGE, and for -o wide CONTAINERS
// IMAGES; READY is ready/desired replicas.
func printStatefulSet(sts *appsv1.StatefulSet, now time.Time) metav1.TableRow {
	names, images := containerCells(sts.Spec.Template.Spec.Containers)
	return cells(
		sts.Name,
		fmt.Sprintf("%d/%d", sts.Status.ReadyReplicas, int32Value(sts.Spec.Replicas)),
		age(sts.CreationTimestamp, now),
		names, images,
	)
}

// printJob prints NAME STATUS COMPLETIONS DURATION AGE, and for -o wide
// CONTAINERS IMAGES SELECTOR.
//
// COMPLETIONS is succeeded/completions ("1/3"); a job without completions
// needs one success, and shows its parallelism when above one ("0/1 of 3").
// DURATION runs from status.startTime to completionTime, or to now while the
// job runs; it is empty before the job starts.
func printJob(job *batchv1.Job, now time.Time) metav1.TableRow {
	completions := fmt.Sprintf("%d/1", job.Status.Succeeded)
	if job.Spec.Completions != nil {
		completions = fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	} else if p := int32Value(job.Spec.Parallelism); p > 1 {
		completions = fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, p)
	}

	var took string
	switch {
	case job.Status.StartTime == nil:
	case job.Status.CompletionTime == nil:
		took = duration.HumanDuration(now.Sub(job.Status.StartTime.Time))
	default:
		took = duration.HumanDuration(job.Status.CompletionTime.Sub(job.Status.StartTime.Time))
	}

	names, images := containerCells(job.Spec.Template.Spec.Containers)
	return cells(
		job.Name,
		jobStatus(job),
		completions,
		took,
		age(job.CreationTimestamp, now),
		names, images, metav1.FormatLabelSelector(job.Spec.Selector),
	)
}

// jobStatus is the Job's STATUS: a finished job says how it finished, before
// anything else; then a job being deleted, suspended, or past its failure
// policy's verdict (FailureTarget); anything else is Running.
func jobStatus(job *batchv1.Job) string {
	switch {
	case jobCondition(job, batchv1.JobComplete):
		return "Complete"
	case jobCondition(job, batchv1.JobFailed):
		return "Failed"
	case job.DeletionTimestamp != nil:
		return "Terminating"
	case jobCondition(job, batchv1.JobSuspended):
		return "Suspended"
	case jobCondition(job, batchv1.JobFailureTarget):
		return "FailureTarget"
	default:
		return "Running"
	}
}

// jobCondition reports whether the job's first condition of type t is True.
func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// int32Value reads an optional count as kube-apiserver's conversion to the
// internal type does: nil is zero.
func int32Value(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
