package inprocess

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

func TestStopContainer(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		timeout  time.Duration
		wantCode int
		reason   string
		// minTook is how long the stop must at least take.
		minTook time.Duration
		wantLog string
	}{
		{name: "graceful", timeout: 5 * time.Second, wantCode: 0, reason: cri.ReasonCompleted, wantLog: "shut down"},
		{name: "killed after the grace period", args: []string{"--shutdown-delay=1m"}, timeout: 100 * time.Millisecond,
			wantCode: 137, reason: cri.ReasonError, minTook: 100 * time.Millisecond, wantLog: "shutdown-delay=1m0s"},
		{name: "no grace period kills at once", timeout: 0, wantCode: 137, reason: cri.ReasonError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newTestRuntime(t)
			sb := runPod(t, rt, "web")
			id := startServing(t, rt, sb, appContainer("web", "app", tt.args...))
			begin := time.Now()
			if err := rt.StopContainer(context.Background(), id, tt.timeout); err != nil {
				t.Fatalf("StopContainer: %v", err)
			}
			took := time.Since(begin)
			st, err := rt.ContainerStatus(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if st.State != cri.StateExited || st.ExitCode != tt.wantCode || st.Reason != tt.reason {
				t.Errorf("status = %s %d %s, want exited %d %s", st.State, st.ExitCode, st.Reason, tt.wantCode, tt.reason)
			}
			if took < tt.minTook || took > 3*time.Second {
				t.Errorf("stop took %s, want at least %s and well under the app's delay", took, tt.minTook)
			}
			if !st.FinishedAt.After(st.StartedAt) {
				t.Errorf("finished %s, started %s", st.FinishedAt, st.StartedAt)
			}
			if log := logs(t, rt, id, cri.LogOptions{}); !strings.Contains(log, tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, log)
			}
			if code, _ := get("http://" + sb.IP + ":8080/healthz"); code != -1 {
				t.Errorf("a stopped container still answers (%d)", code)
			}
			// Stopping again does nothing.
			if err := rt.StopContainer(context.Background(), id, time.Second); err != nil {
				t.Errorf("second StopContainer: %v", err)
			}
		})
	}
}

func TestContainerExits(t *testing.T) {
	tests := []struct {
		name     string
		cfg      func(*cri.ContainerConfig)
		capacity int64
		// act ends the container, once it serves.
		act      func(t *testing.T, sb cri.Sandbox)
		wantCode int
		reason   string
		wantLog  string
	}{
		{name: "a job completes", cfg: args("--exit-after=10ms"), wantCode: 0, reason: cri.ReasonCompleted,
			wantLog: "exiting with code 0"},
		{name: "a job fails", cfg: args("--exit-after=10ms", "--exit-code=3"), wantCode: 3, reason: cri.ReasonError},
		{name: "a crash", cfg: args("--crash-after=10ms"), wantCode: 1, reason: cri.ReasonError, wantLog: "crashing with exit code 1"},
		{name: "POST /crash", act: func(t *testing.T, sb cri.Sandbox) {
			resp, err := httpClient.Post("http://"+sb.IP+":8080/crash?code=5", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}, wantCode: 5, reason: cri.ReasonError},
		{name: "past the memory limit", cfg: func(c *cri.ContainerConfig) {
			c.Args = []string{"--memory-grow=1Mi", "--memory-grow-interval=1ms"}
			c.MemoryLimit = 4 << 20
		}, wantCode: 137, reason: cri.ReasonOOMKilled, wantLog: "memory: 4Mi allocated"},
		{name: "past the node's memory", cfg: args("--memory=8Mi"), capacity: 4 << 20,
			wantCode: 137, reason: cri.ReasonOOMKilled},
		{name: "bad flags", cfg: args("--no-such-flag"), wantCode: 2, reason: cri.ReasonError,
			wantLog: "flag provided but not defined: -no-such-flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newTestRuntime(t, func(c *Config) { c.MemoryCapacity = tt.capacity })
			sb := runPod(t, rt, "job")
			cfg := appContainer("job", "main")
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			id := create(t, rt, sb, cfg)
			if err := rt.StartContainer(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			if tt.act != nil {
				waitLog(t, rt, id, "listening on")
				tt.act(t, sb)
			}
			st := waitExit(t, rt, id)
			if st.ExitCode != tt.wantCode || st.Reason != tt.reason {
				t.Errorf("exited %d %s, want %d %s", st.ExitCode, st.Reason, tt.wantCode, tt.reason)
			}
			if log := logs(t, rt, id, cri.LogOptions{}); !strings.Contains(log, tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, log)
			}
			rt.memory.mu.Lock()
			used := rt.memory.used
			rt.memory.mu.Unlock()
			if used != 0 {
				t.Errorf("node still accounts %d bytes to exited containers", used)
			}
		})
	}
}

func args(a ...string) func(*cri.ContainerConfig) {
	return func(c *cri.ContainerConfig) { c.Args = a }
}

func TestSamePortTwiceInAPod(t *testing.T) {
	rt := newTestRuntime(t)
	sb := runPod(t, rt, "web")
	startServing(t, rt, sb, appContainer("web", "one"))
	id := create(t, rt, sb, appContainer("web", "two"))
	if err := rt.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	st := waitExit(t, rt, id)
	if st.ExitCode != 1 || st.Reason != cri.ReasonError {
		t.Errorf("second container on :8080 exited %d %s, want 1 Error", st.ExitCode, st.Reason)
	}
	if log := logs(t, rt, id, cri.LogOptions{}); !strings.Contains(log, "address already in use") {
		t.Errorf("log does not say why:\n%s", log)
	}
}

func TestStartError(t *testing.T) {
	rt := newTestRuntime(t)
	sb := runPod(t, rt, "web")
	cfg := appContainer("web", "shell")
	cfg.Command = []string{"python3", "-c", "print('hello')"}
	id := create(t, rt, sb, cfg)
	err := rt.StartContainer(context.Background(), id)
	if err == nil || !strings.Contains(err.Error(), `exec: "python3": executable file not found in $PATH`) {
		t.Fatalf("StartContainer = %v, want the exec error", err)
	}
	st, _ := rt.ContainerStatus(context.Background(), id)
	if st.State != cri.StateExited || st.Reason != ReasonStartError || st.ExitCode != ExitCodeStartError ||
		!strings.Contains(st.Message, "holds only the klab app") || !st.StartedAt.IsZero() || st.FinishedAt.IsZero() {
		t.Errorf("status = %+v, want exited StartError 128 with a message and no start time", st)
	}
	if err := rt.StartContainer(context.Background(), id); err == nil || !strings.Contains(err.Error(), "not created") {
		t.Errorf("second StartContainer = %v", err)
	}
	if log := logs(t, rt, id, cri.LogOptions{Follow: true}); log != "" {
		t.Errorf("a container that never ran has a log: %q", log)
	}
}

func TestPreviousLogs(t *testing.T) {
	rt := newTestRuntime(t)
	sb := runPod(t, rt, "web")
	first := create(t, rt, sb, appContainer("web", "app", "--crash-after=20ms"))
	if err := rt.StartContainer(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	waitExit(t, rt, first)
	// The kubelet restarts it as attempt 1; attempt 0 stays for --previous.
	cfg := appContainer("web", "app")
	cfg.Attempt = 1
	second := startServing(t, rt, sb, cfg)

	previous := logs(t, rt, first, cri.LogOptions{})
	if !strings.Contains(previous, "listening on") || !strings.Contains(previous, "crashing with exit code 1") {
		t.Errorf("previous log:\n%s", previous)
	}
	if current := logs(t, rt, second, cri.LogOptions{}); strings.Contains(current, "crashing") {
		t.Errorf("the current log holds the previous one's lines:\n%s", current)
	}
	tail := logs(t, rt, first, cri.LogOptions{TailLines: ptr[int64](1), Timestamps: true})
	// In UTC the format's "Z07:00" prints as "Z".
	if ts, line, _ := strings.Cut(tail, " "); line != "crashing with exit code 1 (crash-after=20ms)\n" || len(ts) != len(timestampFormat)-5 {
		t.Errorf("last line with its time = %q", tail)
	}
	logPath := filepath.Join(rt.cfg.LogDir, "shop_web_uid-web", "app", "0.log")
	if _, err := os.Stat(logPath); err != nil {
		t.Errorf("no log at upstream's path: %v", err)
	}

	if err := rt.RemoveContainer(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	if err := rt.ContainerLogs(context.Background(), first, cri.LogOptions{}, &strings.Builder{}); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("logs of a removed container = %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(logPath); !os.IsNotExist(err) {
		t.Errorf("removed container's log still there: %v", err)
	}
	if err := rt.RemoveContainer(context.Background(), first); err != nil {
		t.Errorf("removing twice = %v, want nil", err)
	}
}

func TestEvents(t *testing.T) {
	rt := newTestRuntime(t)
	sb := runPod(t, rt, "job")
	cfg := appContainer("job", "main", "--exit-after=10ms")
	id := create(t, rt, sb, cfg)
	if err := rt.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	for _, want := range []cri.EventType{cri.ContainerStarted, cri.ContainerExited} {
		select {
		case ev := <-rt.Events():
			if ev.Type != want || ev.ContainerID != id || ev.SandboxID != sb.ID || ev.Labels["io.kubernetes.container.name"] != "main" {
				t.Errorf("event = %+v, want %s of %s", ev, want, id)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s event", want)
		}
	}
}

func TestCreateContainerRefuses(t *testing.T) {
	rt := newTestRuntime(t)
	sb := runPod(t, rt, "web")
	create(t, rt, sb, appContainer("web", "app"))
	stopped := runPod(t, rt, "gone")
	if err := rt.StopPodSandbox(context.Background(), stopped.ID); err != nil {
		t.Fatal(err)
	}
	nginx := appContainer("web", "nginx")
	nginx.Image = "nginx:1.27"
	tests := []struct {
		name    string
		sandbox string
		cfg     cri.ContainerConfig
		wantIs  error
		wantMsg string
	}{
		{name: "absent image", sandbox: sb.ID, cfg: nginx, wantIs: cri.ErrImageNotFound, wantMsg: "klab runs offline"},
		{name: "unknown sandbox", sandbox: "nope", cfg: appContainer("web", "x"), wantIs: cri.ErrNotFound},
		{name: "stopped sandbox", sandbox: stopped.ID, cfg: appContainer("gone", "x"), wantMsg: "is not ready"},
		{name: "name and attempt taken", sandbox: sb.ID, cfg: appContainer("web", "app"), wantMsg: "failed to reserve container name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rt.CreateContainer(context.Background(), tt.sandbox, tt.cfg)
			if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("CreateContainer = %v, want %v / %q", err, tt.wantIs, tt.wantMsg)
			}
		})
	}
}
