package dockercri

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// TestRestart: pods outlive their runtime, and a new one finds them.
func TestRestart(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sb := fx.sandbox("web")
	id := fx.start(sb, containerConfig("main", "pause"))

	if err := fx.rt.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Events sent before Close stay readable; then it is closed.
	for open := true; open; {
		select {
		case _, open = <-fx.rt.Events():
		case <-time.After(testTimeout):
			t.Fatal("Events is open after Close")
		}
	}
	if _, err := fx.rt.ListContainers(fx.ctx()); err == nil {
		t.Error("ListContainers after Close succeeded")
	}
	if info := fx.inspect(id); !info.State.Running {
		t.Fatalf("Close stopped the pod's container (%s)", info.State.Status)
	}

	fx.rt = mustNew(t, fx.cfg)
	sandboxes, err := fx.rt.ListPodSandboxes(fx.ctx())
	if err != nil {
		t.Fatalf("ListPodSandboxes: %v", err)
	}
	if len(sandboxes) != 1 || sandboxes[0].ID != sb.ID || !sandboxes[0].Ready || sandboxes[0].IP != sb.IP ||
		sandboxes[0].Config.Labels[labels.PodUID] != fx.cfg.Node+"-web" {
		t.Errorf("ListPodSandboxes after a restart = %+v, want the ready sandbox %s", sandboxes, sb.ID)
	}
	containers, err := fx.rt.ListContainers(fx.ctx())
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	if len(containers) != 1 || containers[0].ID != id || containers[0].State != cri.StateRunning || containers[0].Name != "main" {
		t.Errorf("ListContainers after a restart = %+v, want the running container %s", containers, id)
	}
	// The new runtime gives the next pod the next address.
	if next := fx.sandbox("db"); next.IP == sb.IP {
		t.Errorf("a new pod got the address of a running one, %s", sb.IP)
	}
}

func TestImages(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	img, err := fx.rt.ImageStatus(fx.ctx(), engine.image)
	if err != nil || !strings.HasPrefix(img.ID, "sha256:") || img.Size <= 0 {
		t.Fatalf("ImageStatus(test image) = %+v, %v", img, err)
	}
	list, err := fx.rt.ListImages(fx.ctx())
	if err != nil {
		t.Fatalf("ListImages: %v", err)
	}
	found := false
	for _, i := range list {
		if i.ID == img.ID {
			found = true
			for _, want := range []string{engine.image, engine.appImage + ":latest"} {
				if !strings.Contains(strings.Join(i.Names, " "), want) {
					t.Errorf("ListImages names the test image %v, want %s among them", i.Names, want)
				}
			}
		}
	}
	if !found {
		t.Errorf("ListImages = %+v, want the test image among them", list)
	}

	// A missing image is pulled through the engine; with no registry to
	// reach (these tests run offline, or the repository does not exist)
	// the error gives the engine's words and what to do.
	missing := engine.cluster + "/missing:1"
	if _, err := fx.rt.ImageStatus(fx.ctx(), missing); !errors.Is(err, cri.ErrImageNotFound) {
		t.Errorf("ImageStatus(missing) = %v, want ErrImageNotFound", err)
	}
	_, err = fx.rt.PullImage(fx.ctx(), missing)
	if err == nil {
		t.Fatal("PullImage(missing) succeeded")
	}
	for _, want := range []string{missing, "Error response from daemon", "klab could not download the image", "docker load", engine.appImage + ":<tag>"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("PullImage(missing) error %q does not say %q", err, want)
		}
	}

	// The workload image answers to every tag.
	v2 := engine.appImage + ":v2"
	pulled, err := fx.rt.PullImage(fx.ctx(), v2)
	if err != nil || pulled.ID != img.ID {
		t.Fatalf("PullImage(%s) = %+v, %v; want the latest image tagged anew", v2, pulled, err)
	}
	if st, err := fx.rt.ImageStatus(fx.ctx(), "docker.io/"+v2); err != nil || st.ID != img.ID {
		t.Errorf("ImageStatus(%s) after the pull = %+v, %v", v2, st, err)
	}
	// klab's own images are never pulled: they are built here.
	if got, err := fx.rt.PullImage(fx.ctx(), engine.appImage); err != nil || got.ID != img.ID {
		t.Errorf("PullImage of the workload image = %+v, %v; want it at once", got, err)
	}
	digest := engine.appImage + "@sha256:" + strings.Repeat("0", 64)
	if _, err := fx.rt.PullImage(fx.ctx(), digest); !errors.Is(err, cri.ErrImageNotFound) {
		t.Errorf("PullImage by a digest = %v, want ErrImageNotFound", err)
	}
}
