package kubelet

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/labels"
)

// reasonCache remembers why each container last failed to start, until
// it starts (upstream's ReasonCache).
type reasonCache struct {
	mu      sync.Mutex
	reasons map[types.UID]map[string]waitingReason
}

func newReasonCache() *reasonCache {
	return &reasonCache{reasons: map[types.UID]map[string]waitingReason{}}
}

func (c *reasonCache) set(uid types.UID, container string, r waitingReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reasons[uid] == nil {
		c.reasons[uid] = map[string]waitingReason{}
	}
	c.reasons[uid][container] = r
}

func (c *reasonCache) clear(uid types.UID, container string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.reasons[uid], container)
}

func (c *reasonCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.reasons, uid)
}

func (c *reasonCache) get(uid types.UID) map[string]waitingReason {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.reasons[uid])
}

// formatPod is upstream's format.Pod: name_namespace(uid).
func formatPod(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// backOffKey identifies a container's crash back-off.
func backOffKey(pod *v1.Pod, container string) string {
	return fmt.Sprintf("%s_%s_%s_%s", pod.Name, pod.Namespace, pod.UID, container)
}

func podLabels(pod *v1.Pod) map[string]string {
	l := maps.Clone(pod.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[labels.PodName] = pod.Name
	l[labels.PodNamespace] = pod.Namespace
	l[labels.PodUID] = string(pod.UID)
	return l
}

// shouldRestart applies the restart policy to an exited container.
func shouldRestart(policy v1.RestartPolicy, exitCode int) bool {
	switch policy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

// restartContainer starts the next attempt of an exited container unless
// it is in its crash back-off (upstream's doBackOff); it returns how long
// until the back-off ends, or 0 when it started one.
func (k *Kubelet) restartContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, isInit bool, sandbox *cri.SandboxStatus, exited *cri.ContainerStatus) time.Duration {
	key := backOffKey(pod, c.Name)
	if k.crashBackOff.IsInBackOffSince(key, exited.FinishedAt) {
		d := k.crashBackOff.Get(key)
		k.rec.pod(pod, c.Name, v1.EventTypeWarning, eventBackOff,
			fmt.Sprintf("Back-off restarting failed container %s in pod %s", c.Name, formatPod(pod)))
		k.reasons.set(pod.UID, c.Name, waitingReason{
			Reason:  reasonCrashLoopBackOff,
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d, c.Name, formatPod(pod)),
		})
		return max(time.Millisecond, exited.FinishedAt.Add(d).Sub(k.clock.Now()))
	}
	k.crashBackOff.Next(key, exited.FinishedAt)
	return k.startContainer(ctx, pod, c, isInit, sandbox, exited.Attempt+1)
}

// startContainer pulls the image, builds the container's configuration,
// creates and starts it (upstream's kuberuntime startContainer). A
// failure is remembered as the container's waiting reason; the result is
// when to try again (0: at the next sync).
func (k *Kubelet) startContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, isInit bool, sandbox *cri.SandboxStatus, attempt int) time.Duration {
	_, standIn, waiting := k.ensureImage(ctx, pod, c)
	if waiting != nil {
		k.rec.pod(pod, c.Name, v1.EventTypeWarning, eventFailed, "Error: "+waiting.Reason)
		k.reasons.set(pod.UID, c.Name, *waiting)
		if waiting.Reason == reasonErrImagePull || waiting.Reason == reasonImagePullBackOff {
			return max(time.Millisecond, k.imagePullRetryIn(pod, c))
		}
		return 0
	}
	env, err := k.containerEnv(ctx, pod, c, sandbox.IP)
	if err != nil {
		k.rec.pod(pod, c.Name, v1.EventTypeWarning, eventFailed, "Error: "+err.Error())
		k.reasons.set(pod.UID, c.Name, waitingReason{Reason: reasonCreateContainerConfig, Message: err.Error()})
		return 0
	}
	l := podLabels(pod)
	l[labels.ContainerName] = c.Name
	l[labels.ContainerType] = labels.TypeRegular
	if isInit {
		l[labels.ContainerType] = labels.TypeInit
	}
	cfg := cri.ContainerConfig{
		Name: c.Name, Attempt: attempt, Image: c.Image, StandIn: standIn,
		Command: expandAll(c.Command, env.lookup), Args: expandAll(c.Args, env.lookup),
		Env: env.list(), Labels: l, Mounts: k.containerMounts(pod, c),
	}
	if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		cfg.MemoryLimit = q.Value()
	}
	if q, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
		cfg.MilliCPULimit = q.MilliValue()
	}
	id, err := k.runtime.CreateContainer(ctx, sandbox.ID, cfg)
	if err != nil {
		k.rec.pod(pod, c.Name, v1.EventTypeWarning, eventFailed, "Error: "+err.Error())
		k.reasons.set(pod.UID, c.Name, waitingReason{Reason: reasonCreateContainer, Message: err.Error()})
		return 0
	}
	k.rec.pod(pod, c.Name, v1.EventTypeNormal, eventCreated, "Container created")
	if err := k.runtime.StartContainer(ctx, id); err != nil {
		k.rec.pod(pod, c.Name, v1.EventTypeWarning, eventFailed, "Error: "+err.Error())
		k.reasons.set(pod.UID, c.Name, waitingReason{Reason: reasonRunContainer, Message: err.Error()})
		return 0
	}
	k.rec.pod(pod, c.Name, v1.EventTypeNormal, eventStarted, "Container started")
	k.reasons.clear(pod.UID, c.Name)
	return 0
}

// killContainer stops a running container, giving it grace to end (the
// pod's own terminationGracePeriodSeconds or deletion grace period: never
// scaled). message is the Killing event's; empty means upstream's
// "Stopping container <name>".
func (k *Kubelet) killContainer(ctx context.Context, pod *v1.Pod, c cri.ContainerStatus, grace time.Duration, message string) error {
	if message == "" {
		message = "Stopping container " + c.Name
	}
	if pod != nil {
		k.rec.pod(pod, c.Name, v1.EventTypeNormal, eventKilling, message)
	}
	k.probes.stopContainer(c.ID)
	if err := k.runtime.StopContainer(ctx, c.ID, grace); err != nil {
		return fmt.Errorf("stop container %s (%s): %w", c.Name, c.ID, err)
	}
	return nil
}

// killAll stops the running containers of a runtime pod in parallel, as
// upstream kills a pod's containers.
func (k *Kubelet) killAll(ctx context.Context, pod *v1.Pod, rp *runtimePod, grace time.Duration) error {
	running := rp.running()
	errs := make(chan error, len(running))
	for _, c := range running {
		go func() { errs <- k.killContainer(ctx, pod, c, grace, "") }()
	}
	var first error
	for range running {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// terminationGrace is how long the pod's containers get to stop: the
// deletion's grace period when the pod is being deleted, else the pod's
// terminationGracePeriodSeconds (default 30 s).
func terminationGrace(pod *v1.Pod) time.Duration {
	if pod == nil {
		return 0
	}
	if pod.DeletionGracePeriodSeconds != nil {
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return time.Duration(v1.DefaultTerminationGracePeriodSeconds) * time.Second
}

// pruneContainers removes exited containers beyond the newest two of each
// name: the current one and the previous one `kubectl logs --previous`
// reads (upstream's container GC keeps fewer or more by policy).
func (k *Kubelet) pruneContainers(ctx context.Context, rp *runtimePod) {
	seen := map[string]int{}
	for _, c := range rp.containers {
		seen[c.Name]++
		if seen[c.Name] > 2 && c.State != cri.StateRunning {
			if err := k.runtime.RemoveContainer(ctx, c.ID); err != nil {
				k.log.Debug("remove old container", "id", c.ID, "err", err)
			}
		}
	}
}
