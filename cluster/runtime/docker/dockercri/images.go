package dockercri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/image"

	"github.com/klab-dev/klab/cluster/app/standin"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
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

// pullTimeout bounds one pull, so that a registry that never answers
// cannot hold a pod's worker for ever (upstream's kubelet cancels a pull
// that makes no progress for a minute).
const pullTimeout = 2 * time.Minute

// PullImage pulls an image through the engine, as the kubelet's image
// service asks containerd to. klab's own images are never pulled: they
// are built on the machine, and klab's workload image answers to every
// tag, as in the in-process runtime, where the app reports its tag as its
// version so that a rolling update from klab/app:v1 to klab/app:v2 shows
// the change: a missing klab/app:<tag> is klab/app:latest tagged anew.
// A failed pull returns the engine's message and what to do offline.
func (r *Runtime) PullImage(ctx context.Context, name string) (cri.Image, error) {
	if r.closed.Load() {
		return cri.Image{}, errClosed
	}
	if r.isOwnImage(name) {
		img, err := r.ImageStatus(ctx, name)
		if !errors.Is(err, cri.ErrImageNotFound) || !r.isAppImage(name) {
			return img, err
		}
		latest := r.cfg.AppImage + ":latest"
		if _, err := r.docker.ImageInspect(ctx, latest); err != nil {
			return cri.Image{}, r.errImageAbsent(name)
		}
		if err := r.docker.ImageTag(ctx, latest, name); err != nil {
			return cri.Image{}, fmt.Errorf("pull image %q: tag %s as %s: %w", name, latest, name, err)
		}
		r.logger.Info("Tagged the workload image", "image", name, "from", latest)
		return r.ImageStatus(ctx, name)
	}
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	if err := r.pull(ctx, name); err != nil {
		return cri.Image{}, r.errPull(name, err)
	}
	r.logger.Info("Pulled image", "image", name)
	return r.ImageStatus(ctx, name)
}

// pull asks the engine to pull name and reads its progress to the end:
// the engine reports a failure after the transfer began as an error
// message in the stream, not as the call's error.
func (r *Runtime) pull(ctx context.Context, name string) error {
	body, err := r.docker.ImagePull(ctx, name, image.PullOptions{})
	if err != nil {
		return err
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the engine's pull progress: %w", err)
		}
		if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
			return errors.New(msg.ErrorDetail.Message)
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
	}
}

// errPull is a failed pull's error: the engine's words, then what a
// student can do when the machine is offline.
func (r *Runtime) errPull(name string, err error) error {
	return fmt.Errorf("pull image %q: %w; klab could not download the image (is this machine offline, or the registry unreachable?): put it on the Docker engine (\"docker load -i <file>\" or \"docker build -t <name> .\"), use %s:<tag>, or an image klab stands in for offline (%s)",
		name, err, r.cfg.AppImage, strings.Join(standin.Names(), ", "))
}

// isOwnImage reports whether name is one of klab's images, which are
// built on the machine and never pulled: the workload image (any tag) and
// the node image.
func (r *Runtime) isOwnImage(name string) bool {
	ref, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return false
	}
	for _, own := range []string{r.cfg.AppImage, labels.NodeImage} {
		if o, err := reference.ParseNormalizedNamed(own); err == nil && ref.Name() == o.Name() {
			return true
		}
	}
	return false
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
