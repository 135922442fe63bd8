package inprocess

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/klab-dev/klab/cluster/kubelet/atomicwriter"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// A mount shows the kubelet's directory at the container path, follows
// the writer's switches of ..data, survives a second attempt, and covers
// an empty directory of the image's but not one with files.
func TestMountInRoot(t *testing.T) {
	root, vol := t.TempDir(), t.TempDir()
	w := atomicwriter.New(vol)
	if _, err := w.Write(map[string]atomicwriter.File{"namespace": {Data: []byte("default")}}); err != nil {
		t.Fatal(err)
	}
	mounts := []cri.Mount{{ContainerPath: "/var/run/secrets/kubernetes.io/serviceaccount", HostPath: vol, ReadOnly: true}}
	for attempt := range 2 {
		if err := mountInRoot(root, mounts); err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
	}
	file := filepath.Join(root, "var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if b, err := os.ReadFile(file); err != nil || string(b) != "default" {
		t.Fatalf("namespace = %q (%v)", b, err)
	}
	if _, err := w.Write(map[string]atomicwriter.File{"namespace": {Data: []byte("other")}}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "other" {
		t.Errorf("after a rewrite namespace = %q (%v), want other", b, err)
	}

	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	if err := mountInRoot(root, []cri.Mount{{ContainerPath: "/tmp", HostPath: vol}}); err != nil {
		t.Errorf("mount over an empty /tmp: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "data", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := mountInRoot(root, []cri.Mount{{ContainerPath: "/data", HostPath: vol}}); err == nil {
		t.Error("mount over a directory with files succeeded")
	}
	if err := mountInRoot(root, []cri.Mount{{ContainerPath: "relative", HostPath: vol}}); err == nil {
		t.Error("mount at a relative path succeeded")
	}
}
