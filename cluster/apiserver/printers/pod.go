package printers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeUnreachablePodReason is the status.reason the node lifecycle controller
// gives a pod whose node stopped answering (k8s.io/kubernetes/pkg/util/node).
const nodeUnreachablePodReason = "NodeLost"

// printPod prints NAME READY STATUS RESTARTS AGE, and for -o wide IP NODE
// NOMINATED NODE READINESS GATES.
//
// STATUS is not a field of the pod: it is the most telling reason found, in
// this order. The pod's phase, or status.reason when set (Evicted, NodeLost),
// or SchedulingGated while a scheduling gate holds the pod. Then, while init
// containers run, "Init:" and the first unfinished one's trouble
// (Init:CrashLoopBackOff, Init:Error) or progress (Init:1/3). Once they are
// done, the reason of the first container (in spec order) that is waiting
// (ContainerCreating, CrashLoopBackOff, ImagePullBackOff) or terminated
// (Completed, Error, OOMKilled); a pod whose containers finished
// while one still runs shows Running, or NotReady without the Ready
// condition. Last, a pod being deleted shows Terminating, or Unknown when its
// node was lost.
func printPod(pod *corev1.Pod, now time.Time) metav1.TableRow {
	var row metav1.TableRow
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
	}

	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}

	// Sidecars (init containers with restartPolicy Always) keep running next
	// to the app containers, so they count in READY and RESTARTS.
	initSpecs := make(map[string]*corev1.Container, len(pod.Spec.InitContainers))
	total := len(pod.Spec.Containers)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		initSpecs[c.Name] = c
		if isSidecar(c) {
			total++
		}
	}

	var (
		ready, restarts, sidecarRestarts int
		lastRestart, lastSidecarRestart  time.Time
		initializing                     bool
	)
	for i, st := range pod.Status.InitContainerStatuses {
		restarts += int(st.RestartCount)
		lastRestart = laterRestart(lastRestart, st)
		sidecar := isSidecar(initSpecs[st.Name])
		if sidecar {
			sidecarRestarts += int(st.RestartCount)
			lastSidecarRestart = laterRestart(lastSidecarRestart, st)
		}
		switch {
		case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
			continue // done
		case sidecar && st.Started != nil && *st.Started:
			if st.Ready {
				ready++
			}
			continue // a started sidecar lets the next init container run
		case st.State.Terminated != nil:
			reason = "Init:" + terminatedReason(st.State.Terminated)
		case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + st.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || hasCondition(pod, corev1.PodInitialized) {
		// Restarts of init containers that have finished are history; the
		// sidecars' still count.
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			st := pod.Status.ContainerStatuses[i]
			restarts += int(st.RestartCount)
			lastRestart = laterRestart(lastRestart, st)
			switch {
			case st.State.Waiting != nil && st.State.Waiting.Reason != "":
				reason = st.State.Waiting.Reason
			case st.State.Terminated != nil:
				reason = terminatedReason(st.State.Terminated)
			case st.Ready && st.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" && hasRunning {
			if hasCondition(pod, corev1.PodReady) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil && pod.Status.Reason == nodeUnreachablePodReason {
		reason = "Unknown"
	} else if pod.DeletionTimestamp != nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		reason = "Terminating"
	}

	restartCell := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartCell = fmt.Sprintf("%d (%s ago)", restarts, since(lastRestart, now))
	}

	row.Cells = []any{
		pod.Name,
		fmt.Sprintf("%d/%d", ready, total),
		reason,
		restartCell,
		age(pod.CreationTimestamp, now),
		orNone(podIP(pod)),
		orNone(pod.Spec.NodeName),
		orNone(pod.Status.NominatedNodeName),
		readinessGates(pod),
	}
	return row
}

// isSidecar reports an init container with restartPolicy Always. c is nil for
// a status without a matching spec.
func isSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// laterRestart returns the later of last and the time st's previous run
// ended, which is when the container last restarted.
func laterRestart(last time.Time, st corev1.ContainerStatus) time.Time {
	if t := st.LastTerminationState.Terminated; t != nil && last.Before(t.FinishedAt.Time) {
		return t.FinishedAt.Time
	}
	return last
}

// terminatedReason names how a container ended: its reason (Completed, Error,
// OOMKilled), else the signal or exit code that ended it.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// hasCondition reports whether the pod's first condition of type t is True.
func hasCondition(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podIP is the pod's primary IP. status.podIP wins over status.podIPs, as in
// the conversion kube-apiserver makes before printing.
func podIP(pod *corev1.Pod) string {
	if pod.Status.PodIP != "" {
		return pod.Status.PodIP
	}
	if len(pod.Status.PodIPs) > 0 {
		return pod.Status.PodIPs[0].IP
	}
	return ""
}

// readinessGates shows how many of the pod's readiness gates have a True
// condition ("1/2"), or <none> without gates.
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return none
	}
	passed := 0
	for _, gate := range pod.Spec.ReadinessGates {
		if hasCondition(pod, gate.ConditionType) {
			passed++
		}
	}
	return fmt.Sprintf("%d/%d", passed, len(pod.Spec.ReadinessGates))
}

// orNone returns s, or <none> when it is empty.
func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}
