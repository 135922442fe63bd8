package controllerutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Selecting returns the controllers whose selector matches an orphan's
// labels: the ones that may adopt it. An empty or invalid selector selects
// nothing, as upstream, and so does an object without labels.
func Selecting[T any](controllers []T, selectorOf func(T) *metav1.LabelSelector, objLabels map[string]string) []T {
	if len(objLabels) == 0 {
		return nil
	}
	var out []T
	for _, c := range controllers {
		selector, err := metav1.LabelSelectorAsSelector(selectorOf(c))
		if err != nil || selector.Empty() || !selector.Matches(labels.Set(objLabels)) {
			continue
		}
		out = append(out, c)
	}
	return out
}
