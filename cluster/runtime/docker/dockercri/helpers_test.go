package dockercri

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// testTimeout bounds every wait on the engine.
const testTimeout = 30 * time.Second

// nodes numbers the test nodes; each has its own /24 of the test network.
var nodes atomic.Int32

// fixture is one node's runtime on the test network.
type fixture struct {
	t   *testing.T
	cfg Config
	rt  *Runtime
}

// newFixture starts a runtime for a node of its own, and removes the
// node's containers when the test ends. Tests that need Docker skip when
// no engine answers.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	requireEngine(t)
	n := nodes.Add(1)
	cfg := Config{
		Cluster:    engine.cluster,
		Node:       fmt.Sprintf("node%d", n),
		Network:    engine.network,
		PodCIDR:    fmt.Sprintf("10.%d.%d.0/24", engine.subnet, n),
		PauseImage: engine.image,
		AppImage:   engine.appImage,
		Logger:     slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	}
	fx := &fixture{t: t, cfg: cfg, rt: mustNew(t, cfg)}
	t.Cleanup(func() {
		fx.rt.Close()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		removeContainers(ctx, filters.NewArgs(
			filters.Arg("label", labels.ClusterFilter(engine.cluster)),
			filters.Arg("label", labels.Filter(labels.Node, cfg.Node)),
		))
	})
	return fx
}

func mustNew(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	rt, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return rt
}

// testWriter sends the runtime's logs to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (fx *fixture) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	fx.t.Cleanup(cancel)
	return ctx
}

// sandbox starts a sandbox for a pod named name.
func (fx *fixture) sandbox(name string) cri.Sandbox {
	fx.t.Helper()
	sb, err := fx.rt.RunPodSandbox(fx.ctx(), fx.sandboxConfig(name))
	if err != nil {
		fx.t.Fatalf("RunPodSandbox(%s): %v", name, err)
	}
	return sb
}

// sandboxConfig is a pod's; its UID is unique in the cluster, as pod UIDs
// are.
func (fx *fixture) sandboxConfig(name string) cri.SandboxConfig {
	uid := fx.cfg.Node + "-" + name
	return cri.SandboxConfig{
		PodUID: uid, Name: name, Namespace: "default", Hostname: name,
		Labels: map[string]string{
			labels.PodName: name, labels.PodNamespace: "default", labels.PodUID: uid, "app": "web",
		},
	}
}

// containerConfig runs klabtest with args.
func containerConfig(name string, args ...string) cri.ContainerConfig {
	return cri.ContainerConfig{
		Name: name, Image: engine.image, Args: args,
		Labels: map[string]string{labels.ContainerName: name, "io.kubernetes.container.type": "CONTAINER"},
	}
}

// start creates and starts a container in sb.
func (fx *fixture) start(sb cri.Sandbox, cfg cri.ContainerConfig) string {
	fx.t.Helper()
	id, err := fx.rt.CreateContainer(fx.ctx(), sb.ID, cfg)
	if err != nil {
		fx.t.Fatalf("CreateContainer(%s): %v", cfg.Name, err)
	}
	if err := fx.rt.StartContainer(fx.ctx(), id); err != nil {
		fx.t.Fatalf("StartContainer(%s): %v", cfg.Name, err)
	}
	return id
}

// waitExited waits (on the engine, which tells when a container exits)
// until the container has exited, and returns its status.
func (fx *fixture) waitExited(id string) cri.ContainerStatus {
	fx.t.Helper()
	exited, failed := engine.docker.ContainerWait(fx.ctx(), id, container.WaitConditionNotRunning)
	select {
	case <-exited:
	case err := <-failed:
		fx.t.Fatalf("wait for container %s: %v", id, err)
	}
	st, err := fx.rt.ContainerStatus(fx.ctx(), id)
	if err != nil {
		fx.t.Fatalf("ContainerStatus: %v", err)
	}
	return st
}

// waitLog follows a container's log until it has written text (a program
// says so when it is ready for a signal).
func (fx *fixture) waitLog(id, text string) {
	fx.t.Helper()
	ctx, found := context.WithCancel(fx.ctx())
	defer found()
	w := &watchWriter{text: text, found: found}
	fx.rt.ContainerLogs(ctx, id, cri.LogOptions{Follow: true}, w)
	if !w.seen {
		fx.t.Fatalf("container %s exited without writing %q; its log:\n%s", id, text, w.buf.String())
	}
}

// watchWriter calls found once what was written contains text.
type watchWriter struct {
	text  string
	found context.CancelFunc
	buf   bytes.Buffer
	seen  bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if !w.seen && strings.Contains(w.buf.String(), w.text) {
		w.seen = true
		w.found()
	}
	return len(p), nil
}

// logs returns a container's log as opts asks.
func (fx *fixture) logs(id string, opts cri.LogOptions) string {
	fx.t.Helper()
	var buf bytes.Buffer
	if err := fx.rt.ContainerLogs(fx.ctx(), id, opts, &buf); err != nil {
		fx.t.Fatalf("ContainerLogs: %v", err)
	}
	return buf.String()
}

// inspect returns what the engine says of a container.
func (fx *fixture) inspect(id string) container.InspectResponse {
	fx.t.Helper()
	info, err := engine.docker.ContainerInspect(fx.ctx(), id)
	if err != nil {
		fx.t.Fatalf("inspect %s: %v", id, err)
	}
	return info
}
