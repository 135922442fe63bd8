package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/klab-dev/klab/cluster/kubelet/atomicwriter"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// The volume plugins' directory names under a pod's volumes directory, as
// upstream names them (<root>/pods/<uid>/volumes/kubernetes.io~projected/<name>).
const (
	pluginProjected   = "kubernetes.io~projected"
	pluginConfigMap   = "kubernetes.io~configmap"
	pluginSecret      = "kubernetes.io~secret"
	pluginDownwardAPI = "kubernetes.io~downward-api"
	pluginEmptyDir    = "kubernetes.io~empty-dir"
)

// volumeResync is how often a pod's volumes are written again, so that a
// changed ConfigMap or Secret reaches the pod (upstream's kubelet sync
// period).
const volumeResync = time.Minute

// volumePlugin is the plugin that serves v, or "" for a kind of volume
// the kubelet does not mount (the container then runs without it).
func volumePlugin(v *v1.Volume) string {
	switch {
	case v.Projected != nil:
		return pluginProjected
	case v.ConfigMap != nil:
		return pluginConfigMap
	case v.Secret != nil:
		return pluginSecret
	case v.DownwardAPI != nil:
		return pluginDownwardAPI
	case v.EmptyDir != nil:
		return pluginEmptyDir
	}
	return ""
}

// podDir is where the kubelet keeps a pod's files (upstream's
// /var/lib/kubelet/pods/<uid>).
func (k *Kubelet) podDir(uid types.UID) string {
	return filepath.Join(k.cfg.RootDir, "pods", string(uid))
}

func (k *Kubelet) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(k.podDir(uid), "volumes", plugin, name)
}

// mountVolumes writes the pod's volumes into its directory: the
// service-account token, ConfigMaps, Secrets and downward API files,
// each volume atomically; emptyDirs are made. It returns how soon they
// should be written again (a token's refresh, or the resync of ConfigMaps
// and Secrets), or 0 when the pod has nothing that changes. Without a
// root directory the kubelet mounts nothing.
func (k *Kubelet) mountVolumes(ctx context.Context, pod *v1.Pod) (time.Duration, error) {
	if k.cfg.RootDir == "" {
		return 0, nil
	}
	var again time.Duration
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		plugin := volumePlugin(v)
		if plugin == "" {
			continue
		}
		dir := k.volumeDir(pod.UID, plugin, v.Name)
		if plugin == pluginEmptyDir {
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return 0, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
			}
			// Everyone may write an emptyDir, as upstream's 0777.
			if err := os.Chmod(dir, 0o777); err != nil {
				return 0, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
			}
			continue
		}
		payload, err := k.volumePayload(ctx, pod, v)
		if err != nil {
			return 0, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
		}
		if _, err := atomicwriter.New(dir).Write(payload); err != nil {
			return 0, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
		}
		again = k.cfg.Speed.Scale(volumeResync)
	}
	if next := k.tokens.nextRefresh(pod.UID); !next.IsZero() {
		if d := max(time.Second, next.Sub(k.clock.Now())); again == 0 || d < again {
			again = d
		}
	}
	return again, nil
}

// unmountVolumes removes the pod's directory and forgets its tokens.
func (k *Kubelet) unmountVolumes(uid types.UID) error {
	k.tokens.forgetPod(uid)
	if k.cfg.RootDir == "" {
		return nil
	}
	if err := os.RemoveAll(k.podDir(uid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the volumes of pod %s: %w", uid, err)
	}
	return nil
}

// containerMounts are the container's volume mounts, for the runtime.
// ConfigMap, Secret, downward API and projected volumes are always
// read-only, as upstream mounts them.
func (k *Kubelet) containerMounts(pod *v1.Pod, c *v1.Container) []cri.Mount {
	if k.cfg.RootDir == "" {
		return nil
	}
	var mounts []cri.Mount
	for _, vm := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v v1.Volume) bool { return v.Name == vm.Name })
		if i < 0 {
			continue
		}
		plugin := volumePlugin(&pod.Spec.Volumes[i])
		if plugin == "" {
			continue
		}
		host := k.volumeDir(pod.UID, plugin, vm.Name)
		if vm.SubPath != "" {
			host = filepath.Join(host, filepath.FromSlash(path.Clean("/"+vm.SubPath)))
		}
		mounts = append(mounts, cri.Mount{
			ContainerPath: vm.MountPath, HostPath: host,
			ReadOnly: vm.ReadOnly || plugin != pluginEmptyDir,
		})
	}
	return mounts
}

// volumePayload is the files of a projected, configMap, secret or
// downwardAPI volume.
func (k *Kubelet) volumePayload(ctx context.Context, pod *v1.Pod, v *v1.Volume) (map[string]atomicwriter.File, error) {
	payload := map[string]atomicwriter.File{}
	switch {
	case v.ConfigMap != nil:
		src := v.ConfigMap
		if _, err := k.configMapFiles(ctx, pod.Namespace, src.Name, src.Items, src.Optional, src.DefaultMode, payload); err != nil {
			return nil, err
		}
	case v.Secret != nil:
		src := v.Secret
		if _, err := k.secretFiles(ctx, pod.Namespace, src.SecretName, src.Items, src.Optional, src.DefaultMode, payload); err != nil {
			return nil, err
		}
	case v.DownwardAPI != nil:
		if err := k.downwardAPIFiles(pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode, payload); err != nil {
			return nil, err
		}
	case v.Projected != nil:
		if err := k.projectedFiles(ctx, pod, v.Projected, payload); err != nil {
			return nil, err
		}
	}
	return payload, nil
}

// projectedFiles gathers the sources of a projected volume.
func (k *Kubelet) projectedFiles(ctx context.Context, pod *v1.Pod, p *v1.ProjectedVolumeSource, payload map[string]atomicwriter.File) error {
	for _, s := range p.Sources {
		switch {
		case s.ServiceAccountToken != nil:
			src := s.ServiceAccountToken
			tr, err := k.tokens.token(ctx, pod.Namespace, serviceAccountName(pod), podTokenRequest(pod, src))
			if err != nil {
				return fmt.Errorf("failed to fetch token: %w", err)
			}
			payload[src.Path] = atomicwriter.File{Data: []byte(tr.Status.Token), Mode: fileMode(nil, p.DefaultMode)}
		case s.ConfigMap != nil:
			src := s.ConfigMap
			if _, err := k.configMapFiles(ctx, pod.Namespace, src.Name, src.Items, src.Optional, p.DefaultMode, payload); err != nil {
				return fmt.Errorf("couldn't get configMap %s/%s: %w", pod.Namespace, src.Name, err)
			}
		case s.Secret != nil:
			src := s.Secret
			if _, err := k.secretFiles(ctx, pod.Namespace, src.Name, src.Items, src.Optional, p.DefaultMode, payload); err != nil {
				return fmt.Errorf("couldn't get secret %s/%s: %w", pod.Namespace, src.Name, err)
			}
		case s.DownwardAPI != nil:
			if err := k.downwardAPIFiles(pod, s.DownwardAPI.Items, p.DefaultMode, payload); err != nil {
				return err
			}
		default:
			return errors.New("projected volume source not supported by klab's kubelet")
		}
	}
	return nil
}

func serviceAccountName(pod *v1.Pod) string {
	if pod.Spec.ServiceAccountName != "" {
		return pod.Spec.ServiceAccountName
	}
	return "default"
}

// fileMode is an item's mode, else the volume's default, else 0644.
func fileMode(item, def *int32) fs.FileMode {
	switch {
	case item != nil:
		return fs.FileMode(*item)
	case def != nil:
		return fs.FileMode(*def)
	}
	return atomicwriter.DefaultMode
}

// keyFiles adds data's keys to payload: the items' keys at their paths,
// or every key at its own name. A missing key is an error unless
// optional.
func keyFiles(kind string, data map[string][]byte, items []v1.KeyToPath, optional bool, def *int32, payload map[string]atomicwriter.File) error {
	if len(items) == 0 {
		for key, value := range data {
			payload[key] = atomicwriter.File{Data: value, Mode: fileMode(nil, def)}
		}
		return nil
	}
	for _, it := range items {
		value, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("%s references non-existent config key: %s", kind, it.Key)
		}
		payload[it.Path] = atomicwriter.File{Data: value, Mode: fileMode(it.Mode, def)}
	}
	return nil
}

// configMapFiles adds a ConfigMap's keys; found is false for a missing
// optional ConfigMap.
func (k *Kubelet) configMapFiles(ctx context.Context, ns, name string, items []v1.KeyToPath, optional *bool, def *int32, payload map[string]atomicwriter.File) (found bool, err error) {
	opt := optional != nil && *optional
	cm, err := k.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && opt {
			return false, nil
		}
		return false, notFoundAs(err, "configmap", name)
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for key, value := range cm.Data {
		data[key] = []byte(value)
	}
	for key, value := range cm.BinaryData {
		data[key] = value
	}
	return true, keyFiles("configmap", data, items, opt, def, payload)
}

// secretFiles adds a Secret's keys; found is false for a missing
// optional Secret.
func (k *Kubelet) secretFiles(ctx context.Context, ns, name string, items []v1.KeyToPath, optional *bool, def *int32, payload map[string]atomicwriter.File) (found bool, err error) {
	opt := optional != nil && *optional
	s, err := k.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && opt {
			return false, nil
		}
		return false, notFoundAs(err, "secret", name)
	}
	return true, keyFiles("secret", s.Data, items, opt, def, payload)
}

// downwardAPIFiles adds the downward API's files: pod fields (a volume
// may name metadata only, as upstream's validation allows) and container
// resources.
func (k *Kubelet) downwardAPIFiles(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, def *int32, payload map[string]atomicwriter.File) error {
	for _, it := range items {
		var value string
		switch {
		case it.FieldRef != nil:
			v, err := k.podFieldValue(pod, it.FieldRef.FieldPath, pod.Status.PodIP)
			if err != nil {
				return err
			}
			value = v
		case it.ResourceFieldRef != nil:
			ref := it.ResourceFieldRef
			i := slices.IndexFunc(pod.Spec.Containers, func(c v1.Container) bool { return c.Name == ref.ContainerName })
			if i < 0 {
				return fmt.Errorf("container %q not found in pod %s", ref.ContainerName, formatPod(pod))
			}
			v, err := k.resourceFieldValue(&pod.Spec.Containers[i], ref)
			if err != nil {
				return err
			}
			value = v
		default:
			continue
		}
		payload[it.Path] = atomicwriter.File{Data: []byte(value), Mode: fileMode(it.Mode, def)}
	}
	return nil
}
