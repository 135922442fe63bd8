package dockercri

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/image"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// errImageAbsent is what ImageStatus and PullImage return for an image the
// engine does not have. The kubelet shows it as ErrImagePull, then
// ImagePullBackOff.
func (r *Runtime) errImageAbsent(name string) error {
	return fmt.Errorf("%w: %q: klab runs offline and cannot download images; the image must already be on this machine's Docker engine (put it there with \"docker load -i <file>\" or \"docker build -t <name> .\"), or use image %s:<tag>, which klab provides under every tag",
		cri.ErrImageNotFound, name, r.cfg.AppImage)
}

// ListImages lists the tagged images on the engine (for node status).
func (r *Runtime) ListImages(ctx context.Context) ([]cri.Image, error) {
	if r.closed.Load() {
		return nil, errClosed
	}
	summaries, err := r.docker.ImageList(ctx, image.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	var images []cri.Image
	for _, s := range summaries {
		var names []string
		for _, tag := range s.RepoTags {
			if tag != "<none>:<none>" {
				names = append(names, tag)
			}
		}
		if len(names) > 0 {
			images = append(images, cri.Image{ID: s.ID, Names: names, Size: s.Size})
		}
	}
	return images, nil
}

// ImageStatus returns an image on the engine, or an error wrapping
// cri.ErrImageNotFound.
func (r *Runtime) ImageStatus(ctx context.Context, name string) (cri.Image, error) {
	if r.closed.Load() {
		return cri.Image{}, errClosed
	}
	info, err := r.docker.ImageInspect(ctx, name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return cri.Image{}, r.errImageAbsent(name)
		}
		return cri.Image{}, fmt.Errorf("inspect image %q: %w", name, err)
	}
	return cri.Image{ID: info.ID, Names: info.RepoTags, Size: info.Size}, nil
}

// PullImage never downloads: there is no registry. An image the engine has
// is returned at once. klab's workload image answers to every tag, as in
// the in-process runtime, where the app reports its tag as its version so
// that a rolling update from klab/app:v1 to klab/app:v2 shows the change:
// a missing klab/app:<tag> is klab/app:latest tagged anew. Any other image
// fails with an error wrapping cri.ErrImageNotFound that says how to put it
// on the engine.
func (r *Runtime) PullImage(ctx context.Context, name string) (cri.Image, error) {
	img, err := r.ImageStatus(ctx, name)
	if !errors.Is(err, cri.ErrImageNotFound) {
		return img, err
	}
	if r.isAppImage(name) {
		latest := r.cfg.AppImage + ":latest"
		if _, err := r.docker.ImageInspect(ctx, latest); err == nil {
			if err := r.docker.ImageTag(ctx, latest, name); err != nil {
				return cri.Image{}, fmt.Errorf("pull image %q: tag %s as %s: %w", name, latest, name, err)
			}
			r.logger.Info("Tagged the workload image", "image", name, "from", latest)
			return r.ImageStatus(ctx, name)
		}
	}
	return cri.Image{}, r.errImageAbsent(name)
}

// isAppImage reports whether name is the workload image under a tag of its
// own (not latest, which is what the others are made from, and not a
// digest, which no tag can satisfy).
func (r *Runtime) isAppImage(name string) bool {
	ref, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return false
	}
	app, err := reference.ParseNormalizedNamed(r.cfg.AppImage)
	if err != nil || ref.Name() != app.Name() {
		return false
	}
	tagged, ok := ref.(reference.NamedTagged)
	_, digested := ref.(reference.Digested)
	return ok && !digested && tagged.Tag() != "latest"
}
