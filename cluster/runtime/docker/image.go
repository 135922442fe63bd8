package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"

	"github.com/klab-dev/klab/cluster/app/shell"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// ImageOptions says which klab binary EnsureImage puts in the images.
type ImageOptions struct {
	// Binary is the path of a static linux klab binary; "" means the
	// running one. $KLAB_BINARY overrides it.
	Binary string
	// BuildID tags the node image; "" derives it from the binary's
	// content.
	BuildID string
	// Logger receives the progress of the builds; nil discards it.
	Logger *slog.Logger
	// AppImage names the demo workload's image; "" means
	// "klab/app:latest". Tests name their own, so that they never retag
	// or remove the one a running cluster's pods use.
	AppImage string
}

// ImageInfo describes the images EnsureImage made sure of.
type ImageInfo struct {
	// Node is the node image, "klab/node:<build-id>"; App the demo
	// workload's, "klab/app:latest".
	Node string
	App  string
	// Built is set when at least one image had to be built.
	Built bool
	// Size is the node image's size in bytes.
	Size int64
}

// Paths inside the images.
const (
	binaryInImage = "/klab"
	// binaryInContext is the binary's name in the build context.
	binaryInContext = "klab"
	// rootfsInContext holds what the app image adds to the root: the
	// applet links and the directories a shell expects.
	rootfsInContext = "rootfs"
)

// buildIDPattern is what Docker accepts as a tag.
var buildIDPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// EnsureImage makes sure the node image klab/node:<build-id> and the demo
// workload image klab/app:latest exist in the engine, built from a klab
// binary. Both are FROM scratch with the binary as /klab: the node image
// runs `/klab component <name>`, the app image `/klab component app`.
//
// The build context is made in memory and the engine builds with its own
// builder; nothing is pulled, no Dockerfile is written to disk. An image
// whose io.klab.build-id label matches is kept as it is.
func EnsureImage(ctx context.Context, opts ImageOptions) (ImageInfo, error) {
	logger := componentbase.Logger(opts.Logger)
	binary, err := imageBinary(opts.Binary)
	if err != nil {
		return ImageInfo{}, err
	}
	cli, err := newClient()
	if err != nil {
		return ImageInfo{}, err
	}
	defer cli.Close()
	if err := ping(ctx, cli); err != nil {
		return ImageInfo{}, err
	}
	engine, err := cli.ServerVersion(ctx)
	if err != nil {
		return ImageInfo{}, fmt.Errorf("ask the Docker engine its platform: %w", err)
	}
	if engine.Os != "linux" {
		return ImageInfo{}, fmt.Errorf("the Docker engine runs %s containers; klab needs Linux containers", engine.Os)
	}
	if err := checkBinary(binary, engine.Arch); err != nil {
		return ImageInfo{}, err
	}
	id := opts.BuildID
	if id == "" {
		if id, err = binaryBuildID(binary); err != nil {
			return ImageInfo{}, err
		}
	}
	if !buildIDPattern.MatchString(id) {
		return ImageInfo{}, fmt.Errorf("build ID %q cannot be an image tag: use letters, digits, '_', '.' and '-', at most 128", id)
	}

	info := ImageInfo{Node: labels.NodeImage + ":" + id, App: opts.AppImage}
	if info.App == "" {
		info.App = labels.AppImage + ":latest"
	}
	builtNode, err := ensureImage(ctx, cli, logger, imageBuild{
		tag: info.Node, buildID: id, dockerfile: nodeDockerfile(), binary: binary,
	})
	if err != nil {
		return ImageInfo{}, err
	}
	builtApp, err := ensureImage(ctx, cli, logger, imageBuild{
		tag: info.App, buildID: id, dockerfile: appDockerfile(info.Node), applets: shell.Applets(),
	})
	if err != nil {
		return ImageInfo{}, err
	}
	info.Built = builtNode || builtApp
	node, err := cli.ImageInspect(ctx, info.Node)
	if err != nil {
		return ImageInfo{}, fmt.Errorf("inspect image %s: %w", info.Node, err)
	}
	info.Size = node.Size
	return info, nil
}

// nodeDockerfile is the node image: the binary alone, running one of its
// components.
func nodeDockerfile() string {
	return "FROM scratch\n" +
		"COPY " + binaryInContext + " " + binaryInImage + "\n" +
		`ENTRYPOINT ["` + binaryInImage + `", "component"]` + "\n"
}

// appDockerfile is the demo workload's image: the node image's only layer
// with another entrypoint. Building it FROM the node image, which the engine
// has, sends no binary and pulls nothing.
//
// It also carries the shell (cluster/app/shell) as busybox carries its
// tools: /bin/sh, /bin/ls, ... are links to the binary, which runs the
// tool its name says, so `kubectl exec -it <pod> -- sh` works in Docker
// as it does in process.
func appDockerfile(nodeImage string) string {
	return "FROM " + nodeImage + "\n" +
		"COPY " + rootfsInContext + "/ /\n" +
		`ENTRYPOINT ["` + binaryInImage + `", "component", "app"]` + "\n"
}

// imageBuild is one image to make sure of.
type imageBuild struct {
	tag, buildID, dockerfile string
	// binary, when set, is sent in the context as binaryInContext.
	binary string
	// applets, when set, are linked to the binary in rootfsInContext/bin.
	applets []string
}

// ensureImage builds b unless its tag already names an image of the same
// build, and reports whether it built.
func ensureImage(ctx context.Context, cli *client.Client, logger *slog.Logger, b imageBuild) (bool, error) {
	existing, err := cli.ImageInspect(ctx, b.tag)
	switch {
	case err == nil && existing.Config != nil && existing.Config.Labels[labels.BuildID] == b.buildID:
		logger.Debug("image up to date", "image", b.tag)
		return false, nil
	case err != nil && !notFound(err):
		return false, fmt.Errorf("inspect image %s: %w", b.tag, err)
	}
	logger.Info("building image", "image", b.tag)
	start := time.Now()
	buildContext := newBuildContext(b.dockerfile, b.binary, b.applets)
	defer buildContext.Close()
	resp, err := cli.ImageBuild(ctx, buildContext, build.ImageBuildOptions{
		Tags:        []string{b.tag},
		Labels:      map[string]string{labels.Role: labels.RoleImage, labels.BuildID: b.buildID},
		Remove:      true,
		ForceRemove: true,
		// The classic builder takes a plain tar context over the API;
		// BuildKit would need a session. Neither pulls a FROM scratch or
		// a local base image.
		Version: build.BuilderV1,
	})
	if err != nil {
		return false, fmt.Errorf("build image %s: %w", b.tag, err)
	}
	defer resp.Body.Close()
	if err := readBuildOutput(resp.Body, logger); err != nil {
		return false, fmt.Errorf("build image %s: %w", b.tag, err)
	}
	// A build that ends without an error message has tagged the image;
	// checking says so plainly if an engine behaves otherwise.
	if _, err := cli.ImageInspect(ctx, b.tag); err != nil {
		return false, fmt.Errorf("build image %s: the engine reported success but has no such image: %w", b.tag, err)
	}
	logger.Info("image built", "image", b.tag, "took", time.Since(start).Round(time.Millisecond))
	return true, nil
}

// newBuildContext streams the build context, a tar of the Dockerfile and
// the binary, from memory: the binary is read from its file as the engine
// consumes the stream, never copied to disk or held whole.
func newBuildContext(dockerfile, binary string, applets []string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeBuildContext(pw, dockerfile, binary, applets))
	}()
	return pr
}

// contextTime is the time of every file in a build context, so that the
// same binary gives the same context.
var contextTime = time.Unix(0, 0)

func writeBuildContext(w io.Writer, dockerfile, binary string, applets []string) error {
	tw := tar.NewWriter(w)
	if applets != nil {
		if err := writeRootfs(tw, applets); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{
		Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), ModTime: contextTime, Typeflag: tar.TypeReg,
	}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, dockerfile); err != nil {
		return err
	}
	if binary != "" {
		f, err := os.Open(binary)
		if err != nil {
			return fmt.Errorf("read the klab binary: %w", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("read the klab binary: %w", err)
		}
		if err := tw.WriteHeader(&tar.Header{
			Name: binaryInContext, Mode: 0o755, Size: st.Size(), ModTime: contextTime, Typeflag: tar.TypeReg,
		}); err != nil {
			return err
		}
		if _, err := io.Copy(tw, f); err != nil {
			return fmt.Errorf("read the klab binary %s: %w", binary, err)
		}
	}
	return tw.Close()
}

// writeRootfs adds rootfs/: /bin with a link to the binary for each
// applet, and the directories a shell expects (/tmp writable by all).
func writeRootfs(tw *tar.Writer, applets []string) error {
	dirs := []struct {
		name string
		mode int64
	}{{"", 0o755}, {"bin", 0o755}, {"etc", 0o755}, {"root", 0o700}, {"tmp", 0o1777}, {"var", 0o755}, {"var/tmp", 0o1777}}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{
			Name: path.Join(rootfsInContext, d.name) + "/", Mode: d.mode, ModTime: contextTime, Typeflag: tar.TypeDir,
		}); err != nil {
			return err
		}
	}
	for _, a := range applets {
		if err := tw.WriteHeader(&tar.Header{
			Name: path.Join(rootfsInContext, "bin", a), Linkname: binaryInImage, Mode: 0o777, ModTime: contextTime, Typeflag: tar.TypeSymlink,
		}); err != nil {
			return err
		}
	}
	return nil
}

// buildMessage is one message of the engine's build output, a stream of
// JSON objects.
type buildMessage struct {
	Stream string `json:"stream"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	// ErrorText is the older form of Error, which some engines send alone.
	ErrorText string `json:"error"`
}

// readBuildOutput consumes a build's output, logging its lines, and returns
// the error the engine reports in it. A build fails inside a successful HTTP
// response: the only sign is an error message in the stream.
func readBuildOutput(r io.Reader, logger *slog.Logger) error {
	dec := json.NewDecoder(r)
	var last []string
	for {
		var msg buildMessage
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read the engine's build output: %w", err)
		}
		switch {
		case msg.Error != nil && msg.Error.Message != "":
			return buildError(msg.Error.Message, last)
		case msg.ErrorText != "":
			return buildError(msg.ErrorText, last)
		}
		for _, line := range strings.Split(strings.TrimRight(msg.Stream, "\n"), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				logger.Debug("build", "output", line)
				last = append(last, line)
				if len(last) > 5 {
					last = last[1:]
				}
			}
		}
	}
}

func buildError(message string, last []string) error {
	if len(last) == 0 {
		return errors.New(strings.TrimSpace(message))
	}
	return fmt.Errorf("%s (after: %s)", strings.TrimSpace(message), strings.Join(last, " | "))
}
