package printers

import (
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var controllerRevisionColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Controller", "string", "Controller of the object"),
	column("Revision", "string", appsv1.ControllerRevision{}.SwaggerDoc()["revision"]),
	ageColumn,
}

// printControllerRevision prints NAME CONTROLLER REVISION AGE. CONTROLLER
// is the controller's kind and name as kubectl names a resource
// ("daemonset.apps/fluentd"), or <none> for an orphan.
func printControllerRevision(cr *appsv1.ControllerRevision, now time.Time) metav1.TableRow {
	controller := "<none>"
	if ref := metav1.GetControllerOf(cr); ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil {
			controller = strings.ToLower(gv.WithKind(ref.Kind).GroupKind().String()) + "/" + ref.Name
		}
	}
	return cells(cr.Name, controller, cr.Revision, age(cr.CreationTimestamp, now))
}
