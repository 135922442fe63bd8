package dockercri

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/image"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// testRegistry serves an in-memory registry on 127.0.0.1 (which the
// engine trusts without TLS) holding the test image as <repo>:v1, and
// returns its host:port.
func testRegistry(t *testing.T, repo string) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	// The test image, as the engine saves it, pushed to the registry.
	ctx := context.Background()
	saved, err := engine.docker.ImageSave(ctx, []string{engine.image})
	if err != nil {
		t.Fatalf("save the test image: %v", err)
	}
	var buf bytes.Buffer
	_, err = io.Copy(&buf, saved)
	saved.Close()
	if err != nil {
		t.Fatalf("save the test image: %v", err)
	}
	tag, err := name.NewTag(engine.image)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.Image(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil }, &tag)
	if err != nil {
		t.Fatalf("read the saved image: %v", err)
	}
	dst, err := name.NewTag(host+"/"+repo+":v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(dst, img); err != nil {
		t.Fatalf("push to the test registry: %v", err)
	}
	return host
}

// TestPullImage pulls an image from a registry on 127.0.0.1 through the
// engine and runs it; a missing image fails with the engine's message and
// what to do offline.
func TestPullImage(t *testing.T) {
	fx := newFixture(t)
	host := testRegistry(t, engine.cluster+"/pulled")
	ref := host + "/" + engine.cluster + "/pulled:v1"
	t.Cleanup(func() {
		engine.docker.ImageRemove(context.Background(), ref, image.RemoveOptions{})
	})

	if _, err := fx.rt.ImageStatus(fx.ctx(), ref); err == nil {
		t.Fatalf("%s is on the engine before the pull", ref)
	}
	img, err := fx.rt.PullImage(fx.ctx(), ref)
	if err != nil {
		t.Fatalf("PullImage(%s): %v", ref, err)
	}
	if img.ID == "" || img.Size == 0 || !strings.Contains(strings.Join(img.Names, " "), ref) {
		t.Errorf("pulled image = %+v", img)
	}
	sb := fx.sandbox("pulled")
	cfg := containerConfig("main", "echo", "from the registry")
	cfg.Image = ref
	id := fx.start(sb, cfg)
	fx.waitLog(id, "from the registry")
	if st := fx.waitExited(id); st.ExitCode != 0 || st.Image != ref {
		t.Errorf("status = exit %d image %q, want 0 %q", st.ExitCode, st.Image, ref)
	}

	missing := host + "/" + engine.cluster + "/nosuch:v1"
	_, err = fx.rt.PullImage(fx.ctx(), missing)
	if err == nil {
		t.Fatalf("PullImage(%s) succeeded", missing)
	}
	for _, want := range []string{`pull image "` + missing + `": `, "Error response from daemon", "not found", "klab could not download the image", "nginx"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestStandInContainers: klab's stand-ins run from the workload image,
// keeping the image the pod asked for: nginx answers on port 80 with the
// welcome page, busybox runs the pod's sh -c script.
func TestStandInContainers(t *testing.T) {
	fx := newFixture(t)
	fx.cfg.AppEntrypoint = []string{"/klabtest", "app"}
	fx.rt.Close()
	fx.rt = mustNew(t, fx.cfg)

	sb := fx.sandbox("nginx")
	web := containerConfig("web")
	web.Image, web.StandIn, web.Args = "nginx:1.27", "nginx", nil
	id := fx.start(sb, web)
	fx.waitLog(id, "listening on")
	var out, errOut bytes.Buffer
	code, err := fx.rt.ExecInContainer(fx.ctx(), id, []string{"wget", "-q", "-O", "-", "http://127.0.0.1:80/"}, cri.Streams{Stdout: &out, Stderr: &errOut})
	if err != nil || code != 0 {
		t.Fatalf("wget in the nginx stand-in: code %d, err %v, stderr %s", code, err, errOut.String())
	}
	if !strings.Contains(out.String(), "Welcome to nginx!") || !strings.Contains(out.String(), "stand-in") {
		t.Errorf("GET / answered:\n%s", out.String())
	}
	st, err := fx.rt.ContainerStatus(fx.ctx(), id)
	if err != nil || st.Image != "nginx:1.27" {
		t.Errorf("status image %q (%v), want nginx:1.27", st.Image, err)
	}

	shell := containerConfig("bb")
	shell.Image, shell.StandIn = "busybox", "busybox"
	shell.Command, shell.Args = []string{"sh", "-c"}, []string{"for i in 1 2; do echo hi $i; done; exit 4"}
	id = fx.start(fx.sandbox("bb"), shell)
	fx.waitLog(id, "hi 2")
	if st := fx.waitExited(id); st.ExitCode != 4 || st.Image != "busybox" {
		t.Errorf("busybox stand-in: exit %d image %q, want 4 busybox", st.ExitCode, st.Image)
	}
}
