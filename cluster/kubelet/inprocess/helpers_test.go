package inprocess

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// newTestRuntime returns a runtime on a pod CIDR of its own,
// 127.250.N.0/24 for a random N, closed when the test ends.
func newTestRuntime(t *testing.T, opts ...func(*Config)) *Runtime {
	t.Helper()
	if goruntime.GOOS != "linux" {
		t.Skip("needs Linux, which routes all of 127.0.0.0/8 to loopback")
	}
	cfg := Config{
		NodeName: "worker-1",
		PodCIDR:  fmt.Sprintf("127.250.%d.0/24", rand.IntN(256)),
		LogDir:   t.TempDir(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	rt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// runPod creates a sandbox for a pod named name.
func runPod(t *testing.T, rt *Runtime, name string) cri.Sandbox {
	t.Helper()
	sb, err := rt.RunPodSandbox(context.Background(), cri.SandboxConfig{
		PodUID: "uid-" + name, Name: name, Namespace: "shop", Hostname: name,
		Labels: map[string]string{"io.kubernetes.pod.name": name},
	})
	if err != nil {
		t.Fatalf("RunPodSandbox(%s): %v", name, err)
	}
	return sb
}

// appContainer is a container config running klab/app:v2 with args, as
// the kubelet would create it, Downward API variables included.
func appContainer(pod, name string, args ...string) cri.ContainerConfig {
	return cri.ContainerConfig{
		Name:  name,
		Image: "klab/app:v2",
		Args:  args,
		Env: []cri.KeyValue{
			{Key: "POD_NAME", Value: pod}, {Key: "POD_NAMESPACE", Value: "shop"}, {Key: "NODE_NAME", Value: "worker-1"},
		},
		Labels: map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.container.name": name},
	}
}

// create creates a container and fails the test if it cannot.
func create(t *testing.T, rt *Runtime, sb cri.Sandbox, cfg cri.ContainerConfig) string {
	t.Helper()
	id, err := rt.CreateContainer(context.Background(), sb.ID, cfg)
	if err != nil {
		t.Fatalf("CreateContainer(%s): %v", cfg.Name, err)
	}
	return id
}

// startServing creates and starts a container and waits until it serves.
func startServing(t *testing.T, rt *Runtime, sb cri.Sandbox, cfg cri.ContainerConfig) string {
	t.Helper()
	id := create(t, rt, sb, cfg)
	if err := rt.StartContainer(context.Background(), id); err != nil {
		t.Fatalf("StartContainer(%s): %v", cfg.Name, err)
	}
	waitLog(t, rt, id, "listening on")
	return id
}

// lineWatcher is a writer that reports when a string appears in what was
// written to it.
type lineWatcher struct {
	want  string
	seen  strings.Builder
	found chan struct{}
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.seen.Write(p)
	if w.found != nil && strings.Contains(w.seen.String(), w.want) {
		close(w.found)
		w.found = nil
	}
	return len(p), nil
}

// waitLog follows a container's log until it contains want.
func waitLog(t *testing.T, rt *Runtime, id, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	found := make(chan struct{})
	w := &lineWatcher{want: want, found: found}
	done := make(chan error, 1)
	go func() { done <- rt.ContainerLogs(ctx, id, cri.LogOptions{Follow: true}, w) }()
	select {
	case <-found:
		cancel()
		<-done
	case err := <-done:
		t.Fatalf("log of %s ended (%v) without %q:\n%s", id, err, want, w.seen.String())
	}
}

// waitExit waits for a container to exit (its log ends when it does) and
// returns its status.
func waitExit(t *testing.T, rt *Runtime, id string) cri.ContainerStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rt.ContainerLogs(ctx, id, cri.LogOptions{Follow: true}, io.Discard); err != nil {
		t.Fatalf("follow %s: %v", id, err)
	}
	st, err := rt.ContainerStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != cri.StateExited {
		t.Fatalf("container %s is %s after its log ended (ctx %v)", id, st.State, ctx.Err())
	}
	return st
}

// logs returns a container's whole log.
func logs(t *testing.T, rt *Runtime, id string, opts cri.LogOptions) string {
	t.Helper()
	var b strings.Builder
	if err := rt.ContainerLogs(context.Background(), id, opts, &b); err != nil {
		t.Fatalf("ContainerLogs(%s): %v", id, err)
	}
	return b.String()
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// get fetches a URL, returning the status code and body, or -1 and the
// error's text.
func get(url string) (int, string) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
