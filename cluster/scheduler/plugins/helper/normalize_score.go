// Package helper holds what several in-tree plugins share, as upstream's
// pkg/scheduler/framework/plugins/helper does: the default score
// normalisation, the taint filter for NoSchedule/NoExecute taints, and the
// selector of a pod's siblings used by default topology spreading.
package helper

import "github.com/klab-dev/klab/cluster/scheduler/framework"

// DefaultNormalizeScore rescales raw scores from [0, max(scores)] onto
// [0, maxPriority] in place. With reverse, the scale is flipped so that the
// node with the highest raw score ends lowest (TaintToleration counts
// taints, and fewer is better). Raw scores are assumed non-negative.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores framework.NodeScoreList) *framework.Status {
	var maxCount int64
	for _, s := range scores {
		maxCount = max(maxCount, s.Score)
	}
	if maxCount == 0 {
		// Every node scored 0: without reverse they stay 0; reversed, none
		// is worse than another, so all get the top score.
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return nil
	}
	for i := range scores {
		score := maxPriority * scores[i].Score / maxCount
		if reverse {
			score = maxPriority - score
		}
		scores[i].Score = score
	}
	return nil
}
