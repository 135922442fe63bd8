package printers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A ReplicationController prints as upstream's printReplicationController:
// NAME DESIRED CURRENT READY AGE, then CONTAINERS IMAGES SELECTOR for -o
// wide, the selector being the plain label map.
func TestReplicationControllerCells(t *testing.T) {
	tpl := template()
	rc := &corev1.ReplicationController{
		ObjectMeta: objectMeta("web", 3*time.Minute),
		Spec:       corev1.ReplicationControllerSpec{Replicas: ptr(int32(3)), Selector: map[string]string{"app": "web"}, Template: &tpl},
		Status:     corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1},
	}
	assertCells(t, rowCells(t, rc), []any{"web", int64(3), int64(2), int64(1), "3m", "web,log", "klab/app:1,busybox:1.36", "app=web"})
}

// A PodTemplate prints NAME CONTAINERS IMAGES POD LABELS, containers and
// images in the default view.
func TestPodTemplateCells(t *testing.T) {
	pt := &corev1.PodTemplate{ObjectMeta: objectMeta("tpl", time.Hour), Template: template()}
	pt.Template.Labels = map[string]string{"app": "web", "tier": "front"}
	assertCells(t, rowCells(t, pt), []any{"tpl", "web,log", "klab/app:1,busybox:1.36", "app=web,tier=front"})
	table, err := Table(&corev1.PodTemplateList{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			names = append(names, c.Name)
		}
	}
	if want := []string{"Name", "Containers", "Images", "Pod Labels"}; len(names) != len(want) || names[0] != want[0] || names[3] != want[3] {
		t.Errorf("default columns %v, want %v", names, want)
	}
}
