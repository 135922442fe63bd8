package validation

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// Annotations with a meaning to the API server.
const (
	// mirrorPodAnnotation marks the API copy of a static Pod the kubelet runs
	// from a file; such a Pod is bound to its node from birth.
	mirrorPodAnnotation = "kubernetes.io/config.mirror"
	// podDeletionCostAnnotation tells a ReplicaSet which Pods to remove
	// first when scaling down; it must be a 32-bit integer.
	podDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"
)

// updatablePodSpecFields is the list a user reads when a Pod update changes
// something else; the text is upstream's.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

func validatePodCreate(pod *corev1.Pod) field.ErrorList {
	allErrs := validatePodMetadataAndSpec(pod)
	if len(pod.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return allErrs
}

// validatePodMetadataAndSpec holds what a Pod must satisfy on create and on
// every update.
func validatePodMetadataAndSpec(pod *corev1.Pod) field.ErrorList {
	allErrs := validateObjectMeta(&pod.ObjectMeta, true, nameIsDNSSubdomain)
	allErrs = append(allErrs, validatePodAnnotations(pod.Annotations, &pod.Spec, metadataPath.Child("annotations"))...)
	allErrs = append(allErrs, validatePodSpec(&pod.Spec, specPath, true)...)

	// A projected service account token needs an account to be issued for.
	if pod.Spec.ServiceAccountName == "" {
		for vi, vol := range pod.Spec.Volumes {
			if vol.Projected == nil {
				continue
			}
			for si, source := range vol.Projected.Sources {
				if source.ServiceAccountToken != nil {
					saPath := specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken")
					allErrs = append(allErrs, field.Forbidden(saPath, "must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	// Only a real Pod's images must be clean; templates are more lenient
	// for historical reasons.
	for _, list := range []struct {
		name       string
		containers []corev1.Container
	}{{"containers", pod.Spec.Containers}, {"initContainers", pod.Spec.InitContainers}} {
		for i, c := range list.containers {
			if len(c.Image) != len(strings.TrimSpace(c.Image)) {
				allErrs = append(allErrs, field.Invalid(specPath.Child(list.name).Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
			}
		}
	}
	return allErrs
}

// validatePodAnnotations checks the annotations the API server interprets.
func validatePodAnnotations(annotations map[string]string, spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if value, isMirror := annotations[mirrorPodAnnotation]; isMirror && spec.NodeName == "" {
		allErrs = append(allErrs, field.Invalid(fldPath.Key(mirrorPodAnnotation), value, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if value, ok := annotations[podDeletionCostAnnotation]; ok && !isInt32(value) {
		allErrs = append(allErrs, field.Invalid(fldPath.Key(podDeletionCostAnnotation), value, "must be a 32bit integer"))
	}
	return allErrs
}

// isInt32 accepts a decimal 32-bit integer without a plus sign or leading
// zeros ("-5", "0", "42"; not "+5" or "007").
func isInt32(s string) bool {
	if s == "" || s[0] == '+' || (s[0] == '0' && s != "0") {
		return false
	}
	_, err := strconv.ParseInt(s, 10, 32)
	return err == nil
}

// validatePodUpdate allows a running Pod to change very little: the images
// of its containers, a shorter activeDeadlineSeconds, added tolerations and
// removed scheduling gates. Everything else in the spec is fixed once the
// Pod exists, because the kubelet has already acted on it.
func validatePodUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta)
	allErrs = append(allErrs, validatePodMetadataAndSpec(newPod)...)
	allErrs = append(allErrs, validateMirrorAnnotationUpdate(newPod, oldPod)...)

	errs, stop := validateContainerUpdates(newPod.Spec.Containers, oldPod.Spec.Containers, specPath.Child("containers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}
	errs, stop = validateContainerUpdates(newPod.Spec.InitContainers, oldPod.Spec.InitContainers, specPath.Child("initContainers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}

	// activeDeadlineSeconds may be set, or lowered, but never raised or
	// removed: a deadline is a promise to the user.
	deadlinePath := specPath.Child("activeDeadlineSeconds")
	if newDeadline := newPod.Spec.ActiveDeadlineSeconds; newDeadline != nil {
		if *newDeadline < 0 || *newDeadline > math.MaxInt32 {
			return append(allErrs, field.Invalid(deadlinePath, *newDeadline, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if old := oldPod.Spec.ActiveDeadlineSeconds; old != nil && *old < *newDeadline {
			return append(allErrs, field.Invalid(deadlinePath, *newDeadline, "must be less than or equal to previous value"))
		}
	} else if oldPod.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Invalid(deadlinePath, newPod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}

	allErrs = append(allErrs, validateOnlyAddedTolerations(newPod.Spec.Tolerations, oldPod.Spec.Tolerations, specPath.Child("tolerations"))...)
	allErrs = append(allErrs, validateOnlyDeletedSchedulingGates(newPod.Spec.SchedulingGates, oldPod.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)

	if apiequality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		return allErrs
	}
	// Copy the fields that may change from the old spec into the new one;
	// whatever still differs was not allowed to.
	munged := newPod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldPod.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldPod.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = oldPod.Spec.ActiveDeadlineSeconds
	munged.SchedulingGates = oldPod.Spec.SchedulingGates
	munged.Tolerations = oldPod.Spec.Tolerations
	// A negative grace period (once allowed) may be corrected to 1.
	if old := oldPod.Spec.TerminationGracePeriodSeconds; old != nil && *old < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = old
	}
	// A Pod still waiting on scheduling gates may gain node selectors.
	if len(oldPod.Spec.SchedulingGates) > 0 && !apiequality.Semantic.DeepEqual(munged.NodeSelector, oldPod.Spec.NodeSelector) {
		allErrs = append(allErrs, validateNodeSelectorAdditions(specPath.Child("nodeSelector"), munged.NodeSelector, oldPod.Spec.NodeSelector)...)
		munged.NodeSelector = oldPod.Spec.NodeSelector
	}
	if !apiequality.Semantic.DeepEqual(*munged, oldPod.Spec) {
		diff := cmp.Diff(oldPod.Spec, *munged)
		allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v", strings.Join(updatablePodSpecFields, ","), diff)))
	}
	return allErrs
}

// validateContainerUpdates checks the containers of an updated Pod; stop is
// true when their number changed, after which nothing else is worth saying.
func validateContainerUpdates(newContainers, oldContainers []corev1.Container, fldPath *field.Path) (allErrs field.ErrorList, stop bool) {
	if len(newContainers) != len(oldContainers) {
		return field.ErrorList{field.Forbidden(fldPath, "pod updates may not add or remove containers")}, true
	}
	for i, c := range newContainers {
		if c.Image == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("image"), ""))
		}
		if len(strings.TrimSpace(c.Image)) != len(c.Image) {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return allErrs, false
}

func validateMirrorAnnotationUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	fldPath := metadataPath.Child("annotations").Key(mirrorPodAnnotation)
	oldValue, hadIt := oldPod.Annotations[mirrorPodAnnotation]
	newValue, hasIt := newPod.Annotations[mirrorPodAnnotation]
	switch {
	case hadIt && (!hasIt || newValue != oldValue):
		return field.ErrorList{field.Forbidden(fldPath, "may not remove or update mirror pod annotation")}
	case !hadIt && hasIt:
		return field.ErrorList{field.Forbidden(fldPath, "may not add mirror pod annotation")}
	}
	return nil
}

// validateOnlyAddedTolerations allows new tolerations and a changed
// tolerationSeconds, but no removed or otherwise changed toleration.
func validateOnlyAddedTolerations(newTolerations, oldTolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, old := range oldTolerations {
		found := false
		for _, t := range newTolerations {
			candidate := old
			candidate.TolerationSeconds = t.TolerationSeconds
			if apiequality.Semantic.DeepEqual(candidate, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return validateTolerations(newTolerations, fldPath)
}

func validateOnlyDeletedSchedulingGates(newGates, oldGates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	old := map[string]bool{}
	for _, g := range oldGates {
		old[g.Name] = true
	}
	var allErrs field.ErrorList
	for i, g := range newGates {
		if !old[g.Name] {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return allErrs
}

func validateNodeSelectorAdditions(fldPath *field.Path, newSelector, oldSelector map[string]string) field.ErrorList {
	for k, v := range oldSelector {
		if nv, ok := newSelector[k]; !ok || nv != v {
			return field.ErrorList{field.Invalid(fldPath, newSelector, "only additions to spec.nodeSelector are allowed (no mutations or deletions)")}
		}
	}
	return nil
}

// validatePodStatusUpdate checks a status write, which comes from the
// scheduler (conditions) and the kubelet (phase, IPs, container states).
func validatePodStatusUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta)
	allErrs = append(allErrs, validateMirrorAnnotationUpdate(newPod, oldPod)...)
	allErrs = append(allErrs, validatePodAnnotations(newPod.Annotations, &newPod.Spec, metadataPath.Child("annotations"))...)
	// Upstream reports condition types under metadata.conditions, with a
	// capital Type; kept so the message is the one users find.
	allErrs = append(allErrs, validatePodConditions(newPod.Status.Conditions, metadataPath.Child("conditions"))...)

	if newPod.Spec.NodeName != oldPod.Spec.NodeName {
		allErrs = append(allErrs, field.Forbidden(statusPath.Child("nodeName"), "may not be changed directly"))
	}
	if nominated := newPod.Status.NominatedNodeName; nominated != oldPod.Status.NominatedNodeName && nominated != "" {
		allErrs = append(allErrs, validateNameWith(nameIsDNSSubdomain, nominated, statusPath.Child("nominatedNodeName"))...)
	}
	allErrs = append(allErrs, validateImmutable(newPod.Status.QOSClass, oldPod.Status.QOSClass, statusPath.Child("qosClass"))...)

	// A container that finished for good may not come back to life.
	allErrs = append(allErrs, validateContainerStateTransition(newPod.Status.ContainerStatuses, oldPod.Status.ContainerStatuses, statusPath.Child("containerStatuses"), oldPod.Spec.RestartPolicy, nil)...)
	allErrs = append(allErrs, validateContainerStateTransition(newPod.Status.InitContainerStatuses, oldPod.Status.InitContainerStatuses, statusPath.Child("initContainerStatuses"), oldPod.Spec.RestartPolicy, oldPod.Spec.InitContainers)...)
	allErrs = append(allErrs, validateContainerStateTransition(newPod.Status.EphemeralContainerStatuses, oldPod.Status.EphemeralContainerStatuses, statusPath.Child("ephemeralContainerStatuses"), corev1.RestartPolicyNever, nil)...)

	podIP := func(ip corev1.PodIP) string { return ip.IP }
	allErrs = append(allErrs, validateIPList(newPod.Status.PodIPs, podIP, statusPath.Child("podIPs"))...)
	if hostIPs := newPod.Status.HostIPs; len(hostIPs) > 0 {
		if newPod.Status.HostIP != hostIPs[0].IP {
			allErrs = append(allErrs, field.Invalid(statusPath.Child("hostIPs").Index(0).Child("ip"), hostIPs[0].IP, "must be equal to `hostIP`"))
		}
		hostIP := func(ip corev1.HostIP) string { return ip.IP }
		allErrs = append(allErrs, validateIPList(hostIPs, hostIP, statusPath.Child("hostIPs"))...)
	}
	return allErrs
}

// validatePodConditions checks the types of conditions other components add
// (readiness gates); the built-in ones are always fine.
func validatePodConditions(conditions []corev1.PodCondition, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range conditions {
		switch c.Type {
		case corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized:
			continue
		}
		allErrs = append(allErrs, validateQualifiedName(string(c.Type), fldPath.Index(i).Child("Type"))...)
	}
	return allErrs
}

// validateContainerStateTransition forbids a terminated container from
// leaving that state unless the restart policy lets it run again: Always
// restarts everything, OnFailure restarts failures, and a restartable init
// container (a sidecar) always restarts.
func validateContainerStateTransition(newStatuses, oldStatuses []corev1.ContainerStatus, fldPath *field.Path, restartPolicy corev1.RestartPolicy, initContainers []corev1.Container) field.ErrorList {
	if restartPolicy == corev1.RestartPolicyAlways {
		return nil
	}
	var allErrs field.ErrorList
	for i, old := range oldStatuses {
		if old.State.Terminated == nil {
			continue
		}
		if old.State.Terminated.ExitCode != 0 && restartPolicy == corev1.RestartPolicyOnFailure {
			continue
		}
		if isRestartableInitContainer(old.Name, initContainers) {
			continue
		}
		for _, s := range newStatuses {
			if s.Name == old.Name && s.State.Terminated == nil {
				allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return allErrs
}

func isRestartableInitContainer(name string, initContainers []corev1.Container) bool {
	for _, c := range initContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// validateIPList checks a Pod's podIPs or hostIPs: each a valid IP, at most
// one per family, no duplicates.
func validateIPList[T any](items []T, ipOf func(T) string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	ips := make([]string, len(items))
	for i, item := range items {
		ips[i] = ipOf(item)
		allErrs = append(allErrs, validation.IsValidIPForLegacyField(fldPath.Index(i), ips[i], true, nil)...)
	}
	if len(ips) > 1 {
		dual, err := netutils.IsDualStackIPStrings(ips)
		if err != nil {
			allErrs = append(allErrs, field.InternalError(fldPath, fmt.Errorf("failed to check for dual stack with error:%v", err)))
		}
		if !dual || len(ips) > 2 {
			allErrs = append(allErrs, field.Invalid(fldPath, items, "may specify no more than one IP for each IP family"))
		}
		seen := map[string]bool{}
		for i, ip := range ips {
			if seen[ip] {
				allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), items[i]))
			}
			seen[ip] = true
		}
	}
	return allErrs
}

// validateBinding checks a pods/binding request: the scheduler's way of
// placing a Pod on a node.
func validateBinding(b *corev1.Binding) field.ErrorList {
	var allErrs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("target", "name"), ""))
	}
	return allErrs
}
