package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// TestPruneImages: images of other builds go, the kept build's stay, and
// an old build's image that a (stopped) container was made from stays too,
// reported in use.
func TestPruneImages(t *testing.T) {
	requireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	run := randomHex(4)
	scope := map[string]string{"io.klab.test": "prune-" + run}
	old := "klabtest/prune-old:" + run
	cur := "klabtest/prune-cur:" + run
	used := "klabtest/prune-used:" + run
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cli.ContainerRemove(ctx, "klabtest-prune-"+run, container.RemoveOptions{Force: true})
		for _, tag := range []string{old, cur, used} {
			cli.ImageRemove(ctx, tag, image.RemoveOptions{Force: true, PruneChildren: true})
		}
	})
	buildTiny(ctx, t, cli, old, "old-"+run, scope)
	buildTiny(ctx, t, cli, cur, "cur-"+run, scope)
	buildTiny(ctx, t, cli, used, "old-"+run, scope)
	if _, err := cli.ContainerCreate(ctx, &container.Config{
		Image: used, Cmd: []string{"/none"}, Labels: map[string]string{labels.Cluster: testClusterName()},
	}, nil, nil, nil, "klabtest-prune-"+run); err != nil {
		t.Fatal(err)
	}

	res, err := PruneImages(ctx, PruneOptions{Keep: "cur-" + run, Labels: scope})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{old}) {
		t.Errorf("removed %v, want [%s]", res.Removed, old)
	}
	if !slices.Equal(res.InUse, []string{used}) {
		t.Errorf("in use %v, want [%s]", res.InUse, used)
	}
	for tag, want := range map[string]bool{old: false, cur: true, used: true} {
		_, err := cli.ImageInspect(ctx, tag)
		if got := err == nil; got != want {
			t.Errorf("image %s present = %v after prune, want %v (%v)", tag, got, want, err)
		}
	}
}

// buildTiny builds an image of no layers, labelled as klab's images are
// with the given build and the test's scope.
func buildTiny(ctx context.Context, t *testing.T, cli *client.Client, tag, buildID string, scope map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dockerfile := []byte("FROM scratch\nLABEL io.klab.test.tag=" + tag + "\n")
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))})
	tw.Write(dockerfile)
	tw.Close()
	lbls := map[string]string{labels.Role: labels.RoleImage, labels.BuildID: buildID}
	for k, v := range scope {
		lbls[k] = v
	}
	resp, err := cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{Tags: []string{tag}, Labels: lbls, Remove: true, Version: build.BuilderV1})
	if err != nil {
		t.Fatalf("build %s: %v", tag, err)
	}
	defer resp.Body.Close()
	if err := readBuildOutput(resp.Body, componentbase.Logger(testLogger(t))); err != nil {
		t.Fatalf("build %s: %v", tag, err)
	}
}
