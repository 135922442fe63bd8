package lab

import (
	"context"
	"errors"
	"log/slog"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker"
	"github.com/klab-dev/klab/cluster/runtime/local"
)

// ResolveRuntime turns a spec's runtime into the one that will run the
// cluster. "auto" means Docker when the engine answers, else local; why
// Docker was not chosen comes back as notDocker, for the one line `klab up`
// prints about it. "docker" fails, saying why, when the engine does not
// answer.
func ResolveRuntime(ctx context.Context, name string) (resolved string, notDocker error, err error) {
	switch name {
	case RuntimeLocal:
		return RuntimeLocal, nil, nil
	case RuntimeAuto:
		if err := docker.Ping(ctx); err != nil {
			return RuntimeLocal, err, nil
		}
		return RuntimeDocker, nil, nil
	case RuntimeDocker:
		if err := docker.Ping(ctx); err != nil {
			return "", err, i18n.Wrap(err, "lab.err.docker-unavailable")
		}
		return RuntimeDocker, nil, nil
	}
	return "", nil, i18n.NewError("spec.err.runtime", name)
}

func resolveRuntime(ctx context.Context, name string) (string, error) {
	rt, _, err := ResolveRuntime(ctx, name)
	return rt, err
}

// newRuntime makes the runtime that runs the cluster's components.
func newRuntime(ctx context.Context, name, cluster, dir, image string, logger *slog.Logger) (runtime.Runtime, error) {
	if name == RuntimeDocker {
		rt, err := docker.New(ctx, docker.Options{Cluster: cluster, Image: image, Logger: logger})
		if err != nil {
			return nil, i18n.Wrap(err, "lab.err.docker-unavailable")
		}
		return rt, nil
	}
	return local.New(local.Options{Cluster: cluster, Dir: dir, Logger: logger}), nil
}

// ensureImage builds klab/node:<build-id> from the klab binary unless the
// engine has it already. It comes first in Docker: every container, a
// node's pause container included, runs it, and a node whose containers
// are gone is made again from it.
func (b *bringUp) ensureImage(ctx context.Context) error {
	img, err := docker.EnsureImage(ctx, docker.ImageOptions{Binary: b.opts.Binary, BuildID: b.opts.BuildID, Logger: b.c.logger})
	if err != nil {
		return err
	}
	b.c.logger.Info("node image", "image", img.Node, "built", img.Built, "size", img.Size)
	b.image = img.Node
	return nil
}

// openRuntime opens the runtime that runs the cluster's components, and
// says how to undo what the steps will make with it: a new cluster's
// nodes and components are removed, data included; a kept cluster's
// components are killed (nothing they hold is worth flushing) and its data
// stays; a stopped cluster that is being started keeps what it had.
func (b *bringUp) openRuntime(ctx context.Context) error {
	rt, err := newRuntime(ctx, b.runtime, b.c.spec.Name, b.c.dir, b.image, b.c.logger)
	if err != nil {
		return err
	}
	b.c.rt = rt
	switch {
	case b.existing:
	case b.prev == nil:
		b.onFailure("remove the nodes and components", rt.Remove)
	default:
		b.onFailure("kill the components", func(ctx context.Context) error {
			infos, err := rt.List(ctx)
			if err != nil {
				return err
			}
			var errs []error
			for _, ci := range infos {
				errs = append(errs, rt.Kill(ctx, ci.Ref))
			}
			return errors.Join(errs...)
		})
	}
	return nil
}
