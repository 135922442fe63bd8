package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
)

// ErrUnavailable is wrapped by errors saying that no Docker engine answers:
// Docker is not installed, not running, or DOCKER_HOST points nowhere.
// Callers choose the local runtime instead when they see it.
var ErrUnavailable = errors.New("no Docker engine answers")

// pingTimeout bounds Ping: a running engine answers in milliseconds, and
// `klab up` asks before choosing a runtime, so a dead socket must not make
// the user wait.
const pingTimeout = 2 * time.Second

// defaultSocket is where the engine listens unless DOCKER_HOST says
// otherwise.
const defaultSocket = "/var/run/docker.sock"

// newClient returns a client for the engine the environment names
// (DOCKER_HOST, DOCKER_CERT_PATH, ...), speaking whatever API version the
// engine supports.
func newClient() (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return cli, nil
}

// Ping checks that a Docker engine answers, within about two seconds. Its
// error wraps ErrUnavailable.
func Ping(ctx context.Context) error {
	cli, err := newClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	return ping(ctx, cli)
}

// EngineVersion returns the version of the Docker engine that answers,
// within about two seconds; its error wraps ErrUnavailable.
func EngineVersion(ctx context.Context) (string, error) {
	cli, err := newClient()
	if err != nil {
		return "", err
	}
	defer cli.Close()
	if err := ping(ctx, cli); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	v, err := cli.ServerVersion(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return v.Version, nil
}

func ping(ctx context.Context, cli *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		return fmt.Errorf("%w at %s (start Docker, or use the local runtime): %v", ErrUnavailable, cli.DaemonHost(), err)
	}
	return nil
}

// engineSocket returns the host path of the engine's unix socket, which
// kubelets get mounted to create pods. An engine reached otherwise (tcp://,
// ssh://) still listens on the default socket on its own machine, where
// bind mounts are resolved.
func engineSocket(cli *client.Client) string {
	if path, ok := strings.CutPrefix(cli.DaemonHost(), "unix://"); ok && path != "" {
		return path
	}
	return defaultSocket
}

// notFound reports whether err says the object does not exist.
func notFound(err error) bool { return cerrdefs.IsNotFound(err) }
