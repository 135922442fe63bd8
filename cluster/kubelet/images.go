package kubelet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/app/standin"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// pullFailures remembers the last error of each failing pull, for the
// ImagePullBackOff message ("Back-off pulling image "x": ErrImagePull:
// <why>").
type pullFailures struct {
	mu   sync.Mutex
	last map[string]pullFailure
}

type pullFailure struct {
	msg string
	at  time.Time
}

func (p *pullFailures) set(key, msg string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]pullFailure{}
	}
	if msg == "" {
		delete(p.last, key)
		return
	}
	p.last[key] = pullFailure{msg: msg, at: at}
}

func (p *pullFailures) get(key string) pullFailure {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last[key]
}

// pullPolicy is the container's imagePullPolicy, or the API's default
// when it is empty: Always for an untagged or :latest image, IfNotPresent
// otherwise.
func pullPolicy(c *v1.Container) v1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	image := c.Image
	if i := strings.Index(image, "@"); i >= 0 {
		return v1.PullIfNotPresent // pinned by digest
	}
	tag := ""
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		tag = image[i+1:]
	}
	if tag == "" || tag == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// ensureImage makes sure the container's image is on the node, following
// its pull policy (upstream's imageManager.EnsureImageExists). When a pull
// fails and klab has a stand-in for the image (package
// cluster/app/standin), it returns the stand-in's name, and an Event says
// why the stand-in runs. On failure it returns the waiting reason and
// message the container shows.
func (k *Kubelet) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container) (img cri.Image, standIn string, waiting *waitingReason) {
	img, waiting, pullErr := k.pullImage(ctx, pod, c)
	if pullErr == nil {
		return img, "", waiting
	}
	if si, ok := standin.Lookup(c.Image); ok {
		key := string(pod.UID) + "_" + c.Image
		k.pullErrors.set(key, "", time.Time{})
		k.imageBackOff.Reset(key)
		k.rec.pod(pod, c.Name, v1.EventTypeNormal, eventStandIn, standInMessage(c.Image, si, pullErr))
		return cri.Image{}, si.Name, nil
	}
	k.rec.pod(pod, c.Name, v1.EventTypeWarning, eventFailed, fmt.Sprintf("Failed to pull image %q: %v", c.Image, pullErr))
	return cri.Image{}, "", waiting
}

// standInMessage is the StandIn event's message: which stand-in runs,
// what it does, and why the real image could not be pulled.
func standInMessage(image string, si standin.Image, pullErr error) string {
	what := "it runs the container's command in klab's shell"
	if si.Kind == standin.Web {
		what = "it serves a welcome page on port 80"
	}
	return fmt.Sprintf("Running klab's stand-in for image %q (%s), because the image could not be pulled: %v", image, what, pullErr)
}

// pullImage is ensureImage without the stand-ins: pullErr is set when a
// pull was tried and failed (its Failed event is ensureImage's to record,
// since a stand-in may run instead).
func (k *Kubelet) pullImage(ctx context.Context, pod *v1.Pod, c *v1.Container) (_ cri.Image, _ *waitingReason, pullErr error) {
	policy := pullPolicy(c)
	img, err := k.runtime.ImageStatus(ctx, c.Image)
	present := err == nil
	if err != nil && !errors.Is(err, cri.ErrImageNotFound) {
		msg := fmt.Sprintf("Failed to inspect image %q: %v", c.Image, err)
		k.rec.pod(pod, c.Name, v1.EventTypeWarning, eventFailed, msg)
		return cri.Image{}, &waitingReason{Reason: "ImageInspectError", Message: msg}, nil
	}
	if policy == v1.PullNever || (policy == v1.PullIfNotPresent && present) {
		if present {
			k.rec.pod(pod, c.Name, v1.EventTypeNormal, eventPulled, fmt.Sprintf("Container image %q already present on machine", c.Image))
			return img, nil, nil
		}
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		k.rec.pod(pod, c.Name, v1.EventTypeWarning, eventErrImageNeverPull, msg)
		return cri.Image{}, &waitingReason{Reason: reasonErrImageNeverPull, Message: msg}, nil
	}
	key := string(pod.UID) + "_" + c.Image
	if k.imageBackOff.IsInBackOffSinceUpdate(key, k.clock.Now()) {
		k.rec.pod(pod, c.Name, v1.EventTypeNormal, eventBackOff, fmt.Sprintf("Back-off pulling image %q", c.Image))
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		if last := k.pullErrors.get(key); last.msg != "" {
			msg += ": " + reasonErrImagePull + ": " + last.msg
		}
		return cri.Image{}, &waitingReason{Reason: reasonImagePullBackOff, Message: msg}, nil
	}
	k.rec.pod(pod, c.Name, v1.EventTypeNormal, eventPulling, fmt.Sprintf("Pulling image %q", c.Image))
	start := k.clock.Now()
	img, err = k.runtime.PullImage(ctx, c.Image)
	if err != nil {
		k.imageBackOff.Next(key, k.clock.Now())
		k.pullErrors.set(key, err.Error(), k.clock.Now())
		return cri.Image{}, &waitingReason{Reason: reasonErrImagePull, Message: err.Error()}, err
	}
	took := k.clock.Since(start).Round(time.Millisecond)
	k.rec.pod(pod, c.Name, v1.EventTypeNormal, eventPulled,
		fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.", c.Image, took, took, img.Size))
	k.pullErrors.set(key, "", time.Time{})
	k.imageBackOff.GC()
	k.kickNodeStatus() // the node's image list changed
	return img, nil, nil
}

// imagePullRetryIn is how long until a container waiting in
// ImagePullBackOff may try again.
func (k *Kubelet) imagePullRetryIn(pod *v1.Pod, c *v1.Container) time.Duration {
	key := string(pod.UID) + "_" + c.Image
	last := k.pullErrors.get(key)
	return max(0, last.at.Add(k.imageBackOff.Get(key)).Sub(k.clock.Now()))
}
