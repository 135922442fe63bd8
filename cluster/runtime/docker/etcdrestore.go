package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// Restoring an etcd member on Docker is what an operator does on a node
// whose etcd runs in a container: with the member stopped, a one-shot
// container mounts the member's data volume and runs the restore there
// (`klab component etcd-restore`, klab's `etcdutl snapshot restore`), the
// snapshot copied in beside it. The data never leaves the volume, and the
// engine may run in a VM: nothing is bind-mounted from this machine.

// snapshotInTask is where the restore task finds the snapshot.
const snapshotInTask = "/restore/snapshot.db"

// RestoreEtcd restores the stopped etcd member ref's data dir inside its
// volume from the snapshot cfg.Snapshot on this machine
// (etcd.RestoreInPlace in a task container), and returns what the task
// reported.
func (r *Runtime) RestoreEtcd(ctx context.Context, ref runtime.Ref, cfg etcd.RestoreConfig) (*etcd.RestoreResult, error) {
	if ref.Component != runtime.ComponentEtcd {
		return nil, fmt.Errorf("restore etcd member %s: it is not an etcd member", ref)
	}
	c, err := r.componentContainer(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("restore etcd member %s: %w", ref, err)
	}
	if c.State == container.StateRunning || c.State == container.StatePaused || c.State == container.StateRestarting {
		return nil, fmt.Errorf("restore etcd member %s: it is %s; stop it first", ref, c.State)
	}
	snapshot, err := os.Open(cfg.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("restore etcd member %s: %w", ref, err)
	}
	defer snapshot.Close()
	fi, err := snapshot.Stat()
	if err != nil {
		return nil, fmt.Errorf("restore etcd member %s: %w", ref, err)
	}

	task := cfg
	task.Snapshot, task.DataDir = snapshotInTask, etcdDataDir
	spec, err := json.Marshal(task)
	if err != nil {
		return nil, fmt.Errorf("restore etcd member %s: %w", ref, err)
	}
	name := labels.ComponentContainer(r.opts.Cluster, ref.Node, "etcd-restore")
	// One left by a restore that was interrupted goes first.
	if old, err := r.containers(ctx, labels.Role, labels.RoleTask, labels.Node, ref.Node); err == nil {
		for _, o := range old {
			r.removeContainer(ctx, o.ID)
		}
	}
	resp, err := r.cli.ContainerCreate(ctx, &container.Config{
		// The member's own image: the restore is done by the binary
		// that will open the data dir (an attached runtime has no
		// image of its own).
		Image: c.ImageID,
		Cmd:   []string{"etcd-restore", "--spec", string(spec)},
		Labels: map[string]string{
			labels.Cluster: r.opts.Cluster,
			labels.Role:    labels.RoleTask,
			labels.Node:    ref.Node,
		},
	}, &container.HostConfig{
		NetworkMode: "none",
		Mounts:      []mount.Mount{{Type: mount.TypeVolume, Source: labels.EtcdVolume(r.opts.Cluster, ref.Node), Target: dataInContainer}},
	}, nil, nil, name)
	if err != nil {
		return nil, fmt.Errorf("restore etcd member %s: create the restore container: %w", ref, err)
	}
	defer func() {
		if err := r.removeContainer(context.WithoutCancel(ctx), resp.ID); err != nil {
			r.opts.Logger.Warn("remove the etcd restore container", "member", ref, "err", err)
		}
	}()

	// The snapshot goes in as a tar stream, not a buffer: it can be
	// large.
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(path.Dir(snapshotInTask), "/") + "/", Typeflag: tar.TypeDir, Mode: 0o700, ModTime: contextTime})
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(snapshotInTask, "/"), Typeflag: tar.TypeReg, Mode: 0o600, Size: fi.Size(), ModTime: fi.ModTime()})
		}
		if err == nil {
			_, err = io.Copy(tw, snapshot)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	if err := r.cli.CopyToContainer(ctx, resp.ID, "/", pr, container.CopyToContainerOptions{}); err != nil {
		pr.CloseWithError(err)
		return nil, fmt.Errorf("restore etcd member %s: copy the snapshot in: %w", ref, err)
	}

	// Wait is asked for before the start, so that a quick exit is not
	// missed.
	waitC, errC := r.cli.ContainerWait(ctx, resp.ID, container.WaitConditionNextExit)
	if err := r.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return nil, fmt.Errorf("restore etcd member %s: start the restore container: %w", ref, err)
	}
	var code int64
	select {
	case w := <-waitC:
		code = w.StatusCode
	case err := <-errC:
		return nil, fmt.Errorf("restore etcd member %s: wait for the restore container: %w", ref, err)
	}
	stdout, stderr, err := r.output(ctx, resp.ID)
	if err != nil {
		return nil, fmt.Errorf("restore etcd member %s: read the restore's output: %w", ref, err)
	}
	if code != 0 {
		return nil, fmt.Errorf("restore etcd member %s: the restore exited with code %d: %s", ref, code, strings.TrimSpace(stderr))
	}
	var res etcd.RestoreResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		return nil, fmt.Errorf("restore etcd member %s: the restore's report %q: %w", ref, strings.TrimSpace(stdout), err)
	}
	return &res, nil
}

// output returns an exited container's stdout and stderr.
func (r *Runtime) output(ctx context.Context, id string) (string, string, error) {
	rc, err := r.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return "", "", err
	}
	defer rc.Close()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, rc); err != nil {
		return "", "", err
	}
	return stdout.String(), stderr.String(), nil
}
