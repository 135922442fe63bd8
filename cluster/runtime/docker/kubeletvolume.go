package docker

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/klab-dev/klab/cluster/runtime/docker/dockercri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// The kubelet's root directory (upstream's /var/lib/kubelet) is a volume
// of the engine's, mounted into the kubelet's container: the kubelet
// writes its pods' volumes there (the service-account token, ConfigMaps,
// Secrets), and the pods' containers get bind mounts of their parts of it
// from the engine's side (dockercri), so that a token the kubelet
// refreshes shows in the pod at once.
const (
	kubeletDirInContainer = "/var/lib/kubelet"
	EnvKubeletVolume      = dockercri.EnvKubeletVolume
	EnvKubeletDir         = dockercri.EnvKubeletDir
)

// kubeletVolume creates (or finds) the node's kubelet volume and returns
// its mount for the kubelet's container.
func (r *Runtime) kubeletVolume(ctx context.Context, node string) (mount.Mount, error) {
	name := labels.NodeContainer(r.opts.Cluster, node) + "-kubelet"
	if _, err := r.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: map[string]string{
		labels.Cluster: r.opts.Cluster, labels.Role: labels.RoleVolume, labels.Node: node,
	}}); err != nil {
		return mount.Mount{}, fmt.Errorf("create volume %s: %w", name, err)
	}
	return mount.Mount{Type: mount.TypeVolume, Source: name, Target: kubeletDirInContainer}, nil
}
