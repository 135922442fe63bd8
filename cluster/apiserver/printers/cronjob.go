package printers

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var cronJobColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Schedule", "string", batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]),
	column("Timezone", "string", batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]),
	column("Suspend", "boolean", batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]),
	column("Active", "integer", batchv1.CronJobStatus{}.SwaggerDoc()["active"]),
	column("Last Schedule", "string", batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]),
	ageColumn,
	containersColumn,
	imagesColumn,
	wide("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"]),
}

// printCronJob prints NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE
// AGE, and for -o wide CONTAINERS IMAGES SELECTOR.
func printCronJob(cj *batchv1.CronJob, now time.Time) metav1.TableRow {
	lastSchedule, timeZone, suspend := none, none, "<unset>"
	if t := cj.Status.LastScheduleTime; t != nil {
		lastSchedule = age(*t, now)
	}
	if cj.Spec.TimeZone != nil {
		timeZone = *cj.Spec.TimeZone
	}
	if cj.Spec.Suspend != nil {
		suspend = "False"
		if *cj.Spec.Suspend {
			suspend = "True"
		}
	}
	names, images := containerCells(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
	return cells(cj.Name, cj.Spec.Schedule, timeZone, suspend, int64(len(cj.Status.Active)), lastSchedule,
		age(cj.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector))
}
