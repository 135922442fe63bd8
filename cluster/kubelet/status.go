package kubelet

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// Waiting reasons and condition reasons, as upstream's kubelet reports
// them (pkg/kubelet/container/sync_result.go, pkg/kubelet/status).
const (
	reasonContainerCreating      = "ContainerCreating"
	reasonPodInitializing        = "PodInitializing"
	reasonCrashLoopBackOff       = "CrashLoopBackOff"
	reasonErrImagePull           = "ErrImagePull"
	reasonImagePullBackOff       = "ImagePullBackOff"
	reasonErrImageNeverPull      = "ErrImageNeverPull"
	reasonCreateContainerConfig  = "CreateContainerConfigError"
	reasonCreateContainer        = "CreateContainerError"
	reasonRunContainer           = "RunContainerError"
	reasonContainerStatusUnknown = "ContainerStatusUnknown"
	reasonContainersNotReady     = "ContainersNotReady"
	reasonContainersNotInit      = "ContainersNotInitialized"
	reasonReadinessGatesNotReady = "ReadinessGatesNotReady"
	reasonPodCompleted           = "PodCompleted"
	messageContainerNotLocated   = "The container could not be located when the pod was terminated"
	exitCodeContainerNotLocated  = 137
)

// kubeletConditions are the pod conditions the kubelet owns; any other
// condition (PodScheduled, DisruptionTarget, readiness gates) is kept as
// the API has it.
var kubeletConditions = []v1.PodConditionType{
	v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady,
}

// waitingReason is why a container is not running, remembered from the
// last attempt to start it (upstream's reasonCache).
type waitingReason struct {
	Reason, Message string
}

// statusInput is everything a pod's status is computed from.
type statusInput struct {
	pod         *v1.Pod
	rt          *runtimePod
	runtimeName string
	hostIP      string
	// reasons are the waiting reasons of containers that failed to start,
	// by container name.
	reasons map[string]waitingReason
	// ready and started report the readiness and startup probe results of
	// a container (true without such a probe).
	ready, started func(c *v1.Container, containerID string) bool
	// terminal: the pod is being torn down and none of its containers
	// runs any more; the phase becomes Succeeded or Failed.
	terminal bool
}

// generatePodStatus computes the status the kubelet reports for a pod
// (upstream's generateAPIPodStatus): the container statuses from the
// runtime, the phase from them, and the conditions from both. Times that
// only the status manager knows (startTime, lastTransitionTime) are filled
// in there.
func generatePodStatus(in statusInput) v1.PodStatus {
	pod := in.pod
	s := v1.PodStatus{QOSClass: pod.Status.QOSClass}
	if in.hostIP != "" {
		s.HostIP, s.HostIPs = in.hostIP, []v1.HostIP{{IP: in.hostIP}}
	}
	sandbox := in.rt.readySandbox()
	if sandbox != nil && sandbox.IP != "" {
		s.PodIP, s.PodIPs = sandbox.IP, []v1.PodIP{{IP: sandbox.IP}}
	}
	initialized := initContainersDone(pod, in.rt)
	s.InitContainerStatuses = containerStatuses(in, pod.Spec.InitContainers, true, reasonPodInitializing)
	defaultWaiting := reasonContainerCreating
	if !initialized {
		defaultWaiting = reasonPodInitializing
	}
	s.ContainerStatuses = containerStatuses(in, pod.Spec.Containers, false, defaultWaiting)
	s.Phase = podPhase(&pod.Spec, s.InitContainerStatuses, s.ContainerStatuses, in.terminal)

	ready := sandbox != nil
	s.Conditions = []v1.PodCondition{
		boolCondition(v1.PodReadyToStartContainers, ready, "", ""),
		initializedCondition(pod, s.InitContainerStatuses, s.Phase),
	}
	containersReady := containersReadyCondition(s.ContainerStatuses, s.Phase)
	s.Conditions = append(s.Conditions, podReadyCondition(pod, containersReady), containersReady)
	return s
}

// containerStatuses reports each container of the spec from its newest
// and previous runtime containers.
func containerStatuses(in statusInput, specs []v1.Container, isInit bool, defaultWaiting string) []v1.ContainerStatus {
	if len(specs) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, 0, len(specs))
	for i := range specs {
		c := &specs[i]
		st := v1.ContainerStatus{Name: c.Name, Image: c.Image, Started: ptr.To(false)}
		latest := in.rt.latest(c.Name)
		if latest == nil {
			st.State.Waiting = &v1.ContainerStateWaiting{Reason: defaultWaiting}
		} else {
			id := in.runtimeName + "://" + latest.ID
			st.ContainerID, st.ImageID, st.RestartCount = id, latest.ImageID, int32(latest.Attempt)
			if latest.Image != "" {
				st.Image = latest.Image
			}
			switch latest.State {
			case cri.StateRunning:
				st.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(latest.StartedAt)}
				started := in.started == nil || in.started(c, latest.ID)
				st.Started = ptr.To(started)
				st.Ready = started && (in.ready == nil || in.ready(c, latest.ID))
			case cri.StateExited:
				st.State.Terminated = terminatedState(in.runtimeName, latest)
				// An init container that finished its work counts as
				// ready, as upstream's probe manager reports it.
				st.Ready = isInit && latest.ExitCode == 0
			default:
				st.State.Waiting = &v1.ContainerStateWaiting{Reason: reasonContainerCreating}
			}
			if prev := in.rt.previous(c.Name); prev != nil && prev.State == cri.StateExited {
				st.LastTerminationState.Terminated = terminatedState(in.runtimeName, prev)
			}
		}
		if r, ok := in.reasons[c.Name]; ok && st.State.Running == nil {
			if st.State.Terminated != nil {
				st.LastTerminationState = st.State
			}
			st.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: r.Reason, Message: r.Message}}
			st.Ready = false
		}
		if in.terminal && st.State.Waiting != nil {
			st.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: exitCodeContainerNotLocated, Reason: reasonContainerStatusUnknown, Message: messageContainerNotLocated,
			}}
		}
		out = append(out, st)
	}
	return out
}

func terminatedState(runtimeName string, c *cri.ContainerStatus) *v1.ContainerStateTerminated {
	return &v1.ContainerStateTerminated{
		ExitCode:    int32(c.ExitCode),
		Reason:      c.Reason,
		Message:     c.Message,
		StartedAt:   metav1.NewTime(c.StartedAt),
		FinishedAt:  metav1.NewTime(c.FinishedAt),
		ContainerID: runtimeName + "://" + c.ID,
	}
}

// initContainersDone reports whether every init container's newest run
// exited with 0.
func initContainersDone(pod *v1.Pod, rt *runtimePod) bool {
	for _, c := range pod.Spec.InitContainers {
		latest := rt.latest(c.Name)
		if latest == nil || latest.State != cri.StateExited || latest.ExitCode != 0 {
			return false
		}
	}
	return true
}

// podPhase derives the phase from the container statuses, as upstream's
// getPhase does. A waiting container that has run before counts as
// stopped, not waiting: it is between restarts.
func podPhase(spec *v1.PodSpec, initStatuses, statuses []v1.ContainerStatus, terminal bool) v1.PodPhase {
	pendingInit, failedInit := 0, 0
	for _, st := range initStatuses {
		switch {
		case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
		case st.State.Terminated != nil:
			failedInit++
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil && st.LastTerminationState.Terminated.ExitCode != 0:
			failedInit++
		default:
			pendingInit++
		}
	}
	if failedInit > 0 && (spec.RestartPolicy == v1.RestartPolicyNever || terminal) {
		return v1.PodFailed
	}
	if pendingInit > 0 || failedInit > 0 {
		if terminal {
			return v1.PodFailed
		}
		return v1.PodPending
	}
	waiting, running, stopped, succeeded := 0, 0, 0, 0
	for _, st := range statuses {
		switch {
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			if st.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case stopped > 0:
		if spec.RestartPolicy == v1.RestartPolicyAlways && !terminal {
			return v1.PodRunning // every container is between restarts
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		if spec.RestartPolicy == v1.RestartPolicyNever || terminal {
			return v1.PodFailed
		}
		return v1.PodRunning // OnFailure: the failed ones restart
	default:
		return v1.PodPending
	}
}

func boolCondition(t v1.PodConditionType, ok bool, reason, message string) v1.PodCondition {
	c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reason, Message: message}
	if ok {
		c = v1.PodCondition{Type: t, Status: v1.ConditionTrue}
	}
	return c
}

func initializedCondition(pod *v1.Pod, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	var incomplete []string
	for _, st := range statuses {
		if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
			incomplete = append(incomplete, st.Name)
		}
	}
	if len(incomplete) == 0 {
		return boolCondition(v1.PodInitialized, true, "", "")
	}
	if phase == v1.PodSucceeded {
		return boolCondition(v1.PodInitialized, false, reasonPodCompleted, "")
	}
	return boolCondition(v1.PodInitialized, false, reasonContainersNotInit, fmt.Sprintf("containers with incomplete status: %s", incomplete))
}

func containersReadyCondition(statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	if phase == v1.PodSucceeded {
		return boolCondition(v1.ContainersReady, false, reasonPodCompleted, "")
	}
	var unready []string
	for _, st := range statuses {
		if !st.Ready {
			unready = append(unready, st.Name)
		}
	}
	if len(unready) == 0 {
		return boolCondition(v1.ContainersReady, true, "", "")
	}
	return boolCondition(v1.ContainersReady, false, reasonContainersNotReady, fmt.Sprintf("containers with unready status: %s", unready))
}

// podReadyCondition is ContainersReady, and then every readiness gate's
// condition True, as the API has them.
func podReadyCondition(pod *v1.Pod, containersReady v1.PodCondition) v1.PodCondition {
	if containersReady.Status != v1.ConditionTrue {
		c := containersReady
		c.Type = v1.PodReady
		return c
	}
	var msgs []string
	for _, gate := range pod.Spec.ReadinessGates {
		found := false
		for _, c := range pod.Status.Conditions {
			if c.Type != gate.ConditionType {
				continue
			}
			found = true
			if c.Status != v1.ConditionTrue {
				msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", gate.ConditionType, c.Status))
			}
		}
		if !found {
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", gate.ConditionType))
		}
	}
	if len(msgs) > 0 {
		msg := msgs[0]
		for _, m := range msgs[1:] {
			msg += ", " + m
		}
		return boolCondition(v1.PodReady, false, reasonReadinessGatesNotReady, msg)
	}
	return boolCondition(v1.PodReady, true, "", "")
}

// rejectedStatus is the status of a pod that admission refused: Failed,
// with the reason and upstream's "Pod was rejected: " message.
func rejectedStatus(pod *v1.Pod, reason, message string) v1.PodStatus {
	s := v1.PodStatus{
		Phase:    v1.PodFailed,
		Reason:   reason,
		Message:  "Pod was rejected: " + message,
		QOSClass: pod.Status.QOSClass,
	}
	return s
}

// now returns a time as the API stores it: to the second.
func apiTime(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }
