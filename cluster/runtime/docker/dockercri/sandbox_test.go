package dockercri

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

func TestSandboxes(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	cidr := netip.MustParsePrefix(fx.cfg.PodCIDR)
	a, b := fx.sandbox("web-a"), fx.sandbox("web-b")
	if want := cidr.Addr().Next().Next().String(); a.IP != want {
		t.Errorf("first sandbox IP = %s, want %s (the first from .2)", a.IP, want)
	}
	if want := cidr.Addr().Next().Next().Next().String(); b.IP != want {
		t.Errorf("second sandbox IP = %s, want %s", b.IP, want)
	}

	info := fx.inspect(a.ID)
	if got := info.NetworkSettings.Networks[engine.network].IPAddress; got != a.IP {
		t.Errorf("pause container's address on the network = %q, want %s", got, a.IP)
	}
	wantName := fmt.Sprintf("/klab-%s_k8s_POD_web-a_default_%s-web-a_0", engine.cluster, fx.cfg.Node)
	if info.Name != wantName {
		t.Errorf("pause container name = %q, want %q", info.Name, wantName)
	}
	if got := info.Config.Cmd; len(got) != 1 || got[0] != "pause" {
		t.Errorf("pause container command = %q, want [pause]", got)
	}

	list, err := fx.rt.ListPodSandboxes(fx.ctx())
	if err != nil {
		t.Fatalf("ListPodSandboxes: %v", err)
	}
	if len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Fatalf("ListPodSandboxes = %+v, want web-a then web-b", list)
	}
	got := list[0]
	want := fx.sandboxConfig("web-a")
	if !got.Ready || got.IP != a.IP || got.CreatedAt.IsZero() || got.Config.PodUID != want.PodUID ||
		got.Config.Name != want.Name || got.Config.Namespace != want.Namespace || got.Config.Hostname != want.Hostname ||
		!maps.Equal(got.Config.Labels, want.Labels) {
		t.Errorf("ListPodSandboxes()[0] = %+v, want ready at %s with config %+v", got, a.IP, want)
	}

	// A pod reaches another at its IP, and the server answers with its
	// pod's hostname.
	fx.start(a, containerConfig("server", "listen", "8080"))
	client := fx.start(b, containerConfig("client", "dial", a.IP+":8080"))
	if st := fx.waitExited(client); st.ExitCode != 0 {
		t.Fatalf("client exited %d (%s), log:\n%s", st.ExitCode, st.Reason, fx.logs(client, cri.LogOptions{}))
	}
	if got := fx.logs(client, cri.LogOptions{}); got != "web-a\n" {
		t.Errorf("client got %q from the server, want %q", got, "web-a\n")
	}

	// Stopping releases the address; the pod's next sandbox takes it.
	if err := fx.rt.StopPodSandbox(fx.ctx(), a.ID); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if err := fx.rt.StopPodSandbox(fx.ctx(), a.ID); err != nil {
		t.Fatalf("StopPodSandbox again: %v", err)
	}
	containers, err := fx.rt.ListContainers(fx.ctx())
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	for _, c := range containers {
		if c.SandboxID == a.ID && c.State != cri.StateExited {
			t.Errorf("container %s of the stopped sandbox is %s", c.Name, c.State)
		}
	}
	again := fx.sandbox("web-a")
	if again.IP != a.IP {
		t.Errorf("new sandbox IP = %s, want the released %s", again.IP, a.IP)
	}
	if name := fx.inspect(again.ID).Name; !strings.HasSuffix(name, "-web-a_1") {
		t.Errorf("second sandbox of the pod is named %q, want attempt 1", name)
	}
	list, err = fx.rt.ListPodSandboxes(fx.ctx())
	if err != nil {
		t.Fatalf("ListPodSandboxes: %v", err)
	}
	ready := map[string]bool{}
	for _, sb := range list {
		ready[sb.ID] = sb.Ready
	}
	if want := map[string]bool{a.ID: false, b.ID: true, again.ID: true}; !maps.Equal(ready, want) {
		t.Errorf("sandboxes ready = %v, want %v", ready, want)
	}

	// Removing takes the containers with it.
	if err := fx.rt.RemovePodSandbox(fx.ctx(), a.ID); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	if err := fx.rt.RemovePodSandbox(fx.ctx(), a.ID); err != nil {
		t.Errorf("RemovePodSandbox of a removed sandbox = %v, want nil", err)
	}
	if err := fx.rt.StopPodSandbox(fx.ctx(), a.ID); !errors.Is(err, cri.ErrNotFound) {
		t.Errorf("StopPodSandbox of a removed sandbox = %v, want ErrNotFound", err)
	}
	containers, err = fx.rt.ListContainers(fx.ctx())
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	for _, c := range containers {
		if c.SandboxID == a.ID {
			t.Errorf("container %s of the removed sandbox is still listed", c.Name)
		}
	}
}

// TestRunPodSandboxSkipsTakenAddress: an address of the pod CIDR that
// something the node does not know of holds is skipped.
func TestRunPodSandboxSkipsTakenAddress(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	first := netip.MustParsePrefix(fx.cfg.PodCIDR).Addr().Next().Next()
	squatter, err := engine.docker.ContainerCreate(fx.ctx(),
		&container.Config{Image: engine.image, Cmd: []string{"pause"},
			// Labelled for the fixture's clean-up, but no sandbox.
			Labels: map[string]string{labels.Cluster: engine.cluster, labels.Node: fx.cfg.Node, labels.Role: "test"}},
		&container.HostConfig{NetworkMode: container.NetworkMode(engine.network)},
		&network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			engine.network: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: first.String()}},
		}}, nil, "")
	if err != nil {
		t.Fatalf("create squatter: %v", err)
	}
	if err := engine.docker.ContainerStart(fx.ctx(), squatter.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start squatter: %v", err)
	}
	sb := fx.sandbox("web")
	if want := first.Next().String(); sb.IP != want {
		t.Errorf("sandbox IP = %s, want %s (the squatter holds %s)", sb.IP, want, first)
	}
	list, err := fx.rt.ListPodSandboxes(fx.ctx())
	if err != nil {
		t.Fatalf("ListPodSandboxes: %v", err)
	}
	if len(list) != 1 {
		t.Errorf("ListPodSandboxes = %+v, want only the sandbox (the failed try is removed)", list)
	}
}

func TestRunPodSandboxValidates(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	cfg := fx.sandboxConfig("web")
	cfg.PodUID = ""
	if _, err := fx.rt.RunPodSandbox(fx.ctx(), cfg); err == nil || !strings.Contains(err.Error(), "name, namespace and UID are required") {
		t.Errorf("RunPodSandbox without UID = %v", err)
	}
}
