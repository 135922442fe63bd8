package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// Options configures a Runtime.
type Options struct {
	// Cluster is the cluster's name, part of every object's name.
	Cluster string
	// Image is the node image, "klab/node:<build-id>" (see EnsureImage).
	// A runtime that only works on an existing cluster (chaos, status)
	// may leave it empty; creating nodes and components needs it.
	Image string
	// Logger receives the runtime's own log (not the components'); nil
	// discards it.
	Logger *slog.Logger
}

// Runtime runs one cluster's components in Docker containers.
type Runtime struct {
	opts Options
	cli  *client.Client

	mu sync.Mutex
	// net caches the cluster's network once found or made.
	net *clusterNetwork
	// stoodDown holds the components this Runtime stood down and has not
	// stood up yet: their containers run, their components do not.
	stoodDown map[runtime.Ref]bool
}

var _ runtime.Runtime = (*Runtime)(nil)

// New connects to the Docker engine for one cluster. It creates nothing:
// the first CreateNode makes the cluster's network, and a cluster that
// exists already is found by its labels.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	if opts.Cluster == "" || labels.SanitizeName(opts.Cluster) != opts.Cluster {
		return nil, fmt.Errorf("cluster name %q cannot name Docker objects: use letters, digits, '_', '.' and '-'", opts.Cluster)
	}
	opts.Logger = componentbase.Logger(opts.Logger)
	cli, err := newClient()
	if err != nil {
		return nil, err
	}
	if err := ping(ctx, cli); err != nil {
		cli.Close()
		return nil, err
	}
	if opts.Image != "" {
		if _, err := cli.ImageInspect(ctx, opts.Image); err != nil {
			cli.Close()
			if notFound(err) {
				return nil, fmt.Errorf("the Docker engine has no image %s; klab builds it on `klab up`", opts.Image)
			}
			return nil, fmt.Errorf("inspect image %s: %w", opts.Image, err)
		}
	}
	return &Runtime{opts: opts, cli: cli}, nil
}

// Name returns "docker".
func (r *Runtime) Name() string { return Name }

// Close releases the connection to the engine; the cluster keeps running.
func (r *Runtime) Close() error { return r.cli.Close() }

// needImage fails when the runtime was made without an image to create
// containers from.
func (r *Runtime) needImage() error {
	if r.opts.Image == "" {
		return errors.New("the Docker runtime was opened without a node image and cannot create containers")
	}
	return nil
}

// containers lists the cluster's containers, running or not, that carry
// every label key=value given in pairs.
func (r *Runtime) containers(ctx context.Context, kv ...string) ([]container.Summary, error) {
	args := filters.NewArgs(filters.Arg("label", labels.ClusterFilter(r.opts.Cluster)))
	for i := 0; i+1 < len(kv); i += 2 {
		args.Add("label", labels.Filter(kv[i], kv[i+1]))
	}
	list, err := r.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		return nil, fmt.Errorf("list containers of cluster %s: %w", r.opts.Cluster, err)
	}
	return list, nil
}

// isNodeRole reports whether role is a node's, as a pause container
// carries it.
func isNodeRole(role string) bool {
	return role == runtime.RoleMaster || role == runtime.RoleWorker || role == runtime.RoleLB
}

// nodeContainers returns the pause containers of the cluster by node name.
func (r *Runtime) nodeContainers(ctx context.Context) (map[string]container.Summary, error) {
	list, err := r.containers(ctx)
	if err != nil {
		return nil, err
	}
	nodes := map[string]container.Summary{}
	for _, c := range list {
		if isNodeRole(c.Labels[labels.Role]) {
			nodes[c.Labels[labels.Node]] = c
		}
	}
	return nodes, nil
}

// nodeContainer returns a node's pause container, or an error wrapping
// runtime.ErrNotFound.
func (r *Runtime) nodeContainer(ctx context.Context, node string) (container.Summary, error) {
	list, err := r.containers(ctx, labels.Node, node)
	if err != nil {
		return container.Summary{}, err
	}
	for _, c := range list {
		if isNodeRole(c.Labels[labels.Role]) {
			return c, nil
		}
	}
	return container.Summary{}, fmt.Errorf("node %s of cluster %s: %w", node, r.opts.Cluster, runtime.ErrNotFound)
}

// componentContainer returns a component's container, or an error wrapping
// runtime.ErrNotFound.
func (r *Runtime) componentContainer(ctx context.Context, ref runtime.Ref) (container.Summary, error) {
	list, err := r.containers(ctx, labels.Role, labels.RoleComponent, labels.Node, ref.Node, labels.Component, ref.Component)
	if err != nil {
		return container.Summary{}, err
	}
	if len(list) == 0 {
		return container.Summary{}, fmt.Errorf("component %s of cluster %s: %w", ref, r.opts.Cluster, runtime.ErrNotFound)
	}
	return list[0], nil
}

// removeContainer force-removes a container, with its anonymous volumes;
// one already gone is no error.
func (r *Runtime) removeContainer(ctx context.Context, id string) error {
	err := r.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !notFound(err) {
		return err
	}
	return nil
}

// isNotFound reports whether err wraps runtime.ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, runtime.ErrNotFound) }
