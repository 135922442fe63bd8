package scheduler

import (
	"fmt"
	"testing"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

func TestFitErrorMessage(t *testing.T) {
	const (
		cpu      = "Insufficient cpu"
		memory   = "Insufficient memory"
		selector = "node(s) didn't match Pod's node affinity/selector"
		taint    = "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
	)
	rejected := func(reasons ...string) *framework.Status {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	many := func(n int, reason string, statuses map[string]*framework.Status) map[string]*framework.Status {
		for i := range n {
			statuses[fmt.Sprintf("%s-%d", reason, i)] = rejected(reason)
		}
		return statuses
	}
	tests := []struct {
		name string
		err  *FitError
		want string
	}{
		{
			name: "reasons counted across nodes",
			err: &FitError{NumAllNodes: 3, NodeToStatus: map[string]*framework.Status{
				"worker-1": rejected(cpu), "worker-2": rejected(selector), "worker-3": rejected(selector),
			}},
			want: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector.",
		},
		{
			name: "every reason of a node counts",
			err: &FitError{NumAllNodes: 2, NodeToStatus: map[string]*framework.Status{
				"worker-1": rejected(cpu, memory), "worker-2": rejected(cpu),
			}},
			want: "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.",
		},
		{
			name: "sorted as strings, so 10 comes before 2",
			err:  &FitError{NumAllNodes: 12, NodeToStatus: many(10, taint, many(2, cpu, map[string]*framework.Status{}))},
			want: "0/12 nodes are available: 10 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu.",
		},
		{
			name: "a PreFilter rejection speaks for every node",
			err:  &FitError{NumAllNodes: 3, PreFilterMsg: "node(s) didn't satisfy existing pods anti-affinity rules"},
			want: "0/3 nodes are available: node(s) didn't satisfy existing pods anti-affinity rules.",
		},
		{
			name: "preemption's account follows after a space",
			err: &FitError{NumAllNodes: 3, NodeToStatus: map[string]*framework.Status{
				"master-1": rejected(taint), "worker-1": rejected(cpu), "worker-2": rejected(cpu),
			}, PostFilterMsg: "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."},
			want: "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.",
		},
		{
			name: "rejections without reasons",
			err:  &FitError{NumAllNodes: 1, NodeToStatus: map[string]*framework.Status{"worker-1": rejected()}},
			want: "0/1 nodes are available:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
