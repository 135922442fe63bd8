package kubelet

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// syncResult is what one sync of a pod decided.
type syncResult struct {
	// requeue, when positive, is when the pod needs another look (a
	// back-off ends); otherwise the worker's resync applies.
	requeue time.Duration
	// terminal: the pod reached Succeeded or Failed and nothing of it
	// runs any more.
	terminal bool
}

// runtimePod reads what the runtime holds for one pod.
func (k *Kubelet) runtimePod(ctx context.Context, pod *v1.Pod) (*runtimePod, error) {
	pods, err := listRuntimePods(ctx, k.runtime)
	if err != nil {
		return nil, err
	}
	if rp := pods[pod.UID]; rp != nil {
		return rp, nil
	}
	return &runtimePod{uid: pod.UID, name: pod.Name, namespace: pod.Namespace}, nil
}

// podStatus computes the pod's status from the runtime, the probes and
// the remembered waiting reasons.
func (k *Kubelet) podStatus(pod *v1.Pod, rp *runtimePod, terminal bool) v1.PodStatus {
	in := statusInput{
		pod: pod, rt: rp, runtimeName: k.runtime.Name(), hostIP: k.cfg.NodeIP,
		ready: k.probes.ready, started: k.probes.started, terminal: terminal,
	}
	if !terminal {
		in.reasons = k.reasons.get(pod.UID)
	}
	return generatePodStatus(in)
}

// syncPod makes one pass of converging a pod to its spec, as upstream's
// SyncPod and computePodActions do: admit it the first time, make sure
// it has a sandbox, kill containers whose liveness probe failed, run the
// init containers one by one, then start or restart the containers as the
// restart policy and their back-off allow, and report the status. It is
// level-triggered: it looks at the runtime afresh each time and is safe
// to repeat.
func (k *Kubelet) syncPod(ctx context.Context, w *podWorker, pod *v1.Pod) (syncResult, error) {
	rp, err := k.runtimePod(ctx, pod)
	if err != nil {
		return syncResult{}, err
	}
	if !w.admitted {
		w.admitted = true
		switch {
		case !rp.empty():
			k.rec.step(pod, "", StepAdopted, "found in the runtime")
		case pod.Status.Phase == v1.PodPending || pod.Status.Phase == "":
			if f := admit(pod, k.workers.activePods(pod.UID), k.cfg.allocatable()); f != nil {
				k.rec.pod(pod, "", v1.EventTypeWarning, f.Reason, f.Message)
				_, err := k.statuses.SetPodStatus(ctx, pod, rejectedStatus(pod, f.Reason, f.Message))
				return syncResult{terminal: true}, err
			}
		}
	}
	if isTerminal(pod.Status.Phase) {
		// Finished earlier, by this kubelet or the one before it.
		return syncResult{terminal: true}, k.stopPod(ctx, pod, rp)
	}

	// The volumes first, as upstream waits for them before the sandbox.
	remount, err := k.mountVolumes(ctx, pod)
	if err != nil {
		k.rec.pod(pod, "", v1.EventTypeWarning, eventFailedMount, err.Error())
		if _, serr := k.statuses.SetPodStatus(ctx, pod, k.podStatus(pod, rp, false)); serr != nil {
			err = errors.Join(err, serr)
		}
		return syncResult{}, err
	}
	sandbox, err := k.ensureSandbox(ctx, pod, rp)
	if err != nil {
		if _, serr := k.statuses.SetPodStatus(ctx, pod, k.podStatus(pod, rp, false)); serr != nil {
			err = errors.Join(err, serr)
		}
		return syncResult{}, err
	}
	if rp, err = k.runtimePod(ctx, pod); err != nil {
		return syncResult{}, err
	}

	var res syncResult
	wait := func(d time.Duration) {
		if d > 0 && (res.requeue == 0 || d < res.requeue) {
			res.requeue = d
		}
	}
	wait(remount)
	if k.killUnhealthy(ctx, pod, rp) {
		if rp, err = k.runtimePod(ctx, pod); err != nil {
			return syncResult{}, err
		}
	}
	if k.syncInitContainers(ctx, pod, rp, sandbox, wait) {
		k.syncContainers(ctx, pod, rp, sandbox, wait)
	}

	if rp, err = k.runtimePod(ctx, pod); err != nil {
		return syncResult{}, err
	}
	k.pruneContainers(ctx, rp)
	status := k.podStatus(pod, rp, false)
	if _, err := k.statuses.SetPodStatus(ctx, pod, status); err != nil {
		return res, err
	}
	if isTerminal(status.Phase) {
		res.terminal = true
		return res, k.stopPod(ctx, pod, rp)
	}
	return res, nil
}

// ensureSandbox returns the pod's ready sandbox, creating one if it has
// none. A sandbox that stopped takes the pod's containers with it; they
// start again in the new one.
func (k *Kubelet) ensureSandbox(ctx context.Context, pod *v1.Pod, rp *runtimePod) (*cri.SandboxStatus, error) {
	if sb := rp.readySandbox(); sb != nil {
		return sb, nil
	}
	if len(rp.sandboxes) > 0 {
		k.rec.pod(pod, "", v1.EventTypeNormal, eventSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
		if err := k.killAll(ctx, pod, rp, terminationGrace(podWithoutDeletion(pod))); err != nil {
			return nil, err
		}
		for _, sb := range rp.sandboxes {
			if err := k.runtime.RemovePodSandbox(ctx, sb.ID); err != nil && !errors.Is(err, cri.ErrNotFound) {
				return nil, fmt.Errorf("remove dead sandbox %s: %w", sb.ID, err)
			}
		}
	}
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	created, err := k.runtime.RunPodSandbox(ctx, cri.SandboxConfig{
		PodUID: string(pod.UID), Name: pod.Name, Namespace: pod.Namespace, Hostname: hostname, Labels: podLabels(pod),
	})
	if err != nil {
		k.rec.pod(pod, "", v1.EventTypeWarning, eventFailedCreatePodSandBox, fmt.Sprintf("Failed to create pod sandbox: %v", err))
		return nil, fmt.Errorf("create sandbox for pod %s: %w", formatPod(pod), err)
	}
	return &cri.SandboxStatus{Sandbox: created, Ready: true}, nil
}

// podWithoutDeletion lets terminationGrace pick the spec's grace period
// for kills that are not the pod's deletion.
func podWithoutDeletion(pod *v1.Pod) *v1.Pod {
	p := *pod
	p.DeletionGracePeriodSeconds = nil
	return &p
}

// killUnhealthy kills running containers whose liveness or startup probe
// failed, so that the restart policy brings them back. It reports whether
// it killed any.
func (k *Kubelet) killUnhealthy(ctx context.Context, pod *v1.Pod, rp *runtimePod) bool {
	killed := false
	for _, c := range rp.running() {
		kill, ok := k.probes.restartWanted(c.ID)
		if !ok {
			continue
		}
		grace := terminationGrace(podWithoutDeletion(pod))
		if kill.grace != nil {
			grace = time.Duration(*kill.grace) * time.Second
		}
		if err := k.killContainer(ctx, pod, c, grace, kill.message); err != nil {
			k.log.Warn("kill unhealthy container", "pod", formatPod(pod), "container", c.Name, "err", err)
			continue
		}
		killed = true
	}
	return killed
}

// syncInitContainers runs the init containers in order, one at a time; it
// reports whether all of them have succeeded. Once a regular container
// has run, the pod is past initialisation for good.
func (k *Kubelet) syncInitContainers(ctx context.Context, pod *v1.Pod, rp *runtimePod, sandbox *cri.SandboxStatus, wait func(time.Duration)) bool {
	for _, c := range pod.Spec.Containers {
		if rp.latest(c.Name) != nil {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		latest := rp.latest(c.Name)
		switch {
		case latest == nil:
			wait(k.startContainer(ctx, pod, c, true, sandbox, 0))
			return false
		case latest.State == cri.StateRunning:
			return false
		case latest.State == cri.StateCreated:
			k.recreate(ctx, pod, c, true, sandbox, latest, wait)
			return false
		case latest.ExitCode == 0:
			continue
		case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
			return false // the pod has failed; its status says so
		default:
			wait(k.restartContainer(ctx, pod, c, true, sandbox, latest))
			return false
		}
	}
	return true
}

// syncContainers starts the containers that never ran and restarts the
// exited ones the restart policy wants back.
func (k *Kubelet) syncContainers(ctx context.Context, pod *v1.Pod, rp *runtimePod, sandbox *cri.SandboxStatus, wait func(time.Duration)) {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		latest := rp.latest(c.Name)
		switch {
		case latest == nil:
			wait(k.startContainer(ctx, pod, c, false, sandbox, 0))
		case latest.State == cri.StateRunning:
			k.probes.ensure(pod, c, *latest, sandbox.IP)
		case latest.State == cri.StateCreated:
			k.recreate(ctx, pod, c, false, sandbox, latest, wait)
		case shouldRestart(pod.Spec.RestartPolicy, latest.ExitCode):
			wait(k.restartContainer(ctx, pod, c, false, sandbox, latest))
		default:
			k.reasons.clear(pod.UID, c.Name)
		}
	}
}

// recreate replaces a container that was created but never started (its
// kubelet stopped in between).
func (k *Kubelet) recreate(ctx context.Context, pod *v1.Pod, c *v1.Container, isInit bool, sandbox *cri.SandboxStatus, stale *cri.ContainerStatus, wait func(time.Duration)) {
	if err := k.runtime.RemoveContainer(ctx, stale.ID); err != nil && !errors.Is(err, cri.ErrNotFound) {
		k.log.Warn("remove unstarted container", "id", stale.ID, "err", err)
		return
	}
	wait(k.startContainer(ctx, pod, c, isInit, sandbox, stale.Attempt))
}

// stopPod stops what still runs of a pod that has finished, and its
// sandbox (which gives back its IP); the exited containers stay for
// their logs until the pod is deleted.
func (k *Kubelet) stopPod(ctx context.Context, pod *v1.Pod, rp *runtimePod) error {
	k.probes.stopPod(pod.UID)
	if err := k.killAll(ctx, pod, rp, terminationGrace(podWithoutDeletion(pod))); err != nil {
		return err
	}
	for _, sb := range rp.sandboxes {
		if sb.Ready {
			if err := k.runtime.StopPodSandbox(ctx, sb.ID); err != nil && !errors.Is(err, cri.ErrNotFound) {
				return fmt.Errorf("stop sandbox %s: %w", sb.ID, err)
			}
		}
	}
	return nil
}

// terminatePod ends a pod that is being deleted (or is gone from the API:
// gone is true): its containers get the deletion's grace period to stop,
// the final status is written, the pod is deleted from the API for good
// (grace 0, on the condition that it is still the same pod, as upstream's
// status manager does), and its sandbox and containers are removed.
func (k *Kubelet) terminatePod(ctx context.Context, pod *v1.Pod, gone bool) error {
	rp, err := k.runtimePod(ctx, pod)
	if err != nil {
		return err
	}
	k.rec.step(pod, "", StepTerminating, fmt.Sprintf("grace period %s", terminationGrace(pod)))
	k.probes.stopPod(pod.UID)
	if err := k.killAll(ctx, pod, rp, terminationGrace(pod)); err != nil {
		k.rec.pod(pod, "", v1.EventTypeWarning, eventFailedKillPod, fmt.Sprintf("error killing pod: %v", err))
		return err
	}
	if rp, err = k.runtimePod(ctx, pod); err != nil {
		return err
	}
	if !gone {
		if _, err := k.statuses.SetPodStatus(ctx, pod, k.podStatus(pod, rp, true)); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		k.rec.step(pod, "", StepTerminated, "")
		err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete pod %s: %w", formatPod(pod), err)
		}
		k.rec.step(pod, "", StepDeleted, "")
	}
	if err := k.removeRuntimePod(ctx, rp); err != nil {
		return err
	}
	if err := k.unmountVolumes(pod.UID); err != nil {
		return err
	}
	k.forgetPod(pod)
	k.rec.step(pod, "", StepCleanedUp, "")
	return nil
}

// removeRuntimePod removes a pod's sandboxes and any container left
// outside them.
func (k *Kubelet) removeRuntimePod(ctx context.Context, rp *runtimePod) error {
	for _, sb := range rp.sandboxes {
		if sb.Ready {
			if err := k.runtime.StopPodSandbox(ctx, sb.ID); err != nil && !errors.Is(err, cri.ErrNotFound) {
				return fmt.Errorf("stop sandbox %s: %w", sb.ID, err)
			}
		}
		if err := k.runtime.RemovePodSandbox(ctx, sb.ID); err != nil && !errors.Is(err, cri.ErrNotFound) {
			return fmt.Errorf("remove sandbox %s: %w", sb.ID, err)
		}
	}
	for _, c := range rp.containers {
		if c.State == cri.StateRunning {
			if err := k.runtime.StopContainer(ctx, c.ID, 0); err != nil && !errors.Is(err, cri.ErrNotFound) {
				return fmt.Errorf("stop container %s: %w", c.ID, err)
			}
		}
		if err := k.runtime.RemoveContainer(ctx, c.ID); err != nil && !errors.Is(err, cri.ErrNotFound) {
			return fmt.Errorf("remove container %s: %w", c.ID, err)
		}
	}
	return nil
}

// forgetPod drops everything the kubelet remembers about a pod.
func (k *Kubelet) forgetPod(pod *v1.Pod) {
	k.probes.stopPod(pod.UID)
	k.reasons.forget(pod.UID)
	k.statuses.forget(pod.UID)
	for _, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		k.crashBackOff.DeleteEntry(backOffKey(pod, c.Name))
		k.imageBackOff.DeleteEntry(string(pod.UID) + "_" + c.Image)
		k.pullErrors.set(string(pod.UID)+"_"+c.Image, "", time.Time{})
	}
}
