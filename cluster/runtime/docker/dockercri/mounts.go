package dockercri

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/mount"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// Environment variables that tell the runtime where the kubelet's root
// directory is: a volume of the engine's (EnvKubeletVolume) mounted into
// the kubelet's container at EnvKubeletDir.
const (
	EnvKubeletVolume = "KLAB_KUBELET_VOLUME"
	EnvKubeletDir    = "KLAB_KUBELET_DIR"
)

// kubeletVolume remembers where the engine keeps the kubelet's volume.
type kubeletVolume struct {
	once       sync.Once
	mountpoint string
	err        error
}

// bindMounts turns the kubelet's mounts, paths in the kubelet's container
// under Config.KubeletDir, into bind mounts of the same directories as
// the engine sees them: inside the kubelet volume's mount point on the
// engine's machine. The directory is mounted, not its files, so that the
// kubelet's atomic switches of ..data show in the container.
func (r *Runtime) bindMounts(ctx context.Context, mounts []cri.Mount) ([]mount.Mount, error) {
	if len(mounts) == 0 {
		return nil, nil
	}
	if r.cfg.KubeletVolume == "" || r.cfg.KubeletDir == "" {
		return nil, fmt.Errorf("mount volumes: the kubelet's root directory is not on a volume (%s is not set)", EnvKubeletVolume)
	}
	r.kubeletVol.once.Do(func() {
		v, err := r.docker.VolumeInspect(ctx, r.cfg.KubeletVolume)
		if err != nil {
			r.kubeletVol.err = fmt.Errorf("inspect the kubelet's volume %s: %w", r.cfg.KubeletVolume, err)
			return
		}
		r.kubeletVol.mountpoint = v.Mountpoint
	})
	if r.kubeletVol.err != nil {
		return nil, r.kubeletVol.err
	}
	var out []mount.Mount
	for _, m := range mounts {
		rel, err := filepath.Rel(r.cfg.KubeletDir, m.HostPath)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
			return nil, fmt.Errorf("mount %s: %s is outside the kubelet's directory %s", m.ContainerPath, m.HostPath, r.cfg.KubeletDir)
		}
		out = append(out, mount.Mount{
			Type:     mount.TypeBind,
			Source:   path.Join(r.kubeletVol.mountpoint, filepath.ToSlash(rel)),
			Target:   m.ContainerPath,
			ReadOnly: m.ReadOnly,
		})
	}
	return out, nil
}
