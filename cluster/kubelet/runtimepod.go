package kubelet

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/types"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/labels"
)

// runtimePod is what the runtime holds for one pod: its sandboxes and
// containers, found by the pod UID label. The kubelet keeps no other
// record of what it started; this view is rebuilt from the runtime on
// every sync, which is what lets a restarted kubelet carry on.
type runtimePod struct {
	uid       types.UID
	name      string
	namespace string
	// sandboxes and containers are newest first.
	sandboxes  []cri.SandboxStatus
	containers []cri.ContainerStatus
}

// readySandbox returns the newest ready sandbox, or nil.
func (rp *runtimePod) readySandbox() *cri.SandboxStatus {
	if rp == nil {
		return nil
	}
	for i := range rp.sandboxes {
		if rp.sandboxes[i].Ready {
			return &rp.sandboxes[i]
		}
	}
	return nil
}

// attempts returns the containers running the pod's container name,
// newest attempt first.
func (rp *runtimePod) attempts(name string) []*cri.ContainerStatus {
	if rp == nil {
		return nil
	}
	var out []*cri.ContainerStatus
	for i := range rp.containers {
		if rp.containers[i].Name == name {
			out = append(out, &rp.containers[i])
		}
	}
	return out
}

// latest is the newest container of name, or nil.
func (rp *runtimePod) latest(name string) *cri.ContainerStatus {
	if a := rp.attempts(name); len(a) > 0 {
		return a[0]
	}
	return nil
}

// previous is the container of name before the newest one, or nil: what
// `kubectl logs --previous` reads and lastState shows.
func (rp *runtimePod) previous(name string) *cri.ContainerStatus {
	if a := rp.attempts(name); len(a) > 1 {
		return a[1]
	}
	return nil
}

// running lists the pod's running containers.
func (rp *runtimePod) running() []cri.ContainerStatus {
	if rp == nil {
		return nil
	}
	var out []cri.ContainerStatus
	for _, c := range rp.containers {
		if c.State == cri.StateRunning {
			out = append(out, c)
		}
	}
	return out
}

// empty reports whether the runtime holds nothing for the pod.
func (rp *runtimePod) empty() bool {
	return rp == nil || (len(rp.sandboxes) == 0 && len(rp.containers) == 0)
}

// listRuntimePods groups the runtime's sandboxes and containers by pod
// UID. Objects without the kubelet's labels are not the kubelet's and are
// left alone.
func listRuntimePods(ctx context.Context, rt cri.Runtime) (map[types.UID]*runtimePod, error) {
	sandboxes, err := rt.ListPodSandboxes(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", err)
	}
	containers, err := rt.ListContainers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	pods := map[types.UID]*runtimePod{}
	get := func(l map[string]string) *runtimePod {
		uid := types.UID(l[labels.PodUID])
		if uid == "" {
			return nil
		}
		rp := pods[uid]
		if rp == nil {
			rp = &runtimePod{uid: uid, name: l[labels.PodName], namespace: l[labels.PodNamespace]}
			pods[uid] = rp
		}
		return rp
	}
	for _, sb := range sandboxes {
		if rp := get(sb.Config.Labels); rp != nil {
			rp.sandboxes = append(rp.sandboxes, sb)
		}
	}
	for _, c := range containers {
		if rp := get(c.Labels); rp != nil {
			rp.containers = append(rp.containers, c)
		}
	}
	for _, rp := range pods {
		// Runtimes list oldest first; reversing first keeps the newer of
		// two objects with the same timestamp first after the stable sort.
		slices.Reverse(rp.sandboxes)
		slices.Reverse(rp.containers)
		sort.SliceStable(rp.sandboxes, func(i, j int) bool { return rp.sandboxes[i].CreatedAt.After(rp.sandboxes[j].CreatedAt) })
		sort.SliceStable(rp.containers, func(i, j int) bool {
			a, b := rp.containers[i], rp.containers[j]
			if a.Attempt != b.Attempt {
				return a.Attempt > b.Attempt
			}
			return a.CreatedAt.After(b.CreatedAt)
		})
	}
	return pods, nil
}
