package inprocess

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// mountInRoot makes each mount visible in a pod's filesystem. The
// in-process runtime has no mount namespace: a mount is a symbolic link
// at the container path to the kubelet's directory, which the shell's
// filesystem view follows as a bind mount would be followed. The
// directory itself is linked (not its files), so that the kubelet's
// atomic switches of ..data show through at once, as through upstream's
// bind mount. The pod's containers share one filesystem, so a mount one
// container has is seen by its siblings too; ReadOnly is not enforced.
func mountInRoot(root string, mounts []cri.Mount) error {
	for _, m := range mounts {
		if m.HostPath == "" || !path.IsAbs(m.ContainerPath) {
			return fmt.Errorf("mount %q: the container path must be absolute and the host path set", m.ContainerPath)
		}
		clean := path.Clean(m.ContainerPath)
		if clean == "/" {
			return errors.New("mount over the container's root is not supported")
		}
		at := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(clean, "/")))
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			return fmt.Errorf("mount %s: %w", clean, err)
		}
		info, err := os.Lstat(at)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("mount %s: %w", clean, err)
		case info.Mode()&fs.ModeSymlink != 0:
			if target, _ := os.Readlink(at); target == m.HostPath {
				continue // the container's earlier attempt made it
			}
			if err := os.Remove(at); err != nil {
				return fmt.Errorf("mount %s: %w", clean, err)
			}
		default:
			// An empty directory of the image's (such as /tmp) is
			// covered; one with files would hide them, which a link
			// cannot do.
			if err := os.Remove(at); err != nil {
				return fmt.Errorf("mount %s: the pod's filesystem already has files there", clean)
			}
		}
		if err := os.Symlink(m.HostPath, at); err != nil {
			return fmt.Errorf("mount %s: %w", clean, err)
		}
	}
	return nil
}
