package kubelet

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// Event reasons, as upstream's pkg/kubelet/events, so that `kubectl
// describe` reads as on a real node.
const (
	eventCreated           = "Created"
	eventStarted           = "Started"
	eventFailed            = "Failed"
	eventFailedMount       = "FailedMount"
	eventKilling           = "Killing"
	eventBackOff           = "BackOff"
	eventPulling           = "Pulling"
	eventPulled            = "Pulled"
	eventErrImageNeverPull = "ErrImageNeverPull"
	// eventStandIn is klab's own: a tutorial image could not be pulled
	// and klab's stand-in for it runs instead.
	eventStandIn                = "StandIn"
	eventUnhealthy              = "Unhealthy"
	eventProbeWarning           = "ProbeWarning"
	eventFailedCreatePodSandBox = "FailedCreatePodSandBox"
	eventSandboxChanged         = "SandboxChanged"
	eventFailedKillPod          = "FailedKillPod"
	eventStarting               = "Starting"
	eventNodeReady              = "NodeReady"
	eventNodeNotReady           = "NodeNotReady"
	eventMirrorPodFailed        = "FailedMirrorPod"
)

// Steps of /debug/klab/events. A StepEvent carries a Kubernetes Event the
// kubelet recorded; the others are the kubelet's own milestones, which
// have no Event upstream.
const (
	StepEvent         = "event"
	StepRegistered    = "node-registered"
	StepNodeStatus    = "node-status"
	StepLeaseRenewed  = "lease-renewed"
	StepWorkerStarted = "worker-started"
	StepSynced        = "pod-synced"
	StepStatus        = "pod-status"
	StepTerminating   = "pod-terminating"
	StepTerminated    = "pod-terminated"
	StepDeleted       = "pod-deleted"
	StepCleanedUp     = "pod-cleaned-up"
	StepAdopted       = "pod-adopted"
	StepOrphan        = "orphan-removed"
	StepMirror        = "mirror-pod"
)

// LifecycleEvent is one step of a pod's (or the node's) life on this
// kubelet, as /debug/klab/events streams it.
type LifecycleEvent struct {
	Time      time.Time `json:"time"`
	Node      string    `json:"node"`
	Step      string    `json:"step"`
	Namespace string    `json:"namespace,omitempty"`
	Pod       string    `json:"pod,omitempty"`
	UID       string    `json:"uid,omitempty"`
	Container string    `json:"container,omitempty"`
	// Type, Reason and Message are the Kubernetes Event's, for StepEvent;
	// other steps use Message for a detail.
	Type    string `json:"type,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// eventStreamRecent is how many lifecycle events a new reader of the
// stream is replayed.
const eventStreamRecent = 256

// recorder records Kubernetes Events (source component "kubelet", host
// the node, as upstream) and mirrors each onto the lifecycle stream.
type recorder struct {
	node   string
	events record.EventRecorder
	stream *eventstream.Hub[LifecycleEvent]
	now    func() time.Time
}

// containerRef is the object reference of one container of a pod, with
// upstream's field path, so `kubectl describe` names the container.
func containerRef(pod *v1.Pod, container string) *v1.ObjectReference {
	ref := &v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion,
	}
	if container == "" {
		return ref
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == container {
			ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", container)
			return ref
		}
	}
	ref.FieldPath = fmt.Sprintf("spec.containers{%s}", container)
	return ref
}

// pod records an Event about a pod, or one of its containers when
// container is not empty.
func (r *recorder) pod(pod *v1.Pod, container, eventType, reason, message string) {
	r.events.Event(containerRef(pod, container), eventType, reason, message)
	r.stream.Publish(LifecycleEvent{
		Time: r.now(), Node: r.node, Step: StepEvent, Namespace: pod.Namespace, Pod: pod.Name, UID: string(pod.UID),
		Container: container, Type: eventType, Reason: reason, Message: message,
	})
}

// node records an Event about the node.
func (r *recorder) nodeEvent(eventType, reason, message string) {
	ref := &v1.ObjectReference{Kind: "Node", Name: r.node, UID: nodeRefUID(r.node)}
	r.events.Event(ref, eventType, reason, message)
	r.stream.Publish(LifecycleEvent{Time: r.now(), Node: r.node, Step: StepEvent, Type: eventType, Reason: reason, Message: message})
}

// nodeRefUID is the UID upstream's kubelet puts in its node references:
// the node name (the Node object's UID is not known before registration).
func nodeRefUID(node string) types.UID { return types.UID(node) }

// step publishes a milestone that has no Kubernetes Event.
func (r *recorder) step(pod *v1.Pod, container, step, message string) {
	ev := LifecycleEvent{Time: r.now(), Node: r.node, Step: step, Container: container, Message: message}
	if pod != nil {
		ev.Namespace, ev.Pod, ev.UID = pod.Namespace, pod.Name, string(pod.UID)
	}
	r.stream.Publish(ev)
}
