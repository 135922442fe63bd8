package inprocess

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/klab-dev/klab/cluster/app/standin"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// The repositories a node has, every tag of each.
const (
	// AppRepository is the demo workload: the app under every tag.
	AppRepository = "klab/app"
	// NodeRepository is klab's node image: the klab binary.
	NodeRepository = "klab/node"
)

// imageRef is an image reference split into repository and tag.
type imageRef struct {
	repo, tag string
}

func (i imageRef) String() string { return i.repo + ":" + i.tag }

// parseImage reads a reference to one of klab's images: "klab/app",
// "klab/app:v2" and "docker.io/klab/app:v2" all name klab/app. ok is false
// for any other image, and for digests, which klab's images do not have.
func parseImage(image string) (ref imageRef, ok bool) {
	name := strings.TrimPrefix(image, "docker.io/")
	if strings.Contains(name, "@") {
		return imageRef{}, false
	}
	repo, tag, hasTag := strings.Cut(name, ":")
	if !hasTag {
		tag = "latest"
	}
	if tag == "" || strings.ContainsAny(tag, "/:") || (repo != AppRepository && repo != NodeRepository) {
		return imageRef{}, false
	}
	return imageRef{repo: repo, tag: tag}, true
}

// imageID is the ID of a repository's image: every tag names the same
// program, so every tag has the same ID, as tags of one image do.
func imageID(repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// errImageAbsent is what ImageStatus and PullImage return for an image that
// is not one of klab's. The kubelet shows it as ErrImagePull, then
// ImagePullBackOff.
func errImageAbsent(image string) error {
	return fmt.Errorf("%w: %q: klab runs offline and cannot download images; this node has only %s:<any tag> and %s:<any tag> (use image %s:<tag>), and runs its stand-ins for %s",
		cri.ErrImageNotFound, image, AppRepository, NodeRepository, AppRepository, strings.Join(standin.Names(), ", "))
}

// ListImages lists klab/app and klab/node, with every tag used on the node
// so far (and latest).
func (r *Runtime) ListImages(ctx context.Context) ([]cri.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	var images []cri.Image
	for _, repo := range []string{AppRepository, NodeRepository} {
		names := []string{repo + ":latest"}
		for tag := range r.tags[repo] {
			if tag != "latest" {
				names = append(names, repo+":"+tag)
			}
		}
		sort.Strings(names[1:])
		images = append(images, cri.Image{ID: imageID(repo), Names: names, Size: r.imageSize})
	}
	return images, nil
}

// ImageStatus returns one of klab's images, or an error wrapping
// cri.ErrImageNotFound.
func (r *Runtime) ImageStatus(ctx context.Context, image string) (cri.Image, error) {
	ref, ok := parseImage(image)
	if !ok {
		return cri.Image{}, errImageAbsent(image)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return cri.Image{}, errClosed
	}
	return r.imageLocked(ref), nil
}

// PullImage succeeds at once for klab's images, which are always present,
// and fails for any other: there is nowhere to pull from.
func (r *Runtime) PullImage(ctx context.Context, image string) (cri.Image, error) {
	return r.ImageStatus(ctx, image)
}

// imageLocked returns the image ref names, remembering its tag.
func (r *Runtime) imageLocked(ref imageRef) cri.Image {
	if r.tags[ref.repo] == nil {
		r.tags[ref.repo] = map[string]bool{}
	}
	r.tags[ref.repo][ref.tag] = true
	return cri.Image{ID: imageID(ref.repo), Names: []string{ref.String()}, Size: r.imageSize}
}

// executableSize is the size of the klab binary, which is what klab's images
// contain (they are built FROM scratch with it); 0 if unknown.
func executableSize() int64 {
	path, err := os.Executable()
	if err != nil {
		return 0
	}
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}
