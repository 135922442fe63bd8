package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Restoring an etcd member on Docker is what an operator does on a node
// whose etcd runs in a container: with the member stopped, the snapshot is
// put where the member's data is, on its volume, and `etcdutl snapshot
// restore` is run there before the member starts again. Here the member's
// own container runs the restore at its next start (etcd.RestorePending,
// before it opens the data dir), with the binary that will open it: the
// snapshot and the request are copied into the stopped container, or the
// container of a member stood down (StandDown), onto its volume. The data never leaves the volume, and the engine may run in a
// VM: nothing is bind-mounted from this machine. (A one-shot container per
// member did the same at the cost of its creation, start and removal:
// seconds on a busy engine.)

// In the member's volume: the snapshot and the request that asks for the
// restore (the request last, so that it never names a snapshot that is
// not whole).
const (
	snapshotInVolume = etcdDataDir + ".restore.db"
	requestInVolume  = etcdDataDir + etcd.PendingRestoreSuffix
)

// RestoreEtcd has the stopped (or stood down) etcd member ref restore its
// data dir inside its volume from the snapshot cfg.Snapshot on this machine
// when it next starts or stands up (etcd.RestorePending). It returns the member's and the new
// cluster's IDs, which the restore's token and members determine; the
// snapshot's revision is known once the member has restored.
func (r *Runtime) RestoreEtcd(ctx context.Context, ref runtime.Ref, cfg etcd.RestoreConfig) (*etcd.RestoreResult, error) {
	if ref.Component != runtime.ComponentEtcd {
		return nil, fmt.Errorf("restore etcd member %s: it is not an etcd member", ref)
	}
	var self *etcd.Peer
	for i := range cfg.InitialCluster {
		if cfg.InitialCluster[i].Name == cfg.Name {
			self = &cfg.InitialCluster[i]
		}
	}
	if self == nil {
		return nil, fmt.Errorf("restore etcd member %s: %s is not in the initial cluster", ref, cfg.Name)
	}
	c, err := r.componentContainer(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("restore etcd member %s: %w", ref, err)
	}
	// A member stood down (StandDown) is stopped in a running container:
	// its next stand-up restores, as a start does.
	if (c.State == container.StateRunning && !r.isStoodDown(ref)) || c.State == container.StatePaused || c.State == container.StateRestarting {
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
	task.Snapshot, task.DataDir = snapshotInVolume, etcdDataDir
	request, err := json.Marshal(task)
	if err != nil {
		return nil, fmt.Errorf("restore etcd member %s: %w", ref, err)
	}
	// The snapshot goes in as a tar stream, not a buffer: it can be
	// large.
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(snapshotInVolume, "/"), Typeflag: tar.TypeReg, Mode: 0o600, Size: fi.Size(), ModTime: fi.ModTime()})
		if err == nil {
			_, err = io.Copy(tw, snapshot)
		}
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(requestInVolume, "/"), Typeflag: tar.TypeReg, Mode: 0o600, Size: int64(len(request)), ModTime: fi.ModTime()})
		}
		if err == nil {
			_, err = tw.Write(request)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	if err := r.cli.CopyToContainer(ctx, c.ID, "/", pr, container.CopyToContainerOptions{}); err != nil {
		pr.CloseWithError(err)
		return nil, fmt.Errorf("restore etcd member %s: copy the snapshot onto its volume: %w", ref, err)
	}
	return &etcd.RestoreResult{
		MemberID:  etcd.MemberID(self.PeerURL, cfg.ClusterToken),
		ClusterID: etcd.ClusterID(cfg.InitialCluster, cfg.ClusterToken),
		Index:     uint64(len(cfg.InitialCluster)),
	}, nil
}
