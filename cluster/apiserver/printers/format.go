package printers

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Cell formats shared by several printers.

// none is what a table shows for an empty value.
const none = "<none>"

// since is how long ago t was, as AGE and LAST SEEN show it ("5m", "2d3h"),
// or "<unknown>" for a time never set.
func since(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// age is since for an object's creationTimestamp and the like.
func age(t metav1.Time, now time.Time) string {
	return since(t.Time, now)
}

// cells makes a row of the given cells.
func cells(values ...any) metav1.TableRow {
	return metav1.TableRow{Cells: values}
}

// containerCells lays out a pod template's containers for the wide CONTAINERS
// and IMAGES columns: names and images, each joined by commas.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	i := make([]string, len(containers))
	for k, c := range containers {
		n[k], i[k] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// firstThree joins the first three of a list for a cell and says how many
// more there were ("10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more..."), as
// upstream shortens endpoint lists.
func firstThree(list []string, empty string) string {
	const shown = 3
	if len(list) == 0 {
		return empty
	}
	if len(list) <= shown {
		return strings.Join(list, ",")
	}
	return fmt.Sprintf("%s + %d more...", strings.Join(list[:shown], ","), len(list)-shown)
}
