package scheduler

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// errNoNodesAvailable is upstream's error when the cluster has no node.
var errNoNodesAvailable = errors.New("no nodes available to schedule pods")

// noNodeAvailableMsg starts every FitError message.
const noNodeAvailableMsg = "0/%v nodes are available"

// FitError says why a pod fits no node: the PreFilter plugin that rejected
// it outright, or what the filters said about each node.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	// PreFilterMsg is set when a PreFilter plugin rejected the pod; no
	// node was filtered then.
	PreFilterMsg string
	// NodeToStatus holds the rejection of each filtered node.
	NodeToStatus map[string]*framework.Status
	// UnschedulablePlugins are the plugins that rejected the pod.
	UnschedulablePlugins []string
	// PostFilterMsg is what preemption said when it could not help
	// ("preemption: 0/6 nodes are available: 6 Preemption is not helpful
	// for scheduling."), empty when it nominated a node.
	PostFilterMsg string
}

// Error returns upstream's message: "0/3 nodes are available: " then the
// PreFilter message, or every node's reasons counted ("2 Insufficient
// cpu") and sorted as strings, joined with ", ", ending with "."; then,
// after a space, what preemption said.
func (f *FitError) Error() string {
	msg := f.filterMessage()
	if f.PostFilterMsg != "" {
		msg += " " + f.PostFilterMsg
	}
	return msg
}

// filterMessage is Error without preemption's part.
func (f *FitError) filterMessage() string {
	msg := fmt.Sprintf(noNodeAvailableMsg+":", f.NumAllNodes)
	if f.PreFilterMsg != "" {
		return msg + " " + f.PreFilterMsg + "."
	}
	counts := map[string]int{}
	for _, s := range f.NodeToStatus {
		for _, reason := range s.Reasons() {
			counts[reason]++
		}
	}
	histogram := make([]string, 0, len(counts))
	for reason, n := range counts {
		histogram = append(histogram, fmt.Sprintf("%v %v", n, reason))
	}
	// Sorted as strings, as upstream does: "10 ..." comes before "2 ...".
	sort.Strings(histogram)
	if len(histogram) > 0 {
		msg += " " + strings.Join(histogram, ", ") + "."
	}
	return msg
}
