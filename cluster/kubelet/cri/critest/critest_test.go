package critest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/labels"
)

func startOne(t *testing.T, r *Runtime, image string) string {
	t.Helper()
	ctx := context.Background()
	sb, err := r.RunPodSandbox(ctx, cri.SandboxConfig{PodUID: "u1", Name: "p", Namespace: "ns", Labels: map[string]string{labels.PodUID: "u1"}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.CreateContainer(ctx, sb.ID, cri.ContainerConfig{Name: "app", Image: image, Labels: map[string]string{labels.PodUID: "u1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestContainerLifecycle(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		behave   Behavior
		act      func(r *Runtime, id string) error
		exitCode int
		reason   string
	}{
		{"exit with a code", Behavior{}, func(r *Runtime, id string) error { return r.Exit(id, 3) }, 3, cri.ReasonError},
		{"exit cleanly", Behavior{}, func(r *Runtime, id string) error { return r.Exit(id, 0) }, 0, cri.ReasonCompleted},
		{"OOM kill", Behavior{}, func(r *Runtime, id string) error { return r.OOMKill(id) }, 137, cri.ReasonOOMKilled},
		{"SIGTERM honoured", Behavior{TermExitCode: 143}, func(r *Runtime, id string) error { return r.StopContainer(ctx, id, time.Hour) }, 143, cri.ReasonError},
		{"SIGTERM ignored", Behavior{IgnoreTerm: true}, func(r *Runtime, id string) error { return r.StopContainer(ctx, id, 10*time.Millisecond) }, 137, cri.ReasonError},
		{"exits by itself", Behavior{ExitAfter: time.Millisecond, ExitCode: 1}, func(r *Runtime, id string) error {
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if st, _ := r.ContainerStatus(ctx, id); st.State == cri.StateExited {
					return nil
				}
			}
			return errors.New("did not exit")
		}, 1, cri.ReasonError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(Options{Images: []string{"app:v1"}, Behave: func(cri.ContainerConfig) Behavior { return tt.behave }})
			id := startOne(t, r, "app:v1")
			if ev := <-r.Events(); ev.Type != cri.ContainerStarted || ev.ContainerID != id || ev.Labels[labels.PodUID] != "u1" {
				t.Errorf("start event = %+v", ev)
			}
			if err := tt.act(r, id); err != nil {
				t.Fatal(err)
			}
			st, err := r.ContainerStatus(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if st.State != cri.StateExited || st.ExitCode != tt.exitCode || st.Reason != tt.reason || st.FinishedAt.IsZero() {
				t.Errorf("status = %+v", st)
			}
			if ev := <-r.Events(); ev.Type != cri.ContainerExited || ev.ContainerID != id {
				t.Errorf("exit event = %+v", ev)
			}
		})
	}
}

func TestPullsAreOffline(t *testing.T) {
	r := New(Options{Images: []string{"here:v1"}, Pullable: []string{"mirror:v1"}})
	ctx := context.Background()
	if _, err := r.PullImage(ctx, "here:v1"); err != nil {
		t.Errorf("pull of a present image: %v", err)
	}
	if _, err := r.PullImage(ctx, "mirror:v1"); err != nil {
		t.Errorf("pull of a pullable image: %v", err)
	}
	if _, err := r.ImageStatus(ctx, "mirror:v1"); err != nil {
		t.Errorf("pulled image not present: %v", err)
	}
	_, err := r.PullImage(ctx, "nginx:1.27")
	if !errors.Is(err, cri.ErrImageNotFound) || !strings.Contains(err.Error(), "klab runs offline") {
		t.Errorf("offline pull error = %v", err)
	}
	r.SetPullable("nginx:1.27", false, errors.New("registry says no"))
	if _, err := r.PullImage(ctx, "nginx:1.27"); err == nil || err.Error() != "registry says no" {
		t.Errorf("set pull error = %v", err)
	}
}

func TestSandboxRemovalTakesContainers(t *testing.T) {
	r := New(Options{Images: []string{"app:v1"}})
	ctx := context.Background()
	id := startOne(t, r, "app:v1")
	st, _ := r.ContainerStatus(ctx, id)
	if err := r.RemoveContainer(ctx, id); err == nil {
		t.Error("removed a running container")
	}
	if err := r.StopPodSandbox(ctx, st.SandboxID); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.ContainerStatus(ctx, id); st.State != cri.StateExited {
		t.Errorf("container in a stopped sandbox: %+v", st)
	}
	if err := r.RemovePodSandbox(ctx, st.SandboxID); err != nil {
		t.Fatal(err)
	}
	if list, _ := r.ListContainers(ctx); len(list) != 0 {
		t.Errorf("containers left: %+v", list)
	}
	if _, err := r.ContainerStatus(ctx, id); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("status of a removed container: %v", err)
	}
}
