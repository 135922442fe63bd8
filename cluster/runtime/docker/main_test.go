package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
	"github.com/klab-dev/klab/internal/testenv"
)

// Tests that need a Docker engine share one klab binary and one image
// build, both made on first use: tests that need neither stay fast.
var (
	testDir string
	// testBuildID tags the images the tests build, so that TestMain
	// removes exactly those.
	testBuildID = "test-" + randomHex(4)
	// testAppImage is the tests' demo workload image: never klab/app,
	// which a cluster tested at the same time runs its pods from.
	testAppImage = "klabtest/app:" + testBuildID

	binaryOnce sync.Once
	binaryPath string
	binaryErr  error

	imageOnce  sync.Once
	imageInfo  ImageInfo
	imageErr   error
	imageBuilt bool
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "klab-docker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testDir = dir
	code := m.Run()
	if imageBuilt {
		if err := removeTestImages(); err != nil {
			fmt.Fprintln(os.Stderr, "remove test images:", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// testClusterName returns a cluster name no other test run uses.
func testClusterName() string { return "klabtest-" + randomHex(3) }

// requireDocker marks the test as end-to-end and skips it when no Docker
// engine answers.
func requireDocker(t *testing.T) {
	t.Helper()
	testenv.EndToEnd(t)
	if err := Ping(context.Background()); err != nil {
		t.Skipf("skipping: this test needs a Docker engine: %v", err)
	}
}

// klabBinary builds the real klab binary, static for linux, once.
func klabBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
		if err != nil {
			binaryErr = fmt.Errorf("find the module root: %w", err)
			return
		}
		binaryPath = filepath.Join(testDir, "klab")
		cmd := exec.Command("go", "build", "-o", binaryPath, "./cmd/klab")
		cmd.Dir = strings.TrimSpace(string(root))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("build klab: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// testImage builds the node and app images from the klab binary, once.
func testImage(t *testing.T) ImageInfo {
	t.Helper()
	requireDocker(t)
	binary := klabBinary(t)
	imageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		imageInfo, imageErr = EnsureImage(ctx, ImageOptions{Binary: binary, BuildID: testBuildID, AppImage: testAppImage, Logger: testLogger(t)})
		imageBuilt = imageErr == nil
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageInfo
}

// removeTestImages removes the images the tests built, found by their
// build-id label, with the intermediate images the builds left.
func removeTestImages() error {
	cli, err := newClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", labels.Filter(labels.BuildID, testBuildID)))})
	if err != nil {
		return err
	}
	// Children first: the app image is built FROM the node image, and a
	// stand-in FROM the app image. An image whose children are not gone
	// yet waits for the next pass; a pass that removes nothing ends it.
	sort.SliceStable(list, func(i, j int) bool { return isAppImage(list[i]) && !isAppImage(list[j]) })
	for len(list) > 0 {
		var left []image.Summary
		var lastErr error
		for _, img := range list {
			if _, err := cli.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil && !notFound(err) {
				left, lastErr = append(left, img), err
			}
		}
		if len(left) == len(list) {
			return lastErr
		}
		list = left
	}
	return nil
}

func isAppImage(img image.Summary) bool {
	for _, tag := range img.RepoTags {
		if tag == testAppImage {
			return true
		}
	}
	return false
}

// testLogger logs through t, when -v is given.
func testLogger(t *testing.T) *slog.Logger {
	if !testing.Verbose() {
		return nil
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// newTestRuntime connects a runtime for a new test cluster on the node
// image, closed and with every object of the cluster removed when the test
// ends.
func newTestRuntime(t *testing.T, ctx context.Context, image string) (*Runtime, string) {
	t.Helper()
	cluster := testClusterName()
	removeClusterAfter(t, cluster)
	r, err := New(ctx, Options{Cluster: cluster, Image: image, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, cluster
}

// removeClusterAfter removes every object of the cluster when the test
// ends, whatever state it left.
func removeClusterAfter(t *testing.T, cluster string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := RemoveCluster(ctx, cluster, nil); err != nil {
			t.Errorf("clean up cluster %s: %v", cluster, err)
		}
	})
}
