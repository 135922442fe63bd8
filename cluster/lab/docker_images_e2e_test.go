package lab

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/cluster/runtime/docker"
)

// pushAppImage serves an in-memory registry on 127.0.0.1 (the engine
// trusts it without TLS) and pushes an image holding the static klab
// binary, with the app as its entrypoint, as repo:v1. It returns the
// image's reference.
func pushAppImage(t *testing.T, bin, repo string) (host, ref string) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	program, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	if err := tw.WriteHeader(&tar.Header{Name: "klab", Mode: 0o755, Size: int64(len(program)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(program); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy() // it holds the layer's diff ID already
	cf.OS, cf.Architecture = "linux", goruntime.GOARCH
	cf.Config.Entrypoint = []string{"/klab", "component", "app"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	ref = host + "/" + repo + ":v1"
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return host, ref
}

// TestDockerImages: on a Docker cluster, a pod pulls its image from a
// registry on 127.0.0.1 with upstream's events; nginx and busybox, which
// this offline machine cannot pull, run as klab's stand-ins with an event
// saying so (nginx answers on port 80, busybox runs its sh -c loop, and
// both have the service variables); an image nobody has ends in
// ImagePullBackOff with the offline message.
func TestDockerImages(t *testing.T) {
	bin := requireDocker(t)
	home := testHome(t)
	// The pulled image goes after the cluster whose pod uses it: cleanups
	// run last first.
	var ref string
	t.Cleanup(func() {
		if ref == "" {
			return
		}
		if err := docker.RemoveImage(context.Background(), ref); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	clusterName := dockerClusterName(t, "t-img")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	_, ref = pushAppImage(t, bin, clusterName+"/app")
	c, err := Up(ctx, Spec{Name: clusterName, Masters: 1, Workers: 1, Speed: 10, Runtime: RuntimeDocker, NoFsync: true}, Options{Binary: bin})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	f := &loopFixture{t: t, name: clusterName, c: c, ctx: ctx}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if f.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	missing := strings.Replace(ref, "/app:v1", "/nosuch:v1", 1)
	pods := map[string]corev1.Container{
		"pulled":  {Image: ref},
		"nginx":   {Image: "nginx"},
		"busybox": {Image: "busybox", Command: []string{"sh", "-c", "while true; do echo hi; sleep 1; done"}},
		"missing": {Image: missing},
	}
	for podName, ctr := range pods {
		ctr.Name = "main"
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: podName, Labels: map[string]string{"test": podName}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{ctr}},
		}
		if _, err := f.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"pulled", "nginx", "busybox"} {
		f.waitRunning("test="+p, 1, 3*time.Minute)
	}

	events := func(pod string) []string {
		list, err := f.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range list.Items {
			out = append(out, e.Type+" "+e.Reason+" "+e.Message)
		}
		return out
	}
	hasEventEventually := func(pod, prefix string) {
		t.Helper()
		f.eventually(30*time.Second, fmt.Sprintf("event %q of %s", prefix, pod), func() (bool, error) {
			got := events(pod)
			for _, e := range got {
				if strings.HasPrefix(e, prefix) {
					return true, nil
				}
			}
			return false, fmt.Errorf("events %q", got)
		})
	}
	hasEventEventually("pulled", `Normal Pulling Pulling image "`+ref+`"`)
	hasEventEventually("pulled", `Normal Pulled Successfully pulled image "`+ref+`" in `)

	// This machine is offline in CI; online, the engine pulls the real
	// images and there is no stand-in to check.
	standIn := func(pod string) bool {
		for _, e := range events(pod) {
			if strings.HasPrefix(e, "Normal StandIn ") {
				return true
			}
		}
		return false
	}
	kubectl := func(args ...string) string {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, time.Minute)
		defer ccancel()
		cmd := exec.CommandContext(cctx, bin, append([]string{"kubectl", "--name", clusterName}, args...)...)
		cmd.Env = append(os.Environ(), "KLAB_HOME="+home, "KLAB_LANG=en")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("kubectl %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if standIn("nginx") {
		t.Log("nginx and busybox run as klab's stand-ins: this machine is offline")
		hasEventEventually("nginx", `Normal StandIn Running klab's stand-in for image "nginx" (it serves a welcome page on port 80), because the image could not be pulled: pull image "nginx": `)
		if page := kubectl("exec", "nginx", "--", "wget", "-q", "-O", "-", "http://127.0.0.1:80/"); !strings.Contains(page, "Welcome to nginx!") {
			t.Errorf("the nginx stand-in answered:\n%s", page)
		}
	} else {
		t.Log("the engine pulled the real nginx: this machine is online")
	}
	if standIn("busybox") {
		f.eventually(30*time.Second, "busybox's loop in its log", func() (bool, error) {
			out, err := f.client.CoreV1().Pods("default").GetLogs("busybox", &corev1.PodLogOptions{}).DoRaw(ctx)
			return strings.Count(string(out), "hi\n") >= 2, fmt.Errorf("log %q (%v)", out, err)
		})
		if env := kubectl("exec", "busybox", "--", "env"); !strings.Contains(env, "KUBERNETES_SERVICE_HOST=10.96.0.1\n") || !strings.Contains(env, "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443\n") {
			t.Errorf("busybox's environment lacks the kubernetes service variables:\n%s", env)
		}
	}

	f.eventually(2*time.Minute, "the missing image to back off", func() (bool, error) {
		pod, err := f.client.CoreV1().Pods("default").Get(ctx, "missing", metav1.GetOptions{})
		if err != nil || len(pod.Status.ContainerStatuses) == 0 {
			return false, err
		}
		w := pod.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ImagePullBackOff" && strings.Contains(w.Message, "klab could not download the image"),
			fmt.Errorf("state %+v", pod.Status.ContainerStatuses[0].State)
	})
	hasEventEventually("missing", `Warning Failed Failed to pull image "`+missing+`": pull image "`+missing+`": `)
}
