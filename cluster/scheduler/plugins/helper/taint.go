package helper

import (
	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Taint comparison operators (Gt/Lt tolerations) are behind an alpha
// feature gate upstream, off by default; klab keeps them off.
const enableComparisonOperators = false

// DoNotScheduleTaintsFilterFunc selects the taints that keep a pod off a
// node: NoSchedule and NoExecute. PreferNoSchedule only lowers the score.
func DoNotScheduleTaintsFilterFunc() func(*v1.Taint) bool {
	return func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}
}

// FindMatchingUntoleratedTaint returns the first taint accepted by
// inclusionFilter that none of the tolerations tolerates, and whether there
// was one. A nil filter considers every taint.
func FindMatchingUntoleratedTaint(taints []v1.Taint, tolerations []v1.Toleration, inclusionFilter func(*v1.Taint) bool) (v1.Taint, bool) {
	// component-helpers logs only when a comparison operator fails to
	// parse, which cannot happen with the operators disabled.
	return corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), taints, tolerations, inclusionFilter, enableComparisonOperators)
}

// TolerationsTolerateTaint reports whether any of the tolerations
// tolerates the taint.
func TolerationsTolerateTaint(tolerations []v1.Toleration, taint *v1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(logr.Discard(), tolerations, taint, enableComparisonOperators)
}
