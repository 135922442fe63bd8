package nodelifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

var (
	// UnreachableTaintTemplate is the taint of a node whose kubelet stopped
	// posting status: its Ready condition is Unknown.
	UnreachableTaintTemplate = &v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}
	// NotReadyTaintTemplate is the taint of a node that reports itself not
	// ready: its Ready condition is False.
	NotReadyTaintTemplate = &v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute}

	// nodeConditionToTaintKey says which NoSchedule taint a node gets for
	// a condition in a given status.
	nodeConditionToTaintKey = map[v1.NodeConditionType]map[v1.ConditionStatus]string{
		v1.NodeReady: {
			v1.ConditionFalse:   v1.TaintNodeNotReady,
			v1.ConditionUnknown: v1.TaintNodeUnreachable,
		},
		v1.NodeMemoryPressure:     {v1.ConditionTrue: v1.TaintNodeMemoryPressure},
		v1.NodeDiskPressure:       {v1.ConditionTrue: v1.TaintNodeDiskPressure},
		v1.NodeNetworkUnavailable: {v1.ConditionTrue: v1.TaintNodeNetworkUnavailable},
		v1.NodePIDPressure:        {v1.ConditionTrue: v1.TaintNodePIDPressure},
	}

	// conditionTaintKeys are the taint keys nodeConditionToTaintKey hands
	// out: the NoSchedule taints this controller owns, with unschedulable.
	conditionTaintKeys = map[string]bool{
		v1.TaintNodeNotReady:           true,
		v1.TaintNodeUnreachable:        true,
		v1.TaintNodeNetworkUnavailable: true,
		v1.TaintNodeMemoryPressure:     true,
		v1.TaintNodeDiskPressure:       true,
		v1.TaintNodePIDPressure:        true,
	}

	// updateTaintBackoff is how often a taint change is retried on a
	// conflict (upstream's UpdateTaintBackoff).
	updateTaintBackoff = wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Jitter: 1.0}
)

// taintExists reports whether taints hold one with the key and effect of t.
func taintExists(taints []v1.Taint, t *v1.Taint) bool {
	for i := range taints {
		if taints[i].MatchTaint(t) {
			return true
		}
	}
	return false
}

// taintString names a taint as kubectl does: "key:Effect" (or
// "key=value:Effect").
func taintString(t *v1.Taint) string { return t.ToString() }

// swapNodeControllerTaint stamps taintsToAdd with the current time, puts
// them on the node and takes taintsToRemove off it.
func (c *Controller) swapNodeControllerTaint(ctx context.Context, taintsToAdd, taintsToRemove []*v1.Taint, node *v1.Node) error {
	now := metav1.NewTime(c.clock.Now())
	stamped := make([]*v1.Taint, 0, len(taintsToAdd))
	for _, t := range taintsToAdd {
		t := *t
		t.TimeAdded = &now
		stamped = append(stamped, &t)
	}
	if err := c.addOrUpdateTaintOnNode(ctx, node.Name, stamped...); err != nil {
		return fmt.Errorf("taint node %s: %w", node.Name, err)
	}
	if err := c.removeTaintOffNode(ctx, node.Name, node, taintsToRemove...); err != nil {
		return fmt.Errorf("remove taints from node %s: %w", node.Name, err)
	}
	return nil
}

// addOrUpdateTaintOnNode adds the taints to the node, or updates the ones
// it already has with the same key and effect. The first read may come
// from the API server's cache (resourceVersion 0); a conflict retries with
// a fresh read.
func (c *Controller) addOrUpdateTaintOnNode(ctx context.Context, nodeName string, taints ...*v1.Taint) error {
	if len(taints) == 0 {
		return nil
	}
	return c.editNodeTaints(ctx, nodeName, func(current []v1.Taint) ([]v1.Taint, []v1.Taint) {
		out := append([]v1.Taint(nil), current...)
		var changed []v1.Taint
	next:
		for _, t := range taints {
			for i := range out {
				if !out[i].MatchTaint(t) {
					continue
				}
				if !apiequality.Semantic.DeepEqual(out[i], *t) {
					out[i] = *t
					changed = append(changed, *t)
				}
				continue next
			}
			out = append(out, *t)
			changed = append(changed, *t)
		}
		return out, changed
	}, TransitionTaintAdded)
}

// removeTaintOffNode removes the taints (matched by key and effect) from
// the node. node, when given, is what the caller last saw: if it has none
// of the taints, nothing is sent.
func (c *Controller) removeTaintOffNode(ctx context.Context, nodeName string, node *v1.Node, taints ...*v1.Taint) error {
	if len(taints) == 0 {
		return nil
	}
	if node != nil {
		found := false
		for _, t := range taints {
			found = found || taintExists(node.Spec.Taints, t)
		}
		if !found {
			return nil
		}
	}
	return c.editNodeTaints(ctx, nodeName, func(current []v1.Taint) ([]v1.Taint, []v1.Taint) {
		var out, removed []v1.Taint
		for i := range current {
			gone := false
			for _, t := range taints {
				gone = gone || current[i].MatchTaint(t)
			}
			if gone {
				removed = append(removed, current[i])
			} else {
				out = append(out, current[i])
			}
		}
		return out, removed
	}, TransitionTaintRemoved)
}

// editNodeTaints reads the node, lets edit compute its new taints and
// patches them in, retrying on conflict. kind names the transition
// reported for each changed taint.
func (c *Controller) editNodeTaints(ctx context.Context, nodeName string, edit func([]v1.Taint) (taints, changed []v1.Taint), kind string) error {
	firstTry := true
	var changed []v1.Taint
	err := retry.RetryOnConflict(updateTaintBackoff, func() error {
		opts := metav1.GetOptions{}
		if firstTry {
			// The API server's cache is cheaper; a conflict means it was
			// stale, and the retry reads the latest.
			opts.ResourceVersion = "0"
			firstTry = false
		}
		old, err := c.client.CoreV1().Nodes().Get(ctx, nodeName, opts)
		if err != nil {
			return err
		}
		var taints []v1.Taint
		taints, changed = edit(old.Spec.Taints)
		if len(changed) == 0 {
			return nil
		}
		return patchNodeTaints(ctx, c, old, taints)
	})
	if err != nil {
		return err
	}
	for i := range changed {
		c.observe(Transition{Kind: kind, Node: nodeName, Taint: taintString(&changed[i])})
	}
	return nil
}

// patchNodeTaints replaces the node's taints with a strategic merge patch
// that carries old's resourceVersion. spec.taints has no merge key, so the
// patch replaces the whole list; the resourceVersion makes a concurrent
// change of the taints a conflict instead of a lost update.
func patchNodeTaints(ctx context.Context, c *Controller, old *v1.Node, taints []v1.Taint) error {
	base := old.DeepCopy()
	base.ResourceVersion = ""
	oldData, err := json.Marshal(base)
	if err != nil {
		return fmt.Errorf("encode node %s: %w", old.Name, err)
	}
	updated := old.DeepCopy()
	updated.Spec.Taints = taints
	newData, err := json.Marshal(updated)
	if err != nil {
		return fmt.Errorf("encode node %s: %w", old.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Node{})
	if err != nil {
		return fmt.Errorf("make taint patch for node %s: %w", old.Name, err)
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}
