package dockercri

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

func TestContainerExits(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sb := fx.sandbox("job")
	tests := []struct {
		name       string
		command    []string
		args       []string
		wantCode   int
		wantReason string
	}{
		{"completed", nil, []string{"echo", "done"}, 0, cri.ReasonCompleted},
		{"error", nil, []string{"exit", "3"}, 3, cri.ReasonError},
		{"command replaces the entrypoint", []string{"/klabtest", "exit"}, []string{"5"}, 5, cri.ReasonError},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := containerConfig("main", tt.args...)
			cfg.Command, cfg.Attempt = tt.command, i
			id := fx.start(sb, cfg)
			st := fx.waitExited(id)
			if st.State != cri.StateExited || st.ExitCode != tt.wantCode || st.Reason != tt.wantReason {
				t.Fatalf("status = %s %d %q, want exited %d %q", st.State, st.ExitCode, st.Reason, tt.wantCode, tt.wantReason)
			}
			if st.ID != id || st.SandboxID != sb.ID || st.Name != "main" || st.Attempt != i || st.Image != engine.image ||
				!strings.HasPrefix(st.ImageID, "sha256:") || !maps.Equal(st.Labels, cfg.Labels) {
				t.Errorf("status = %+v, want container main attempt %d of sandbox %s with labels %v", st, i, sb.ID, cfg.Labels)
			}
			if st.CreatedAt.IsZero() || st.StartedAt.Before(st.CreatedAt) || st.FinishedAt.Before(st.StartedAt) {
				t.Errorf("times created %v started %v finished %v are out of order", st.CreatedAt, st.StartedAt, st.FinishedAt)
			}
		})
	}
	list, err := fx.rt.ListContainers(fx.ctx())
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	if len(list) != len(tests) {
		t.Fatalf("ListContainers lists %d containers, want %d", len(list), len(tests))
	}
	for i, c := range list {
		if c.Attempt != i {
			t.Errorf("ListContainers()[%d] is attempt %d, want oldest first", i, c.Attempt)
		}
	}
}

func TestStartError(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sb := fx.sandbox("broken")
	cfg := containerConfig("main")
	// The test image has klab's shell as /bin/sh (as klab/app does), so
	// the missing program is one no image of klab's carries.
	cfg.Command = []string{"/bin/no-such-program", "-c", "true"}
	id, err := fx.rt.CreateContainer(fx.ctx(), sb.ID, cfg)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	err = fx.rt.StartContainer(fx.ctx(), id)
	if err == nil || !strings.Contains(err.Error(), "/bin/no-such-program") {
		t.Fatalf("StartContainer = %v, want an error naming /bin/no-such-program", err)
	}
	st, err := fx.rt.ContainerStatus(fx.ctx(), id)
	if err != nil {
		t.Fatalf("ContainerStatus: %v", err)
	}
	if st.State != cri.StateExited || st.Reason != "StartError" || st.ExitCode == 0 || !strings.Contains(st.Message, "/bin/no-such-program") ||
		st.FinishedAt.IsZero() {
		t.Errorf("status = %+v, want exited with reason StartError, a non-zero code, a message and a finish time", st)
	}
	if err := fx.rt.StartContainer(fx.ctx(), id); err == nil || !strings.Contains(err.Error(), "not created") {
		t.Errorf("StartContainer again = %v, want it refused", err)
	}
}

// TestOOMKilled: a container that allocates past its memory limit is
// killed, and reported as the in-process runtime reports it.
func TestOOMKilled(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sb := fx.sandbox("hungry")
	cfg := containerConfig("main", "alloc", "64")
	cfg.MemoryLimit = 20 << 20
	id := fx.start(sb, cfg)
	// The engine learns of an OOM kill through a notice containerd's shim
	// registers on the container's cgroup once the process has started
	// (cgroup v1: an eventfd on memory.oom_control); a process killed
	// before that is reported as a plain exit 137, with no "oom" event
	// and no State.OOMKilled, by Docker as by any client of it. The
	// program allocates only when told, after the start has returned.
	fx.waitLog(id, "ready")
	if err := engine.docker.ContainerKill(fx.ctx(), id, "SIGUSR1"); err != nil {
		t.Fatalf("signal the container to allocate: %v", err)
	}
	st := fx.waitExited(id)
	if st.State == cri.StateRunning || (st.ExitCode == 0 && strings.Contains(fx.logs(id, cri.LogOptions{}), "allocated")) {
		t.Skip("skipping: this machine's kernel does not enforce container memory limits (the container allocated 64 MiB under a 20 MiB limit)")
	}
	// The engine's wait returns as the container stops, before the
	// engine's "oom" event (which the kubelet's exit event follows) has
	// reached the runtime: until it does, exit 137 reads as "Error". The
	// kubelet reads the status on the exit event; here, give the event
	// the moment it takes.
	for deadline := time.Now().Add(5 * time.Second); st.Reason != cri.ReasonOOMKilled && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		var err error
		if st, err = fx.rt.ContainerStatus(fx.ctx(), id); err != nil {
			t.Fatal(err)
		}
	}
	if st.State != cri.StateExited || st.ExitCode != 137 || st.Reason != cri.ReasonOOMKilled {
		t.Errorf("status = %s %d %q, want exited 137 OOMKilled", st.State, st.ExitCode, st.Reason)
	}
}

func TestStopContainer(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sb := fx.sandbox("stopper")
	tests := []struct {
		name       string
		args       []string
		timeout    time.Duration
		wantCode   int
		wantReason string
		minTime    time.Duration
	}{
		// klabtest pause ends on SIGTERM.
		{"ends on SIGTERM", []string{"pause"}, 10 * time.Second, 0, cri.ReasonCompleted, 0},
		// As PID 1 without a handler, klabtest sleep ignores SIGTERM.
		{"killed after the grace period", []string{"sleep"}, time.Second, 137, cri.ReasonError, time.Second},
		{"no grace period kills at once", []string{"pause"}, 0, 137, cri.ReasonError, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := containerConfig("main", tt.args...)
			cfg.Attempt = i
			id := fx.start(sb, cfg)
			fx.waitLog(id, "ready")
			start := time.Now()
			if err := fx.rt.StopContainer(fx.ctx(), id, tt.timeout); err != nil {
				t.Fatalf("StopContainer: %v", err)
			}
			took := time.Since(start)
			// StopContainer returns once the container has exited.
			st, err := fx.rt.ContainerStatus(fx.ctx(), id)
			if err != nil {
				t.Fatalf("ContainerStatus: %v", err)
			}
			if st.State != cri.StateExited || st.ExitCode != tt.wantCode || st.Reason != tt.wantReason {
				t.Errorf("status = %s %d %q, want exited %d %q", st.State, st.ExitCode, st.Reason, tt.wantCode, tt.wantReason)
			}
			if took < tt.minTime || (tt.minTime == 0 && took > 5*time.Second) {
				t.Errorf("StopContainer took %v", took)
			}
			if err := fx.rt.StopContainer(fx.ctx(), id, time.Second); err != nil {
				t.Errorf("StopContainer of an exited container = %v, want nil", err)
			}
		})
	}
}

// TestContainerConfig checks what the container is made of: its name,
// environment, limits, network namespace, and nothing of the host.
func TestContainerConfig(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sb := fx.sandbox("web")

	podIP := fx.start(sb, containerConfig("ip", "env", "POD_IP"))
	cfg := containerConfig("name", "env", "POD_NAME")
	cfg.Env = []cri.KeyValue{{Key: "POD_NAME", Value: "from-the-spec"}}
	podName := fx.start(sb, cfg)
	for id, want := range map[string]string{podIP: sb.IP, podName: "from-the-spec"} {
		fx.waitExited(id)
		if got := fx.logs(id, cri.LogOptions{}); got != want+"\n" {
			t.Errorf("container printed %q, want %q", got, want+"\n")
		}
	}

	cfg = containerConfig("limited", "pause")
	cfg.MemoryLimit, cfg.MilliCPULimit, cfg.Attempt = 64<<20, 250, 2
	id := fx.start(sb, cfg)
	info := fx.inspect(id)
	wantName := fmt.Sprintf("/klab-%s_k8s_limited_web_default_%s-web_2", engine.cluster, fx.cfg.Node)
	if info.Name != wantName {
		t.Errorf("name = %q, want %q", info.Name, wantName)
	}
	host := info.HostConfig
	if host.Memory != 64<<20 || host.MemorySwap != 64<<20 || host.NanoCPUs != 250e6 {
		t.Errorf("limits: memory %d, memory+swap %d, nano CPUs %d; want 64 MiB, 64 MiB, 250e6", host.Memory, host.MemorySwap, host.NanoCPUs)
	}
	if string(host.NetworkMode) != "container:"+sb.ID {
		t.Errorf("network mode = %q, want the sandbox's", host.NetworkMode)
	}
	if host.Privileged || len(host.Binds) > 0 || len(host.Mounts) > 0 || len(info.Mounts) > 0 {
		t.Errorf("container is privileged (%v) or has mounts (%v %v %v)", host.Privileged, host.Binds, host.Mounts, info.Mounts)
	}
}

// TestOwnership: a runtime sees and touches only its node's pod
// containers.
func TestOwnership(t *testing.T) {
	t.Parallel()
	fx, other := newFixture(t), newFixture(t)
	sb := fx.sandbox("web")
	id := fx.start(sb, containerConfig("main", "pause"))

	if _, err := other.rt.ContainerStatus(fx.ctx(), id); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("another node's ContainerStatus = %v, want ErrNotFound", err)
	}
	if err := other.rt.StopContainer(fx.ctx(), id, 0); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("another node's StopContainer = %v, want ErrNotFound", err)
	}
	if _, err := other.rt.CreateContainer(fx.ctx(), sb.ID, containerConfig("intruder", "pause")); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("another node's CreateContainer in the sandbox = %v, want ErrNotFound", err)
	}
	if list, err := other.rt.ListContainers(fx.ctx()); err != nil || len(list) != 0 {
		t.Errorf("another node's ListContainers = %v, %v; want none", list, err)
	}
	if _, err := fx.rt.ContainerStatus(fx.ctx(), sb.ID); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("ContainerStatus of a sandbox = %v, want ErrNotFound", err)
	}
	if _, err := fx.rt.ContainerStatus(fx.ctx(), "no-such-container"); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("ContainerStatus of nothing = %v, want ErrNotFound", err)
	}
	if err := fx.rt.RemoveContainer(fx.ctx(), "no-such-container"); err != nil {
		t.Errorf("RemoveContainer of nothing = %v, want nil", err)
	}
	if err := fx.rt.RemoveContainer(fx.ctx(), id); err != nil {
		t.Fatalf("RemoveContainer of a running container: %v", err)
	}
	if _, err := fx.rt.ContainerStatus(fx.ctx(), id); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("ContainerStatus after RemoveContainer = %v, want ErrNotFound", err)
	}
}

func TestCreateContainerRefuses(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sb := fx.sandbox("web")

	cfg := containerConfig("main", "pause")
	cfg.Image = engine.cluster + "/missing:1"
	if _, err := fx.rt.CreateContainer(fx.ctx(), sb.ID, cfg); !errors.Is(err, cri.ErrImageNotFound) {
		t.Errorf("CreateContainer with a missing image = %v, want ErrImageNotFound", err)
	}
	if _, err := fx.rt.CreateContainer(fx.ctx(), "no-such-sandbox", containerConfig("main", "pause")); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("CreateContainer in no sandbox = %v, want ErrNotFound", err)
	}
	if err := fx.rt.StopPodSandbox(fx.ctx(), sb.ID); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if _, err := fx.rt.CreateContainer(fx.ctx(), sb.ID, containerConfig("main", "pause")); err == nil || !strings.Contains(err.Error(), "is not ready") {
		t.Errorf("CreateContainer in a stopped sandbox = %v, want not ready", err)
	}
}
