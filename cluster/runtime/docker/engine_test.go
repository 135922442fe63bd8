package docker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

func TestEnsureImage(t *testing.T) {
	info := testImage(t)
	if info.Node != labels.NodeImage+":"+testBuildID || info.App != testAppImage || !info.Built || info.Size <= 0 {
		t.Errorf("first EnsureImage = %+v", info)
	}
	cli, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	for _, tt := range []struct {
		image      string
		entrypoint []string
	}{
		{info.Node, []string{"/klab", "component"}},
		{info.App, []string{"/klab", "component", "app"}},
	} {
		img, err := cli.ImageInspect(ctx, tt.image)
		if err != nil {
			t.Fatalf("inspect %s: %v", tt.image, err)
		}
		if !slices.Equal(img.Config.Entrypoint, tt.entrypoint) {
			t.Errorf("%s: entrypoint %q, want %q", tt.image, img.Config.Entrypoint, tt.entrypoint)
		}
		if img.Config.Labels[labels.Role] != labels.RoleImage || img.Config.Labels[labels.BuildID] != testBuildID {
			t.Errorf("%s: labels %v", tt.image, img.Config.Labels)
		}
	}

	again, err := EnsureImage(ctx, ImageOptions{Binary: klabBinary(t), BuildID: testBuildID, AppImage: testAppImage})
	if err != nil {
		t.Fatal(err)
	}
	if again.Built || again.Node != info.Node {
		t.Errorf("second EnsureImage = %+v, want the same images, not built again", again)
	}

	// $KLAB_BINARY wins over the binary named, and a dynamic one is
	// refused before anything is built.
	t.Setenv(BinaryEnv, dynamicBinary(t))
	_, err = EnsureImage(ctx, ImageOptions{Binary: klabBinary(t), BuildID: testBuildID + "-dyn", AppImage: testAppImage})
	if !errors.Is(err, ErrUnusableBinary) || !contains(err.Error(), "make image") {
		t.Errorf("EnsureImage with a dynamic binary: %v, want an error saying to run make image", err)
	}
	if _, err := cli.ImageInspect(ctx, labels.NodeImage+":"+testBuildID+"-dyn"); !notFound(err) {
		t.Errorf("an image was built from a dynamic binary (inspect: %v)", err)
	}
}

func TestNetwork(t *testing.T) {
	requireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster := testClusterName()
	removeClusterAfter(t, cluster)

	// A network that is not klab's takes the cluster's preferred subnet:
	// the cluster must take the next one.
	x := preferredSubnet(cluster)
	blocked, _, _ := subnetOf(x)
	cli, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	blocker := labels.Prefix(cluster) + "-blocker"
	if _, err := cli.NetworkCreate(ctx, blocker, network.CreateOptions{
		Driver: "bridge",
		IPAM:   &network.IPAM{Config: []network.IPAMConfig{{Subnet: blocked}}},
		// Labelled with the cluster so that the cleanup finds it; with no
		// role, it is not the cluster's network.
		Labels: map[string]string{labels.Cluster: cluster},
	}); err != nil {
		t.Fatalf("create the blocking network: %v", err)
	}

	r, err := New(ctx, Options{Cluster: cluster, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.network(ctx, false); !isNotFound(err) {
		t.Fatalf("network before any node: %v, want not found", err)
	}
	n, err := r.network(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if n.x == x || n.name != labels.Network(cluster) {
		t.Errorf("network = %+v; want another subnet than the blocked 10.%d.0.0/16", n, x)
	}
	inspect, err := cli.NetworkInspect(ctx, n.id, network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	subnet, gateway, _ := subnetOf(n.x)
	if len(inspect.IPAM.Config) != 1 || inspect.IPAM.Config[0].Subnet != subnet || inspect.IPAM.Config[0].Gateway != gateway {
		t.Errorf("IPAM = %+v, want subnet %s gateway %s", inspect.IPAM.Config, subnet, gateway)
	}
	if inspect.Labels[labels.Role] != labels.RoleNetwork || inspect.Labels[labels.Cluster] != cluster {
		t.Errorf("labels = %v", inspect.Labels)
	}

	// Another process attaching to the cluster finds the same network.
	other, err := New(ctx, Options{Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if found, err := other.network(ctx, false); err != nil || found != n {
		t.Errorf("attached runtime found %+v, %v; want %+v", found, err, n)
	}
	names, err := ListClusters(ctx)
	if err != nil || !slices.Contains(names, cluster) {
		t.Errorf("ListClusters = %v, %v; want it to hold %s", names, err, cluster)
	}
}

// RemoveCluster must clear what a half-made cluster leaves: here a volume,
// a network and a container that never started, with no node around it.
func TestRemoveClusterLeftovers(t *testing.T) {
	info := testImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster := testClusterName()
	removeClusterAfter(t, cluster)
	cli, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	r, err := New(ctx, Options{Cluster: cluster, Image: info.Node})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n, err := r.network(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: labels.EtcdVolume(cluster, "master-1"), Labels: map[string]string{
		labels.Cluster: cluster, labels.Role: labels.RoleVolume, labels.Node: "master-1",
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerCreate(ctx, &container.Config{Image: info.Node, Cmd: []string{"pause"}, Labels: map[string]string{
		labels.Cluster: cluster, labels.Role: labels.RolePod,
	}}, &container.HostConfig{NetworkMode: container.NetworkMode(n.name)}, nil, nil, labels.Prefix(cluster)+"-leftover"); err != nil {
		t.Fatal(err)
	}

	for i := range 2 { // the second time there is nothing left: no error
		if err := RemoveCluster(ctx, cluster, testLogger(t)); err != nil {
			t.Fatalf("RemoveCluster #%d: %v", i+1, err)
		}
	}
	assertNothingLeft(t, cluster)
}

// assertNothingLeft fails the test if any object carries the cluster's
// label.
func assertNothingLeft(t *testing.T, cluster string) {
	t.Helper()
	ctx := context.Background()
	cli, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	byCluster := filters.NewArgs(filters.Arg("label", labels.ClusterFilter(cluster)))
	containers, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: byCluster})
	if err != nil {
		t.Fatal(err)
	}
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: byCluster})
	if err != nil {
		t.Fatal(err)
	}
	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: byCluster})
	if err != nil {
		t.Fatal(err)
	}
	if len(containers)+len(nets)+len(vols.Volumes) > 0 {
		t.Errorf("left behind: %d containers, %d networks, %d volumes", len(containers), len(nets), len(vols.Volumes))
	}
	names, err := ListClusters(ctx)
	if err != nil || slices.Contains(names, cluster) {
		t.Errorf("ListClusters = %v, %v; still holds %s", names, err, cluster)
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	requireDocker(t)
	ctx := context.Background()
	if _, err := New(ctx, Options{Cluster: "a b"}); err == nil {
		t.Error("a cluster name with a space was accepted")
	}
	if _, err := New(ctx, Options{Cluster: testClusterName(), Image: "klab/node:no-such-build"}); err == nil || !contains(err.Error(), "no image") {
		t.Errorf("a missing image: %v, want an error saying so", err)
	}
	r, err := New(ctx, Options{Cluster: testClusterName()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.CreateNode(ctx, runtime.NodeSpec{Name: "master-1", Role: runtime.RoleMaster, Index: 1}); err == nil {
		t.Error("a runtime without an image created a node")
	}
	err = r.Start(ctx, runtime.Ref{Node: "master-1", Component: "etcd"})
	if !isNotFound(err) {
		t.Errorf("Start of a component never created: %v, want ErrNotFound", err)
	}
}
