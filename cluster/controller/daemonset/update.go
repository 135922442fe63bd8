package daemonset

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// rollingUpdate takes one step of a RollingUpdate. Without surge it
// deletes old pods (the manage loop then creates new ones) while no more
// than maxUnavailable nodes lack an available pod; old pods that are not
// available go regardless, as they cost nothing. With surge it creates new
// pods beside old ones, at most maxSurge at a time (more where the old pod
// is not available), and deletes each old pod once the new one on its
// node is available. A deleted pod does not count as unavailable, so that
// an update still progresses while nodes are down.
func (dsc *Controller) rollingUpdate(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := dsc.getNodesToDaemonPods(ctx, ds)
	if err != nil {
		return fmt.Errorf("couldn't get node to daemon pod mapping for daemon set %q: %w", ds.Name, err)
	}
	maxSurge, maxUnavailable, desired, err := dsc.updatedDesiredNodeCounts(ds, nodes, byNode)
	if err != nil {
		return fmt.Errorf("couldn't get unavailable numbers: %w", err)
	}
	now := metav1.NewTime(dsc.failedPodsBackoff.Clock.Now())
	available := func(pod *corev1.Pod) bool { return controllerutil.IsPodAvailable(pod, ds.Spec.MinReadySeconds, now) }
	// Map order is random; sorted nodes make a step deterministic.
	names := make([]string, 0, len(byNode))
	for name := range byNode {
		names = append(names, name)
	}
	sort.Strings(names)

	if maxSurge == 0 {
		var unavailable int
		var replace, candidates []string
		for _, name := range names {
			newPod, oldPod, ok := findUpdatedPodsOnNode(byNode[name], hash)
			if !ok {
				// Duplicates: the manage loop cleans this node first.
				unavailable++
				continue
			}
			switch {
			case oldPod == nil && newPod == nil, oldPod != nil && newPod != nil:
				// The manage loop creates or deletes here.
				unavailable++
			case newPod != nil:
				if !available(newPod) {
					unavailable++
				}
			case !available(oldPod):
				replace = append(replace, oldPod.Name)
				unavailable++
			case unavailable >= maxUnavailable:
				// No room left for candidates.
			default:
				candidates = append(candidates, oldPod.Name)
			}
		}
		room := min(max(maxUnavailable-unavailable, 0), len(candidates))
		return dsc.syncNodes(ctx, ds, append(replace, candidates[:room]...), nil, hash)
	}

	var oldPodsToDelete, shouldNotRunPodsToDelete, candidateNewNodes, allowedNewNodes []string
	var surging, availableCount int
	for _, name := range names {
		newPod, oldPod, ok := findUpdatedPodsOnNode(byNode[name], hash)
		if !ok {
			surging++
			continue
		}
		switch {
		case oldPod != nil && available(oldPod), oldPod == nil && newPod != nil && available(newPod):
			availableCount++
		}
		switch {
		case oldPod == nil:
			// The manage loop handles this node.
		case newPod == nil:
			node, err := dsc.nodeLister.Get(name)
			if err != nil {
				return fmt.Errorf("couldn't get node for nodeName %q: %w", name, err)
			}
			shouldRun, _ := nodeShouldRunDaemonPod(node, ds)
			switch {
			case !available(oldPod) && !shouldRun:
				oldPodsToDelete = append(oldPodsToDelete, oldPod.Name)
			case !available(oldPod):
				// Replacing an unavailable pod costs nothing.
				allowedNewNodes = append(allowedNewNodes, name)
			case !shouldRun:
				shouldNotRunPodsToDelete = append(shouldNotRunPodsToDelete, oldPod.Name)
			case surging < maxSurge:
				candidateNewNodes = append(candidateNewNodes, name)
			}
		default:
			if !available(newPod) {
				surging++
				continue
			}
			oldPodsToDelete = append(oldPodsToDelete, oldPod.Name)
		}
	}
	// A pod on a node the DaemonSet left goes only once as many pods are
	// available elsewhere as are wanted: with surge, the owner expects no
	// loss of availability.
	if deletable := min(availableCount-desired, len(shouldNotRunPodsToDelete)); deletable > 0 {
		for _, name := range shouldNotRunPodsToDelete[:deletable] {
			if _, err := dsc.podLister.Pods(ds.Namespace).Get(name); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return fmt.Errorf("couldn't get pod which should be deleted due to scheduling constraints %q: %w", name, err)
			}
			oldPodsToDelete = append(oldPodsToDelete, name)
		}
	}
	room := min(max(maxSurge-surging, 0), len(candidateNewNodes))
	return dsc.syncNodes(ctx, ds, oldPodsToDelete, append(allowedNewNodes, candidateNewNodes[:room]...), hash)
}

// findUpdatedPodsOnNode splits a node's live pods into the one of the
// current revision and the old one; ok is false when there are two of
// either.
func findUpdatedPodsOnNode(pods []*corev1.Pod, hash string) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if isPodUpdated(pod, hash) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = pod
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = pod
		}
	}
	return newPod, oldPod, true
}

// updatedDesiredNodeCounts counts the nodes that should run a pod (adding
// those without one to byNode) and resolves maxSurge and maxUnavailable
// against that number, both rounding up. A DaemonSet that allows neither
// may still have one node unavailable, or no update could ever proceed.
func (dsc *Controller) updatedDesiredNodeCounts(ds *appsv1.DaemonSet, nodes []*corev1.Node, byNode map[string][]*corev1.Pod) (maxSurge, maxUnavailable, desired int, err error) {
	for _, node := range nodes {
		if shouldRun, _ := nodeShouldRunDaemonPod(node, ds); !shouldRun {
			continue
		}
		desired++
		if _, ok := byNode[node.Name]; !ok {
			byNode[node.Name] = nil
		}
	}
	if maxUnavailable, err = unavailableCount(ds, desired); err != nil {
		return 0, 0, 0, fmt.Errorf("invalid value for MaxUnavailable: %w", err)
	}
	if maxSurge, err = surgeCount(ds, desired); err != nil {
		return 0, 0, 0, fmt.Errorf("invalid value for MaxSurge: %w", err)
	}
	if desired > 0 && maxUnavailable == 0 && maxSurge == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable, desired, nil
}

func rollingUpdateParams(ds *appsv1.DaemonSet) *appsv1.RollingUpdateDaemonSet {
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return nil
	}
	return ds.Spec.UpdateStrategy.RollingUpdate
}

func unavailableCount(ds *appsv1.DaemonSet, numberToSchedule int) (int, error) {
	r := rollingUpdateParams(ds)
	if r == nil || r.MaxUnavailable == nil {
		return 0, nil
	}
	return intstr.GetScaledValueFromIntOrPercent(r.MaxUnavailable, numberToSchedule, true)
}

func surgeCount(ds *appsv1.DaemonSet, numberToSchedule int) (int, error) {
	r := rollingUpdateParams(ds)
	if r == nil || r.MaxSurge == nil {
		return 0, nil
	}
	return intstr.GetScaledValueFromIntOrPercent(r.MaxSurge, numberToSchedule, true)
}

// allowsSurge reports whether a node may run an old and a new pod at once.
func allowsSurge(ds *appsv1.DaemonSet) bool {
	n, err := surgeCount(ds, 1)
	return err == nil && n != 0
}
