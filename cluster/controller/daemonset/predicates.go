package daemonset

import (
	"fmt"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// enableComparisonOperators is off, as the TaintTolerationComparisonOperators
// feature gate is upstream by default (and in klab's scheduler).
const enableComparisonOperators = false

// nodeShouldRunDaemonPod answers for one node: should a daemon pod be
// created there (shouldRun), and may one that is there keep running
// (shouldContinueRunning)? A node name in the template, the node selector
// and required node affinity must all fit, else neither. Taints with
// NoSchedule or NoExecute the pod does not tolerate forbid a new pod, but
// only an untolerated NoExecute taint evicts a running one.
func nodeShouldRunDaemonPod(node *corev1.Node, ds *appsv1.DaemonSet) (shouldRun, shouldContinueRunning bool) {
	pod := newPod(ds, node.Name)
	if ds.Spec.Template.Spec.NodeName != "" && ds.Spec.Template.Spec.NodeName != node.Name {
		return false, false
	}
	// A selector that does not parse is ignored, as upstream does for
	// compatibility; the API server rejects such DaemonSets anyway.
	fitsAffinity, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	if !fitsAffinity {
		return false, false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule
	}, enableComparisonOperators)
	if !untolerated {
		return true, true
	}
	_, evicts := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, enableComparisonOperators)
	return false, !evicts
}

// newPod is the pod the DaemonSet would run on the node, for checking
// the predicates: its template with the default daemon tolerations.
func newPod(ds *appsv1.DaemonSet, nodeName string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
	pod.Namespace = ds.Namespace
	pod.Spec.NodeName = nodeName
	addOrUpdateDaemonPodTolerations(&pod.Spec)
	return pod
}

// addOrUpdateDaemonPodTolerations adds the tolerations every daemon pod
// gets: it stays on a not-ready or unreachable node (NoExecute, for
// ever: no tolerationSeconds), and is placed on nodes under disk, memory
// or PID pressure and on cordoned nodes. A host-network pod also ignores
// an unavailable pod network.
func addOrUpdateDaemonPodTolerations(spec *corev1.PodSpec) {
	tolerate := func(key string, effect corev1.TaintEffect) {
		addOrUpdateToleration(spec, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
	}
	tolerate(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)
	tolerate(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	tolerate(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)
	tolerate(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)
	tolerate(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)
	tolerate(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)
	if spec.HostNetwork {
		tolerate(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)
	}
}

// addOrUpdateToleration replaces a toleration with the same key,
// operator, value and effect (the template's own, say with
// tolerationSeconds, gives way) or appends it.
func addOrUpdateToleration(spec *corev1.PodSpec, t corev1.Toleration) {
	for i := range spec.Tolerations {
		if spec.Tolerations[i].MatchToleration(&t) {
			spec.Tolerations[i] = t
			return
		}
	}
	spec.Tolerations = append(spec.Tolerations, t)
}

// replaceNodeNameAffinity pins a daemon pod to its node for the
// scheduler: the required node affinity becomes one term matching the
// field metadata.name. Other required terms are dropped (they could only
// conflict; the node was chosen because it fits them); preferred terms
// stay.
func replaceNodeNameAffinity(affinity *corev1.Affinity, nodeName string) *corev1.Affinity {
	selector := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{
			Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{nodeName},
		}},
	}}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = selector
	return affinity
}

// targetNodeName is the node a daemon pod is for: its spec.nodeName once
// bound, before that the metadata.name its required affinity names.
func targetNodeName(pod *corev1.Pod) (string, error) {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName, nil
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return "", fmt.Errorf("no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution for pod %s/%s", pod.Namespace, pod.Name)
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return "", fmt.Errorf("no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuringExecution of pod %s/%s", pod.Namespace, pod.Name)
	}
	for _, term := range terms {
		for _, req := range term.MatchFields {
			if req.Key == metav1.ObjectNameField && req.Operator == corev1.NodeSelectorOpIn {
				if len(req.Values) != 1 {
					return "", fmt.Errorf("the matchFields value of '%s' is not unique for pod %s/%s", metav1.ObjectNameField, pod.Namespace, pod.Name)
				}
				return req.Values[0], nil
			}
		}
	}
	return "", fmt.Errorf("no node name found for pod %s/%s", pod.Namespace, pod.Name)
}

// podTemplate is the template the controller creates pods from: the
// DaemonSet's, with the default tolerations and the revision hash label.
func podTemplate(ds *appsv1.DaemonSet, hash string) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	addOrUpdateDaemonPodTolerations(&t.Spec)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if hash != "" {
		t.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	}
	return t
}

// isPodUpdated reports whether the pod runs the current revision.
func isPodUpdated(pod *corev1.Pod, hash string) bool {
	return hash != "" && pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash
}
