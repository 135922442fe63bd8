package daemonset

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// updateDaemonSetStatus counts, over the nodes: those that should run a
// pod (desired), those of them that have one (current), the ready,
// available and up-to-date ones among those (looking at each node's
// oldest pod), and the nodes running a pod they should not (misscheduled).
func (dsc *Controller) updateDaemonSetStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string, updateObservedGen bool) error {
	byNode, err := dsc.getNodesToDaemonPods(ctx, ds)
	if err != nil {
		return fmt.Errorf("couldn't get node to daemon pod mapping for daemon set %q: %w", ds.Name, err)
	}
	now := metav1.NewTime(dsc.failedPodsBackoff.Clock.Now())
	var st appsv1.DaemonSetStatus
	for _, node := range nodes {
		shouldRun, _ := nodeShouldRunDaemonPod(node, ds)
		pods := byNode[node.Name]
		if !shouldRun {
			if len(pods) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		sort.Sort(podByCreationTimestampAndPhase(pods))
		pod := pods[0]
		if controllerutil.IsPodReady(pod) {
			st.NumberReady++
			if controllerutil.IsPodAvailable(pod, ds.Spec.MinReadySeconds, now) {
				st.NumberAvailable++
			}
		}
		if isPodUpdated(pod, hash) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	if err := dsc.storeDaemonSetStatus(ctx, ds, st, updateObservedGen); err != nil {
		return fmt.Errorf("error storing status for daemon set %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	// Ready pods turn available minReadySeconds later; nothing else
	// wakes the DaemonSet then.
	if ds.Spec.MinReadySeconds > 0 && st.NumberReady != st.NumberAvailable {
		dsc.enqueueAfter(ds, time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}

// storeDaemonSetStatus writes the counters unless nothing changed and the
// generation is observed. A conflict is retried once on a fresh read.
func (dsc *Controller) storeDaemonSetStatus(ctx context.Context, ds *appsv1.DaemonSet, st appsv1.DaemonSetStatus, updateObservedGen bool) error {
	cur := ds.Status
	if cur.DesiredNumberScheduled == st.DesiredNumberScheduled &&
		cur.CurrentNumberScheduled == st.CurrentNumberScheduled &&
		cur.NumberMisscheduled == st.NumberMisscheduled &&
		cur.NumberReady == st.NumberReady &&
		cur.UpdatedNumberScheduled == st.UpdatedNumberScheduled &&
		cur.NumberAvailable == st.NumberAvailable &&
		cur.NumberUnavailable == st.NumberUnavailable &&
		cur.ObservedGeneration >= ds.Generation {
		return nil
	}
	client := dsc.client.AppsV1().DaemonSets(ds.Namespace)
	toUpdate := ds.DeepCopy()
	for i := 0; ; i++ {
		if updateObservedGen {
			toUpdate.Status.ObservedGeneration = ds.Generation
		}
		toUpdate.Status.DesiredNumberScheduled = st.DesiredNumberScheduled
		toUpdate.Status.CurrentNumberScheduled = st.CurrentNumberScheduled
		toUpdate.Status.NumberMisscheduled = st.NumberMisscheduled
		toUpdate.Status.NumberReady = st.NumberReady
		toUpdate.Status.UpdatedNumberScheduled = st.UpdatedNumberScheduled
		toUpdate.Status.NumberAvailable = st.NumberAvailable
		toUpdate.Status.NumberUnavailable = st.NumberUnavailable
		_, err := client.UpdateStatus(ctx, toUpdate, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if i >= statusUpdateRetries {
			return err
		}
		if toUpdate, err = client.Get(ctx, ds.Name, metav1.GetOptions{}); err != nil {
			return err
		}
	}
}
