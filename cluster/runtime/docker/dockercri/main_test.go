package dockercri

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/klab-dev/klab/cluster/app/shell"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
	"github.com/klab-dev/klab/internal/testenv"
)

// requireEngine marks the test as end-to-end and skips it when no Docker
// engine answers.
func requireEngine(t *testing.T) {
	t.Helper()
	testenv.EndToEnd(t)
	if engine.skip != "" {
		t.Skip("skipping: " + engine.skip)
	}
}

// engine is what TestMain set up on the Docker engine for the tests: a
// test cluster name, a network with a known subnet, and an image built FROM
// scratch from testdata/klabtest. Everything carries the cluster's label
// and is removed when the tests end.
var engine struct {
	// skip says why the Docker tests cannot run; empty when they can.
	skip    string
	docker  *client.Client
	cluster string
	network string
	// subnet is the network's 10.<subnet>.0.0/16.
	subnet int
	// image is the test image (entrypoint klabtest); appImage is a test
	// repository standing in for klab/app, whose latest is the same image.
	image    string
	appImage string
}

func TestMain(m *testing.M) {
	// testing.Short needs the flags parsed; m.Run would parse them later.
	flag.Parse()
	code := func() int {
		if testing.Short() {
			// Every test that needs the engine is end-to-end and
			// skipped (see requireEngine): nothing to set up.
			return m.Run()
		}
		if err := setUpEngine(); err != nil {
			fmt.Fprintln(os.Stderr, "dockercri tests:", err)
			tearDownEngine()
			return 1
		}
		defer tearDownEngine()
		return m.Run()
	}()
	os.Exit(code)
}

func setUpEngine() error {
	docker, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = docker.Ping(ctx)
		cancel()
	}
	if err != nil {
		engine.skip = fmt.Sprintf("no Docker engine answers (start Docker, or set DOCKER_HOST): %v", err)
		return nil
	}
	var id [4]byte
	rand.Read(id[:])
	engine.docker = docker
	engine.cluster = "klabtest-" + hex.EncodeToString(id[:])
	engine.image = engine.cluster + "/klabtest:latest"
	engine.appImage = engine.cluster + "/app"

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := buildTestImage(ctx); err != nil {
		return fmt.Errorf("build the test image: %w", err)
	}
	if err := docker.ImageTag(ctx, engine.image, engine.appImage+":latest"); err != nil {
		return fmt.Errorf("tag the test image: %w", err)
	}
	return createTestNetwork(ctx)
}

// buildTestImage compiles testdata/klabtest as a static binary and builds
// an image FROM scratch around it, from a build context made in memory.
func buildTestImage(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "klabtest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "klabtest")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./testdata/klabtest")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build testdata/klabtest: %w\n%s", err, out)
	}
	program, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var buildContext bytes.Buffer
	tw := tar.NewWriter(&buildContext)
	// /bin/sh, /bin/ls, ... link to the program, which then runs klab's
	// shell, as in klab/app.
	for _, a := range shell.Applets() {
		if err := tw.WriteHeader(&tar.Header{Name: "rootfs/bin/" + a, Linkname: "/klabtest", Mode: 0o777, Typeflag: tar.TypeSymlink}); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte("FROM scratch\nCOPY klabtest /klabtest\nCOPY rootfs/ /\nENTRYPOINT [\"/klabtest\"]\n")},
		{"klabtest", 0o755, program},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	resp, err := engine.docker.ImageBuild(ctx, &buildContext, build.ImageBuildOptions{
		Tags:        []string{engine.image},
		Labels:      map[string]string{labels.Cluster: engine.cluster, labels.Role: labels.RoleImage},
		Remove:      true,
		ForceRemove: true,
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The engine reports the build as a stream of JSON messages; a failed
	// step is one with an error.
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct{ Error string }
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the build's output: %w", err)
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
	}
}

// createTestNetwork creates a network 10.X.0.0/16, trying other X while
// Docker says the range overlaps one of the machine's.
func createTestNetwork(ctx context.Context) error {
	engine.network = engine.cluster
	var err error
	for range 20 {
		n, _ := rand.Int(rand.Reader, big.NewInt(150))
		engine.subnet = 100 + int(n.Int64())
		_, err = engine.docker.NetworkCreate(ctx, engine.network, network.CreateOptions{
			Driver: "bridge",
			IPAM:   &network.IPAM{Config: []network.IPAMConfig{{Subnet: fmt.Sprintf("10.%d.0.0/16", engine.subnet)}}},
			Labels: map[string]string{labels.Cluster: engine.cluster, labels.Role: labels.RoleNetwork},
		})
		if err == nil || !strings.Contains(err.Error(), "overlaps") {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("create the test network: %w", err)
	}
	return nil
}

// tearDownEngine removes every container, network and image of the test
// cluster, found by its label.
func tearDownEngine() {
	if engine.docker == nil || engine.cluster == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	byLabel := filters.NewArgs(filters.Arg("label", labels.ClusterFilter(engine.cluster)))
	removeContainers(ctx, byLabel)
	networks, _ := engine.docker.NetworkList(ctx, network.ListOptions{Filters: byLabel})
	for _, n := range networks {
		if err := engine.docker.NetworkRemove(ctx, n.ID); err != nil {
			fmt.Fprintln(os.Stderr, "dockercri tests: remove network:", err)
		}
	}
	images, _ := engine.docker.ImageList(ctx, image.ListOptions{All: true, Filters: byLabel})
	for _, img := range images {
		// Removing an image may have removed others of the list (its
		// build's intermediate images) already.
		_, err := engine.docker.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			fmt.Fprintln(os.Stderr, "dockercri tests: remove image:", err)
		}
	}
	engine.docker.Close()
}

// removeContainers force-removes the containers that match filter.
func removeContainers(ctx context.Context, filter filters.Args) {
	list, err := engine.docker.ContainerList(ctx, container.ListOptions{All: true, Filters: filter})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dockercri tests: list containers:", err)
		return
	}
	for _, c := range list {
		if err := engine.docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			fmt.Fprintln(os.Stderr, "dockercri tests: remove container:", err)
		}
	}
}
