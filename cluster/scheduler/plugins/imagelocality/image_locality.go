// Package imagelocality favours nodes that already hold the pod's
// container images, so the pod starts without a long pull.
package imagelocality

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// Name is the plugin's name in profiles.
const Name = "ImageLocality"

// The score range runs between these two sizes, upstream's: about 90% of
// images on Docker Hub, compressed, fall between them.
const (
	mb                    int64 = 1024 * 1024
	minThreshold          int64 = 23 * mb
	maxContainerThreshold int64 = 1000 * mb
)

// ImageLocality scores nodes by the size of the pod's images they hold.
type ImageLocality struct {
	handle framework.Handle
}

var _ framework.ScorePlugin = &ImageLocality{}

// New builds the plugin. It reads the snapshot's node count through h.
func New(_ context.Context, h framework.Handle) (framework.Plugin, error) {
	if h == nil {
		return nil, fmt.Errorf("%s needs a framework handle", Name)
	}
	return &ImageLocality{handle: h}, nil
}

// Name returns the plugin's name.
func (pl *ImageLocality) Name() string { return Name }

// Score sums the sizes of the pod's images present on the node, each
// scaled by the share of nodes that hold it (an image on every node gives
// no node an edge, and scaling keeps pods from piling onto the first node
// that pulled it), then maps the sum from [23MB, 1000MB x containers] onto
// 0..100.
func (pl *ImageLocality) Score(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	lister := pl.handle.SnapshotSharedLister()
	if lister == nil {
		return 0, framework.AsStatus(fmt.Errorf("%s: no snapshot lister", Name))
	}
	nodeInfos, err := lister.List()
	if err != nil {
		return 0, framework.AsStatus(fmt.Errorf("listing nodes: %w", err))
	}
	sum := sumImageScores(nodeInfo, pod, len(nodeInfos))
	return calculatePriority(sum, len(pod.Spec.InitContainers)+len(pod.Spec.Containers)), nil
}

// ScoreExtensions returns nil: the scores are already 0..100.
func (pl *ImageLocality) ScoreExtensions() framework.ScoreExtensions { return nil }

// calculatePriority clamps sumScores to [minThreshold, maxThreshold] and
// scales it linearly onto 0..100.
func calculatePriority(sumScores int64, numContainers int) int64 {
	maxThreshold := maxContainerThreshold * int64(numContainers)
	sumScores = min(max(sumScores, minThreshold), maxThreshold)
	if maxThreshold <= minThreshold {
		// Only a pod without containers gets here; it has no images.
		return 0
	}
	return framework.MaxNodeScore * (sumScores - minThreshold) / (maxThreshold - minThreshold)
}

// sumImageScores adds up the scaled sizes of the pod's images (init
// containers included) found on the node.
func sumImageScores(nodeInfo *framework.NodeInfo, pod *v1.Pod, totalNumNodes int) int64 {
	var sum int64
	for _, containers := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range containers {
			if state, ok := nodeInfo.ImageStates[normalizedImageName(c.Image)]; ok {
				sum += scaledImageScore(state, totalNumNodes)
			}
		}
	}
	return sum
}

// scaledImageScore is the image's size times the share of nodes holding it.
func scaledImageScore(state *framework.ImageStateSummary, totalNumNodes int) int64 {
	if totalNumNodes == 0 {
		return 0
	}
	spread := float64(state.NumNodes) / float64(totalNumNodes)
	return int64(float64(state.Size) * spread)
}

// normalizedImageName adds the implicit ":latest" tag, as the container
// runtime reports images with a tag. Like upstream, it does not add the
// implicit docker.io/library/ prefix.
func normalizedImageName(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
		name += ":latest"
	}
	return name
}
