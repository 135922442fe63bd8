package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// killedExitCode is a process's exit status after SIGKILL (128 + 9).
const killedExitCode = 137

// List reports every component of the cluster in creation order.
func (r *Runtime) List(ctx context.Context) ([]runtime.ComponentInfo, error) {
	list, err := r.containers(ctx, labels.Role, labels.RoleComponent)
	if err != nil {
		return nil, err
	}
	type entry struct {
		info    runtime.ComponentInfo
		created time.Time
		name    string
	}
	entries := make([]entry, 0, len(list))
	for _, c := range list {
		// The listing has the state but neither the exit code nor the
		// creation time below the second, which a cluster's components
		// share: inspect says both.
		inspect, err := r.cli.ContainerInspect(ctx, c.ID)
		if notFound(err) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", containerName(c), err)
		}
		info := runtime.ComponentInfo{Ref: runtime.Ref{Node: c.Labels[labels.Node], Component: c.Labels[labels.Component]}}
		if inspect.State != nil {
			info.State, info.Error = stateOf(inspect.State)
			if t, err := time.Parse(time.RFC3339Nano, inspect.State.StartedAt); err == nil && t.Year() > 1 {
				info.StartedAt = t
			}
			if info.State == runtime.StateExited && info.Error == "" {
				info.Error = r.exitReason(ctx, c.ID, inspect.State.ExitCode)
			}
		}
		created, _ := time.Parse(time.RFC3339Nano, inspect.Created)
		entries = append(entries, entry{info: info, created: created, name: containerName(c)})
	}
	sort.Slice(entries, func(i, j int) bool {
		if !entries[i].created.Equal(entries[j].created) {
			return entries[i].created.Before(entries[j].created)
		}
		return entries[i].name < entries[j].name
	})
	infos := make([]runtime.ComponentInfo, len(entries))
	for i, e := range entries {
		infos[i] = e.info
	}
	return infos, nil
}

// stateOf maps a container's state to a component's, with the error of one
// that exited by itself when Docker knows it.
func stateOf(st *container.State) (runtime.State, string) {
	switch st.Status {
	case container.StateCreated:
		return runtime.StateCreated, ""
	case container.StatePaused:
		return runtime.StatePaused, ""
	case container.StateRunning, container.StateRestarting:
		if st.Paused {
			return runtime.StatePaused, ""
		}
		return runtime.StateRunning, ""
	case container.StateRemoving:
		return runtime.StateStopped, ""
	}
	// Exited or dead: how it ended tells a kill from a stop from a crash.
	// A component exits 0 on SIGTERM; 137 is SIGKILL's (Kill, or a stop
	// that took longer than its grace period).
	switch {
	case st.OOMKilled:
		return runtime.StateExited, "killed by the kernel: out of memory"
	case st.ExitCode == killedExitCode:
		return runtime.StateKilled, ""
	case st.ExitCode == 0 && st.Error == "":
		return runtime.StateStopped, ""
	case st.Error != "":
		return runtime.StateExited, st.Error
	}
	return runtime.StateExited, ""
}

// exitReason describes how a container that exited by itself ended: its
// exit code and the last line it logged, which is usually why.
func (r *Runtime) exitReason(ctx context.Context, id string, code int) string {
	msg := fmt.Sprintf("exited with code %d", code)
	if tail, err := r.logTail(ctx, id, 1); err == nil && strings.TrimSpace(tail) != "" {
		msg += ": " + strings.TrimSpace(tail)
	}
	return msg
}

// Logs returns a component's log: its container's stdout and stderr, in
// the order they were written.
func (r *Runtime) Logs(ctx context.Context, ref runtime.Ref) (io.ReadCloser, error) {
	c, err := r.componentContainer(ctx, ref)
	if err != nil {
		return nil, err
	}
	raw, err := r.cli.ContainerLogs(ctx, c.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", ref, err)
	}
	// Docker multiplexes a container's two streams into one, each chunk
	// with a header saying which; stdcopy takes them apart.
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, raw)
		pw.CloseWithError(err)
	}()
	return &logReader{PipeReader: pr, raw: raw}, nil
}

// logReader is a demultiplexed log; closing it ends the request to the
// engine too.
type logReader struct {
	*io.PipeReader
	raw io.Closer
}

func (l *logReader) Close() error {
	err := l.raw.Close()
	l.PipeReader.Close()
	return err
}

// Stats returns how much memory the cluster's running containers use
// together, counted as docker stats counts it: usage less the page cache
// the kernel can drop.
func (r *Runtime) Stats(ctx context.Context) (int64, error) {
	list, err := r.containers(ctx)
	if err != nil {
		return 0, err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int64
		errs  []error
	)
	for _, c := range list {
		if c.State != container.StateRunning {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			used, err := r.memoryOf(ctx, c.ID)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !notFound(err) {
				errs = append(errs, fmt.Errorf("stats of %s: %w", containerName(c), err))
				return
			}
			total += used
		}()
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

// memoryOf returns one container's memory use, asking for one sample
// rather than the two a CPU figure needs.
func (r *Runtime) memoryOf(ctx context.Context, id string) (int64, error) {
	resp, err := r.cli.ContainerStatsOneShot(ctx, id)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return 0, fmt.Errorf("decode: %w", err)
	}
	return memoryUsed(s.MemoryStats), nil
}

// memoryUsed is usage less inactive file pages, the cache the kernel can
// drop, as docker stats shows it; the name of that figure depends on the
// cgroup version.
func memoryUsed(m container.MemoryStats) int64 {
	cache := uint64(0)
	for _, key := range []string{"total_inactive_file", "inactive_file"} {
		if v, ok := m.Stats[key]; ok {
			cache = v
			break
		}
	}
	if cache > m.Usage {
		return 0
	}
	return int64(m.Usage - cache)
}

// Remove deletes every container, volume and network of the cluster.
func (r *Runtime) Remove(ctx context.Context) error {
	err := removeCluster(ctx, r.cli, r.opts.Cluster, r.opts.Logger)
	r.forgetNetwork()
	return err
}
