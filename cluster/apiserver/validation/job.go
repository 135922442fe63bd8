package validation

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Labels the job strategy puts on a Job's Pods when it generates the
// selector; the unprefixed pair predates Kubernetes 1.27.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

// maxParallelismForIndexedJob caps an Indexed Job's parallelism, which
// bounds the length of status.completedIndexes.
const maxParallelismForIndexedJob = 100000

func validateJob(job *batchv1.Job) field.ErrorList {
	allErrs := validateObjectMeta(&job.ObjectMeta, true, nameIsDNSSubdomain)
	allErrs = append(allErrs, validateGeneratedSelector(job)...)
	allErrs = append(allErrs, validateJobSpec(&job.Spec, specPath)...)
	// An Indexed Job's Pods are named <job>-<index> and use that as their
	// hostname, so the longest one must still be a DNS label.
	if ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion && ptr.Deref(job.Spec.Completions, 0) > 0 {
		hostname := fmt.Sprintf("%s-%d", job.Name, *job.Spec.Completions-1)
		if len(validation.IsDNS1123Label(hostname)) > 0 {
			allErrs = append(allErrs, field.Invalid(metadataPath.Child("name"), job.Name, fmt.Sprintf("will not able to create pod with invalid DNS label: %s", hostname)))
		}
	}
	return allErrs
}

// validateGeneratedSelector checks a selector the server generated: the
// Pods must carry the Job's name and UID, and the selector must pick
// exactly those. A manualSelector Job is on its own.
func validateGeneratedSelector(job *batchv1.Job) field.ErrorList {
	if ptr.Deref(job.Spec.ManualSelector, false) || job.Spec.Selector == nil {
		return nil
	}
	var allErrs field.ErrorList
	if job.UID == "" {
		allErrs = append(allErrs, field.Required(metadataPath.Child("uid"), ""))
	}
	templateMeta := specPath.Child("template", "metadata")
	uid, name := string(job.UID), job.Name
	for _, l := range []struct{ key, value string }{
		{legacyControllerUIDLabel, uid}, {legacyJobNameLabel, name},
		{batchv1.ControllerUidLabel, uid}, {batchv1.JobNameLabel, name},
	} {
		allErrs = append(allErrs, validateHasLabel(job.Spec.Template.ObjectMeta, templateMeta, l.key, l.value)...)
	}
	expected := labels.Set{
		legacyControllerUIDLabel: uid, legacyJobNameLabel: name,
		batchv1.ControllerUidLabel: uid, batchv1.JobNameLabel: name,
	}
	if selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil && !selector.Matches(expected) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("selector"), job.Spec.Selector, "`selector` not auto-generated"))
	}
	return allErrs
}

func validateHasLabel(meta metav1.ObjectMeta, fldPath *field.Path, key, expected string) field.ErrorList {
	actual, found := meta.Labels[key]
	if !found {
		return field.ErrorList{field.Required(fldPath.Child("labels").Key(key), fmt.Sprintf("must be '%s'", expected))}
	}
	if actual != expected {
		return field.ErrorList{field.Invalid(fldPath.Child("labels").Key(key), meta.Labels, fmt.Sprintf("must be '%s'", expected))}
	}
	return nil
}

// validateJobTemplateSpecSpec checks a Job spec as a CronJob's template
// holds it too: everything but the selector, which the API server
// generates when the Job is made.
func validateJobTemplateSpecSpec(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, f := range []struct {
		name  string
		value *int32
	}{
		{"parallelism", spec.Parallelism}, {"completions", spec.Completions},
		{"backoffLimit", spec.BackoffLimit}, {"ttlSecondsAfterFinished", spec.TTLSecondsAfterFinished},
		{"backoffLimitPerIndex", spec.BackoffLimitPerIndex}, {"maxFailedIndexes", spec.MaxFailedIndexes},
	} {
		if f.value != nil {
			allErrs = append(allErrs, validateNonnegative(int64(*f.value), fldPath.Child(f.name))...)
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, validateNonnegative(*spec.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	if spec.MaxFailedIndexes != nil && spec.BackoffLimitPerIndex == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	indexed := false
	if mode := spec.CompletionMode; mode != nil {
		valid := []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}
		if !slices.Contains(valid, *mode) {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("completionMode"), mode, valid))
		}
		indexed = *mode == batchv1.IndexedCompletion
	}
	if indexed {
		if spec.Completions == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
		}
		if spec.Parallelism != nil && *spec.Parallelism > maxParallelismForIndexedJob {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism,
				fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
		}
		if spec.Completions != nil && spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > *spec.Completions {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "must be less than or equal to completions"))
		}
	} else {
		if spec.BackoffLimitPerIndex != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
		if spec.SuccessPolicy != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		}
	}
	if p := spec.PodReplacementPolicy; p != nil {
		replacementPath := fldPath.Child("podReplacementPolicy")
		if spec.PodFailurePolicy != nil {
			// A pod failure policy looks at how a Pod ended, so a
			// replacement must wait until it has.
			if *p != batchv1.Failed {
				allErrs = append(allErrs, field.NotSupported(replacementPath, *p, []batchv1.PodReplacementPolicy{batchv1.Failed}))
			}
		} else if valid := []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}; !slices.Contains(valid, *p) {
			allErrs = append(allErrs, field.NotSupported(replacementPath, *p, valid))
		}
	}

	allErrs = append(allErrs, validatePodTemplateSpec(&spec.Template, fldPath.Child("template"))...)
	// A Job's Pods run to completion. restartPolicy is checked after
	// defaulting, so a template that left it out (and got Always) is told
	// which values it may use.
	restartPath := fldPath.Child("template", "spec", "restartPolicy")
	switch policy := spec.Template.Spec.RestartPolicy; policy {
	case corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
		if spec.PodFailurePolicy != nil && policy != corev1.RestartPolicyNever {
			allErrs = append(allErrs, field.Invalid(restartPath, policy, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
		}
	case corev1.RestartPolicyAlways, "":
		allErrs = append(allErrs, field.Required(restartPath, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	default:
		allErrs = append(allErrs, field.NotSupported(restartPath, policy, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	return allErrs
}

// validateJobSpec checks a Job's own spec: what a template's spec must
// hold, and a selector that picks the template's Pods.
func validateJobSpec(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateJobTemplateSpecSpec(spec, fldPath)
	if spec.Selector == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), ""))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return allErrs
}

// validateJobUpdate: a Job's Pods are defined once, so its selector,
// template and completion rules are fixed. (Upstream lets a suspended Job
// that never started change its template's scheduling directives, for
// queueing systems such as Kueue; klab has none, so the whole template stays
// fixed.) A non-indexed Job's completions never change either.
func validateJobUpdate(job, old *batchv1.Job) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&job.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateGeneratedSelector(job)...)
	spec, oldSpec := &job.Spec, &old.Spec
	allErrs = append(allErrs, validateJobSpec(spec, specPath)...)
	allErrs = append(allErrs, validateCompletionsUpdate(spec, oldSpec)...)
	allErrs = append(allErrs, validateImmutable(spec.Selector, oldSpec.Selector, specPath.Child("selector"))...)
	allErrs = append(allErrs, validateImmutable(spec.Template, oldSpec.Template, specPath.Child("template"))...)
	allErrs = append(allErrs, validateImmutable(spec.CompletionMode, oldSpec.CompletionMode, specPath.Child("completionMode"))...)
	allErrs = append(allErrs, validateImmutable(spec.PodFailurePolicy, oldSpec.PodFailurePolicy, specPath.Child("podFailurePolicy"))...)
	allErrs = append(allErrs, validateImmutable(spec.BackoffLimitPerIndex, oldSpec.BackoffLimitPerIndex, specPath.Child("backoffLimitPerIndex"))...)
	allErrs = append(allErrs, validateImmutable(spec.ManagedBy, oldSpec.ManagedBy, specPath.Child("managedBy"))...)
	allErrs = append(allErrs, validateImmutable(spec.SuccessPolicy, oldSpec.SuccessPolicy, specPath.Child("successPolicy"))...)
	return allErrs
}

// validateCompletionsUpdate: an Indexed Job may be scaled by changing
// completions and parallelism together ("elastic" Indexed Jobs).
func validateCompletionsUpdate(spec, old *batchv1.JobSpec) field.ErrorList {
	fldPath := specPath.Child("completions")
	if ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) != batchv1.IndexedCompletion {
		return validateImmutable(spec.Completions, old.Completions, fldPath)
	}
	if spec.Completions == nil || ptr.Equal(spec.Completions, old.Completions) {
		return nil
	}
	if *spec.Completions != ptr.Deref(spec.Parallelism, 0) {
		return field.ErrorList{field.Invalid(fldPath, spec.Completions, fmt.Sprintf("can only be modified in tandem with %s", specPath.Child("parallelism")))}
	}
	return nil
}

// validateJobStatusUpdate checks the counters the Job controller writes.
func validateJobStatusUpdate(job, old *batchv1.Job) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&job.ObjectMeta, &old.ObjectMeta)
	s := &job.Status
	allErrs = append(allErrs, validateNonnegative(int64(s.Active), statusPath.Child("active"))...)
	allErrs = append(allErrs, validateNonnegative(int64(s.Succeeded), statusPath.Child("succeeded"))...)
	allErrs = append(allErrs, validateNonnegative(int64(s.Failed), statusPath.Child("failed"))...)
	if s.Ready != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*s.Ready), statusPath.Child("ready"))...)
	}
	if s.Terminating != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*s.Terminating), statusPath.Child("terminating"))...)
	}
	if u := s.UncountedTerminatedPods; u != nil {
		seen := map[string]bool{}
		for _, list := range []struct {
			name string
			uids []string
		}{{"succeeded", uidStrings(u.Succeeded)}, {"failed", uidStrings(u.Failed)}} {
			for i, uid := range list.uids {
				p := statusPath.Child("uncountedTerminatedPods", list.name).Index(i)
				switch {
				case uid == "":
					allErrs = append(allErrs, field.Invalid(p, uid, "must not be empty"))
				case seen[uid]:
					allErrs = append(allErrs, field.Duplicate(p, uid))
				default:
					seen[uid] = true
				}
			}
		}
	}
	return allErrs
}

func uidStrings[T ~string](uids []T) []string {
	out := make([]string, len(uids))
	for i, u := range uids {
		out[i] = string(u)
	}
	return out
}
