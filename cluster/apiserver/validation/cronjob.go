package validation

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// A CronJob makes a Job from its jobTemplate at each time its schedule
// (standard five-field cron, parsed by robfig/cron as upstream parses it)
// names. The Jobs are named <cronjob>-<minutes since the epoch>, eleven
// characters more, so a CronJob's name leaves room for them in a
// 63-character label.

// maxCronJobNameLength is 63 (a DNS-1035 label) less the controller's
// "-<timestamp>" suffix.
const maxCronJobNameLength = 63 - 11

var concurrencyPolicies = []batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}

func validateCronJob(cj *batchv1.CronJob) field.ErrorList {
	allErrs := validateObjectMeta(&cj.ObjectMeta, true, nameIsDNSSubdomain)
	allErrs = append(allErrs, validateCronJobSpec(&cj.Spec, nil, specPath)...)
	if len(cj.Name) > maxCronJobNameLength {
		allErrs = append(allErrs, field.Invalid(metadataPath.Child("name"), cj.Name, "must be no more than 52 characters"))
	}
	return allErrs
}

func validateCronJobUpdate(cj, old *batchv1.CronJob) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&cj.ObjectMeta, &old.ObjectMeta)
	return append(allErrs, validateCronJobSpec(&cj.Spec, &old.Spec, specPath)...)
}

func validateCronJobStatusUpdate(cj, old *batchv1.CronJob) field.ErrorList {
	return validateObjectMetaUpdate(&cj.ObjectMeta, &old.ObjectMeta)
}

func validateCronJobSpec(spec, old *batchv1.CronJobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Schedule == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("schedule"), ""))
	} else {
		// A schedule stored with TZ before the timeZone field existed
		// may keep it.
		allowTZ := old != nil && strings.Contains(old.Schedule, "TZ")
		allErrs = append(allErrs, validateSchedule(spec.Schedule, allowTZ, spec.TimeZone, fldPath.Child("schedule"))...)
	}
	if spec.StartingDeadlineSeconds != nil {
		allErrs = append(allErrs, validateNonnegative(*spec.StartingDeadlineSeconds, fldPath.Child("startingDeadlineSeconds"))...)
	}
	if old == nil || ptr.Deref(old.TimeZone, "\x00") != ptr.Deref(spec.TimeZone, "\x00") {
		allErrs = append(allErrs, validateTimeZone(spec.TimeZone, fldPath.Child("timeZone"))...)
	}
	switch p := spec.ConcurrencyPolicy; p {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("concurrencyPolicy"), ""))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("concurrencyPolicy"), p, concurrencyPolicies))
	}
	allErrs = append(allErrs, validateJobTemplate(&spec.JobTemplate, fldPath.Child("jobTemplate"))...)
	if spec.SuccessfulJobsHistoryLimit != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*spec.SuccessfulJobsHistoryLimit), fldPath.Child("successfulJobsHistoryLimit"))...)
	}
	if spec.FailedJobsHistoryLimit != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*spec.FailedJobsHistoryLimit), fldPath.Child("failedJobsHistoryLimit"))...)
	}
	return allErrs
}

func validateSchedule(schedule string, allowTZ bool, timeZone *string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if _, err := cron.ParseStandard(schedule); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath, schedule, err.Error()))
	}
	switch {
	case allowTZ && strings.Contains(schedule, "TZ") && timeZone != nil:
		allErrs = append(allErrs, field.Invalid(fldPath, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && strings.Contains(schedule, "TZ"):
		allErrs = append(allErrs, field.Invalid(fldPath, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return allErrs
}

func validateTimeZone(timeZone *string, fldPath *field.Path) field.ErrorList {
	if timeZone == nil {
		return nil
	}
	if *timeZone == "" {
		return field.ErrorList{field.Invalid(fldPath, timeZone, "timeZone must be nil or non-empty string")}
	}
	if strings.EqualFold(*timeZone, "Local") {
		return field.ErrorList{field.Invalid(fldPath, timeZone, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")}
	}
	if _, err := time.LoadLocation(*timeZone); err != nil {
		return field.ErrorList{field.Invalid(fldPath, timeZone, err.Error())}
	}
	return nil
}

// validateJobTemplate checks a CronJob's Job template: a Job spec whose
// selector the API server will generate.
func validateJobTemplate(t *batchv1.JobTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateJobTemplateSpecSpec(&t.Spec, fldPath.Child("spec"))
	if t.Spec.Selector != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("spec", "selector"), t.Spec.Selector, "`selector` will be auto-generated"))
	}
	if ptr.Deref(t.Spec.ManualSelector, false) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("spec", "manualSelector"), t.Spec.ManualSelector, []string{"nil", "false"}))
	}
	return allErrs
}
