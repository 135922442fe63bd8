package inprocess

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// appAnswer is the part of the app's JSON answer the tests look at.
type appAnswer struct {
	Pod, Namespace, Node, PodIP, Image, Version string
}

func ask(t *testing.T, url string) appAnswer {
	t.Helper()
	code, body := get(url + "/?format=json")
	if code != 200 {
		t.Fatalf("GET %s = %d %s", url, code, body)
	}
	var a appAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return a
}

func TestPodsAreReachableAtTheirOwnIP(t *testing.T) {
	rt := newTestRuntime(t)
	web := runPod(t, rt, "web")
	api := runPod(t, rt, "api")
	prefix := netip.MustParsePrefix(rt.cfg.PodCIDR)
	for _, sb := range []cri.Sandbox{web, api} {
		if addr, err := netip.ParseAddr(sb.IP); err != nil || !prefix.Contains(addr) {
			t.Fatalf("sandbox IP %q is not in %s", sb.IP, prefix)
		}
	}
	if web.IP == api.IP {
		t.Fatalf("two pods share IP %s", web.IP)
	}

	startServing(t, rt, web, appContainer("web", "app"))
	// A second container in the same pod shares its IP, on another port.
	startServing(t, rt, web, appContainer("web", "sidecar", "--port=8081", "--message=sidecar"))
	// Without Downward API variables in its spec the app still knows
	// who it is: the runtime hands every container the pod's identity.
	bare := appContainer("api", "app")
	bare.Env = nil
	startServing(t, rt, api, bare)

	tests := []struct {
		url  string
		want appAnswer
	}{
		{"http://" + web.IP + ":8080", appAnswer{Pod: "web", Namespace: "shop", Node: "worker-1", PodIP: web.IP, Image: "klab/app:v2", Version: "v2"}},
		{"http://" + web.IP + ":8081", appAnswer{Pod: "web", Namespace: "shop", Node: "worker-1", PodIP: web.IP, Image: "klab/app:v2", Version: "v2"}},
		{"http://" + api.IP + ":8080", appAnswer{Pod: "api", Namespace: "shop", Node: "worker-1", PodIP: api.IP, Image: "klab/app:v2", Version: "v2"}},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			if got := ask(t, tt.url); got != tt.want {
				t.Errorf("GET %s = %+v, want %+v", tt.url, got, tt.want)
			}
		})
	}

	list, err := rt.ListPodSandboxes(context.Background())
	if err != nil || len(list) != 2 || list[0].ID != web.ID || !list[0].Ready || list[0].Config.Name != "web" ||
		list[0].Config.Labels["io.kubernetes.pod.name"] != "web" {
		t.Errorf("ListPodSandboxes = %+v, %v", list, err)
	}
	containers, err := rt.ListContainers(context.Background())
	if err != nil || len(containers) != 3 {
		t.Fatalf("ListContainers = %d containers, %v", len(containers), err)
	}
	for _, c := range containers {
		if c.State != cri.StateRunning || c.StartedAt.IsZero() || c.ImageID != imageID(AppRepository) {
			t.Errorf("container %s: %+v", c.Name, c)
		}
	}
}

func TestStopAndRemovePodSandbox(t *testing.T) {
	rt := newTestRuntime(t)
	sb := runPod(t, rt, "web")
	id := startServing(t, rt, sb, appContainer("web", "app", "--shutdown-delay=1m"))
	if err := rt.StopPodSandbox(context.Background(), sb.ID); err != nil {
		t.Fatal(err)
	}
	st, _ := rt.ContainerStatus(context.Background(), id)
	if st.State != cri.StateExited || st.ExitCode != 137 {
		t.Errorf("container in a stopped sandbox: %s %d", st.State, st.ExitCode)
	}
	if code, _ := get("http://" + sb.IP + ":8080/"); code != -1 {
		t.Errorf("stopped pod still answers (%d)", code)
	}
	list, _ := rt.ListPodSandboxes(context.Background())
	if len(list) != 1 || list[0].Ready {
		t.Errorf("stopped sandbox listed as %+v", list)
	}
	if err := rt.StopPodSandbox(context.Background(), sb.ID); err != nil {
		t.Errorf("second StopPodSandbox: %v", err)
	}
	if err := rt.StartContainer(context.Background(), create(t, rt, runPod(t, rt, "other"), appContainer("other", "app"))); err != nil {
		t.Fatal(err)
	}

	if err := rt.RemovePodSandbox(context.Background(), sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ContainerStatus(context.Background(), id); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("container of a removed sandbox: %v", err)
	}
	if _, err := os.Stat(filepath.Join(rt.cfg.LogDir, "shop_web_uid-web")); !os.IsNotExist(err) {
		t.Errorf("pod log directory still there: %v", err)
	}
	if list, _ := rt.ListPodSandboxes(context.Background()); len(list) != 1 || list[0].Config.Name != "other" {
		t.Errorf("sandboxes after removal: %+v", list)
	}
	if err := rt.RemovePodSandbox(context.Background(), sb.ID); err != nil {
		t.Errorf("removing twice = %v, want nil", err)
	}
	if err := rt.StopPodSandbox(context.Background(), sb.ID); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("stopping a removed sandbox = %v, want ErrNotFound", err)
	}
}

func TestReleasedIPIsReusedLast(t *testing.T) {
	// A /29 at the top of the test's /24: five pod IPs, .250 to .254.
	rt := newTestRuntime(t, func(c *Config) { c.PodCIDR = c.PodCIDR[:strings.LastIndex(c.PodCIDR, ".")] + ".248/29" })
	first := runPod(t, rt, "a")
	if err := rt.RemovePodSandbox(context.Background(), first.ID); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, name := range []string{"b", "c", "d", "e", "f"} {
		got = append(got, runPod(t, rt, name).IP)
	}
	if got[len(got)-1] != first.IP {
		t.Errorf("IPs after releasing %s: %v; want it handed out last", first.IP, got)
	}
	if _, err := rt.RunPodSandbox(context.Background(), cri.SandboxConfig{PodUID: "u", Name: "g", Namespace: "shop"}); err == nil ||
		!strings.Contains(err.Error(), "no IP left in pod CIDR") {
		t.Errorf("sixth pod in a /29: %v", err)
	}
}

func TestClose(t *testing.T) {
	rt := newTestRuntime(t)
	sb := runPod(t, rt, "web")
	startServing(t, rt, sb, appContainer("web", "app", "--shutdown-delay=1m"))
	done := make(chan error, 1)
	go func() { done <- rt.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	// The container is gone: its port is free.
	l, err := net.Listen("tcp", sb.IP+":8080")
	if err != nil {
		t.Fatalf("port still held after Close: %v", err)
	}
	l.Close()
	for range rt.Events() {
		// Drain what was sent before Close; the loop ends because the
		// channel is closed.
	}
	if _, err := rt.ListContainers(context.Background()); !errors.Is(err, errClosed) {
		t.Errorf("ListContainers after Close = %v", err)
	}
	if _, err := rt.RunPodSandbox(context.Background(), cri.SandboxConfig{PodUID: "u", Name: "n", Namespace: "ns"}); !errors.Is(err, errClosed) {
		t.Errorf("RunPodSandbox after Close = %v", err)
	}
	if err := rt.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "no log dir", cfg: Config{PodCIDR: "127.250.1.0/24"}, want: "no log directory"},
		{name: "bad CIDR", cfg: Config{PodCIDR: "10.0.0.0/33", LogDir: t.TempDir()}, want: "parse pod CIDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want %q", err, tt.want)
			}
		})
	}
}
