package events

import (
	"strings"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
)

// explainedReasons are the Event reasons klab's components emit (grep
// Eventf and the reason constants under cluster/), each explained under
// the key "ui.events.why.<Reason>" in both languages.
var explainedReasons = []string{
	// kube-scheduler
	"Scheduled", "FailedScheduling",
	// kubelet
	"Pulling", "Pulled", "Created", "Started", "Killing", "BackOff", "Failed", "Unhealthy", "ProbeWarning",
	"FailedCreatePodSandBox", "SandboxChanged", "FailedKillPod", "ErrImageNeverPull", "FailedMirrorPod",
	"Starting", "NodeReady", "NodeNotReady", "NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID",
	// node lifecycle controller
	"RegisteredNode", "RemovingNode", "TaintManagerEviction",
	// ReplicaSet, Deployment, DaemonSet, Job controllers
	"SuccessfulCreate", "SuccessfulDelete", "FailedCreate", "FailedDelete", "ScalingReplicaSet", "ReplicaSetCreateError",
	"SelectingAll", "SucceededDaemonPod", "FailedDaemonPod",
	"Completed", "Suspended", "Resumed", "BackoffLimitExceeded", "DeadlineExceeded", "TooManySucceededPods",
	// Endpoints, EndpointSlice, garbage collector
	"FailedToCreateEndpoint", "FailedToUpdateEndpoint", "FailedToListPods", "FailedToListEndpointSlices",
	"FailedToUpdateEndpointSlices", "OwnerRefInvalidNamespace",
	// leader election (client-go), kube-proxy
	"LeaderElection", "ProxyModeChanged", "InvalidProxyConfiguration",
}

// reasonKey returns the key of a reason's explanation, if klab has one.
func reasonKey(reason string) (string, bool) {
	key := "ui.events.why." + reason
	return key, i18n.Current().Has(key)
}

// explanation is what enter shows about an event: what its reason means,
// who reported it about what, how often, and its whole note.
func explanation(r *eventRow, width int, loc *time.Location) []string {
	var out []string
	if key, ok := reasonKey(r.Reason); ok {
		out = append(out, common.Wrap(i18n.T(key), width, "")...)
	} else {
		out = append(out, common.Wrap(i18n.T("ui.events.why-unknown", r.Reason), width, "")...)
	}
	reporter := r.Controller
	if reporter == "" {
		reporter = i18n.T("ui.events.unknown-reporter")
	}
	if r.Instance != "" && r.Instance != r.Controller {
		reporter += " (" + r.Instance + ")"
	}
	object := r.Kind + " " + r.Name
	if r.Namespace != "" {
		object = r.Kind + " " + r.Namespace + "/" + r.Name
	}
	out = append(out, common.Wrap(i18n.T("ui.events.reported", reporter, strings.TrimSpace(object)), width, "")...)
	if r.Count > 1 {
		out = append(out, common.Wrap(i18n.T("ui.events.repeated", int(r.Count), common.Clock(r.First, loc)), width, "")...)
	}
	if r.Note != "" {
		out = append(out, common.Wrap(i18n.T("ui.events.note", r.Note), width, "")...)
	}
	return out
}
