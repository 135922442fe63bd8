package nodelifecycle

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// doNoScheduleTaintingPass makes the node's NoSchedule taints match its
// conditions and spec.unschedulable (upstream's TaintNodesByCondition), so
// that the scheduler, which only reads taints, keeps new pods off a node
// that is not ready, under pressure or cordoned.
func (c *Controller) doNoScheduleTaintingPass(ctx context.Context, nodeName string) error {
	node, err := c.nodeLister.Get(nodeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var want []v1.Taint
	for _, cond := range node.Status.Conditions {
		if key, ok := nodeConditionToTaintKey[cond.Type][cond.Status]; ok {
			want = append(want, v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule})
		}
	}
	if node.Spec.Unschedulable {
		want = append(want, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
	}
	// The NoSchedule taints this controller owns that the node has now.
	var have []v1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == v1.TaintEffectNoSchedule && (t.Key == v1.TaintNodeUnschedulable || conditionTaintKeys[t.Key]) {
			have = append(have, t)
		}
	}
	var toAdd, toRemove []*v1.Taint
	for i := range want {
		if !taintExists(have, &want[i]) {
			toAdd = append(toAdd, &want[i])
		}
	}
	for i := range have {
		if !taintExists(want, &have[i]) {
			toRemove = append(toRemove, &have[i])
		}
	}
	if len(toAdd) == 0 && len(toRemove) == 0 {
		return nil
	}
	return c.swapNodeControllerTaint(ctx, toAdd, toRemove, node)
}
