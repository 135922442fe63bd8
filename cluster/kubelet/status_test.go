package kubelet

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

var (
	t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Minute)
)

func running(name string, attempt int) cri.ContainerStatus {
	return cri.ContainerStatus{ID: name + "-" + string(rune('a'+attempt)), Name: name, Attempt: attempt, Image: appImage, ImageID: "sha256:1", State: cri.StateRunning, StartedAt: t0}
}

func exited(name string, attempt, code int, reason string) cri.ContainerStatus {
	c := running(name, attempt)
	c.State, c.FinishedAt, c.ExitCode, c.Reason = cri.StateExited, t1, code, reason
	return c
}

// rtPod is a runtime pod with a ready sandbox and the given containers,
// newest first.
func rtPod(containers ...cri.ContainerStatus) *runtimePod {
	return &runtimePod{
		sandboxes:  []cri.SandboxStatus{{Sandbox: cri.Sandbox{ID: "sb", IP: "10.88.0.2"}, Ready: true}},
		containers: containers,
	}
}

func condition(s v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

func TestGeneratePodStatus(t *testing.T) {
	withInit := func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "init", Image: appImage}} }
	never := func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever }
	onFailure := func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure }
	withReadiness := func(p *v1.Pod) { p.Spec.Containers[0].ReadinessProbe = &v1.Probe{} }
	tests := []struct {
		name      string
		mutate    func(*v1.Pod)
		rt        *runtimePod
		reasons   map[string]waitingReason
		notReady  bool
		terminal  bool
		phase     v1.PodPhase
		state     string // running, terminated or the waiting reason
		ready     bool
		restarts  int32
		lastExit  *int32
		condition v1.PodCondition // one condition to check
	}{
		{
			name: "nothing created yet", rt: &runtimePod{}, phase: v1.PodPending, state: reasonContainerCreating,
			condition: v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: reasonContainersNotReady, Message: "containers with unready status: [app]"},
		},
		{
			name: "no sandbox yet", rt: &runtimePod{}, phase: v1.PodPending, state: reasonContainerCreating,
			condition: v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse},
		},
		{
			name: "running without readiness probe is ready", rt: rtPod(running("app", 0)), phase: v1.PodRunning, state: "running", ready: true,
			condition: v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue},
		},
		{
			name: "running with failing readiness", mutate: withReadiness, rt: rtPod(running("app", 0)), notReady: true,
			phase: v1.PodRunning, state: "running",
			condition: v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: reasonContainersNotReady, Message: "containers with unready status: [app]"},
		},
		{
			name: "init container running", mutate: withInit, rt: rtPod(running("init", 0)), phase: v1.PodPending, state: reasonPodInitializing,
			condition: v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: reasonContainersNotInit, Message: "containers with incomplete status: [init]"},
		},
		{
			name: "init container done", mutate: withInit, rt: rtPod(running("app", 0), exited("init", 0, 0, cri.ReasonCompleted)),
			phase: v1.PodRunning, state: "running", ready: true,
			condition: v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue},
		},
		{
			name: "init container failed, restart policy Never", mutate: func(p *v1.Pod) { withInit(p); never(p) },
			rt: rtPod(exited("init", 0, 2, cri.ReasonError)), phase: v1.PodFailed, state: reasonPodInitializing,
		},
		{
			name: "init container failed, restarting", mutate: withInit, rt: rtPod(exited("init", 0, 2, cri.ReasonError)),
			phase: v1.PodPending, state: reasonPodInitializing,
		},
		{
			name: "completed, restart policy Never", mutate: never, rt: rtPod(exited("app", 0, 0, cri.ReasonCompleted)),
			phase: v1.PodSucceeded, state: "terminated", lastExit: nil,
			condition: v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: reasonPodCompleted},
		},
		{
			name: "failed, restart policy Never", mutate: never, rt: rtPod(exited("app", 0, 1, cri.ReasonError)),
			phase: v1.PodFailed, state: "terminated",
		},
		{
			name: "completed, restart policy OnFailure", mutate: onFailure, rt: rtPod(exited("app", 0, 0, cri.ReasonCompleted)),
			phase: v1.PodSucceeded, state: "terminated",
		},
		{
			name: "failed, restart policy OnFailure, backing off", mutate: onFailure, rt: rtPod(exited("app", 1, 1, cri.ReasonError), exited("app", 0, 1, cri.ReasonError)),
			reasons: map[string]waitingReason{"app": {Reason: reasonCrashLoopBackOff, Message: "back-off 10s"}},
			phase:   v1.PodRunning, state: reasonCrashLoopBackOff, restarts: 1, lastExit: ptrInt32(1),
		},
		{
			name: "crash loop, restart policy Always", rt: rtPod(exited("app", 3, 137, cri.ReasonOOMKilled), exited("app", 2, 1, cri.ReasonError)),
			reasons: map[string]waitingReason{"app": {Reason: reasonCrashLoopBackOff, Message: "back-off 40s"}},
			phase:   v1.PodRunning, state: reasonCrashLoopBackOff, restarts: 3, lastExit: ptrInt32(137),
		},
		{
			name: "exited, restart not yet decided", rt: rtPod(exited("app", 0, 1, cri.ReasonError)),
			phase: v1.PodRunning, state: "terminated",
		},
		{
			name: "running after a restart shows the last state", rt: rtPod(running("app", 1), exited("app", 0, 1, cri.ReasonError)),
			phase: v1.PodRunning, state: "running", ready: true, restarts: 1, lastExit: ptrInt32(1),
		},
		{
			name: "image pull failing", rt: rtPod(), reasons: map[string]waitingReason{"app": {Reason: reasonErrImagePull, Message: "offline"}},
			phase: v1.PodPending, state: reasonErrImagePull,
		},
		{
			name: "deleted, stopped cleanly", rt: rtPod(exited("app", 0, 0, cri.ReasonCompleted)), terminal: true,
			phase: v1.PodSucceeded, state: "terminated",
		},
		{
			name: "deleted, killed", rt: rtPod(exited("app", 0, 137, cri.ReasonError)), terminal: true,
			phase: v1.PodFailed, state: "terminated",
		},
		{
			name: "deleted before it started", rt: &runtimePod{}, terminal: true,
			phase: v1.PodFailed, state: "terminated",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("web", appImage, tt.mutate)
			s := generatePodStatus(statusInput{
				pod: pod, rt: tt.rt, runtimeName: "critest", hostIP: "10.0.0.1", reasons: tt.reasons, terminal: tt.terminal,
				ready: func(*v1.Container, string) bool { return !tt.notReady },
			})
			if s.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", s.Phase, tt.phase)
			}
			cs := s.ContainerStatuses[0]
			state := ""
			switch {
			case cs.State.Running != nil:
				state = "running"
			case cs.State.Terminated != nil:
				state = "terminated"
			case cs.State.Waiting != nil:
				state = cs.State.Waiting.Reason
			}
			if state != tt.state || cs.Ready != tt.ready || cs.RestartCount != tt.restarts {
				t.Errorf("container state %q ready %v restarts %d, want %q %v %d", state, cs.Ready, cs.RestartCount, tt.state, tt.ready, tt.restarts)
			}
			var lastExit *int32
			if cs.LastTerminationState.Terminated != nil {
				lastExit = &cs.LastTerminationState.Terminated.ExitCode
			}
			if diff := cmp.Diff(tt.lastExit, lastExit); diff != "" {
				t.Errorf("last exit code (-want +got):\n%s", diff)
			}
			if tt.condition.Type != "" {
				if diff := cmp.Diff(tt.condition, condition(s, tt.condition.Type)); diff != "" {
					t.Errorf("condition %s (-want +got):\n%s", tt.condition.Type, diff)
				}
			}
			if tt.terminal && cs.State.Terminated != nil && tt.name == "deleted before it started" {
				if cs.State.Terminated.Reason != reasonContainerStatusUnknown || cs.State.Terminated.ExitCode != 137 {
					t.Errorf("never-started container = %+v", cs.State.Terminated)
				}
			}
			if cs.State.Running != nil && cs.ContainerID != "critest://"+tt.rt.containers[0].ID {
				t.Errorf("containerID = %q", cs.ContainerID)
			}
			if s.HostIP != "10.0.0.1" || (tt.rt.readySandbox() != nil && s.PodIP != "10.88.0.2") {
				t.Errorf("hostIP %q podIP %q", s.HostIP, s.PodIP)
			}
		})
	}
}

func ptrInt32(v int32) *int32 { return &v }

func TestMergePodStatus(t *testing.T) {
	earlier := metav1.NewTime(t0)
	old := v1.PodStatus{
		Phase: v1.PodRunning, QOSClass: v1.PodQOSBurstable, StartTime: &earlier,
		PodIP: "10.88.0.2", PodIPs: []v1.PodIP{{IP: "10.88.0.2"}},
		Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: earlier},
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: earlier},
			{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: earlier},
		},
	}
	tests := []struct {
		name  string
		new   v1.PodStatus
		check func(t *testing.T, s v1.PodStatus)
	}{
		{
			name: "unchanged condition keeps its transition time, changed one gets now",
			new: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
				{Type: v1.PodReady, Status: v1.ConditionTrue}, {Type: v1.ContainersReady, Status: v1.ConditionFalse},
			}},
			check: func(t *testing.T, s v1.PodStatus) {
				if got := condition(s, v1.PodReady).LastTransitionTime; !got.Equal(&earlier) {
					t.Errorf("Ready transition = %v", got)
				}
				if got := condition(s, v1.ContainersReady).LastTransitionTime; !got.Time.Equal(t1) {
					t.Errorf("ContainersReady transition = %v", got)
				}
			},
		},
		{
			name: "conditions of others, start time, QoS class and IP stay",
			new:  v1.PodStatus{Phase: v1.PodRunning},
			check: func(t *testing.T, s v1.PodStatus) {
				if condition(s, v1.PodScheduled).Status != v1.ConditionTrue || !s.StartTime.Equal(&earlier) ||
					s.QOSClass != v1.PodQOSBurstable || s.PodIP != "10.88.0.2" {
					t.Errorf("merged = %+v", s)
				}
			},
		},
		{
			name: "a terminal phase is never left",
			new:  v1.PodStatus{Phase: v1.PodRunning},
			check: func(t *testing.T, s v1.PodStatus) {
				o := old
				o.Phase = v1.PodSucceeded
				if got := mergePodStatus(o, v1.PodStatus{Phase: v1.PodRunning}, t1).Phase; got != v1.PodSucceeded {
					t.Errorf("phase = %s", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, mergePodStatus(old, tt.new, t1))
		})
	}
}

func TestStatusEqualIgnoresSubSecondTimes(t *testing.T) {
	a := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(300 * time.Millisecond))}}}}}
	b := *a.DeepCopy()
	normalizeTimes(&b)
	if !statusEqual(a, b) {
		t.Error("statuses differing below a second compare unequal")
	}
	b.ContainerStatuses[0].RestartCount = 1
	if statusEqual(a, b) {
		t.Error("different restart counts compare equal")
	}
}
