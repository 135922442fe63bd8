package kubelet

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/kubelet/labels"
)

const (
	// housekeepingPeriod is how often the kubelet relists the runtime and
	// cleans up pods that are no longer wanted (upstream's 2 s).
	housekeepingPeriod = 2 * time.Second
	// orphanGrace is the time an orphaned container (its pod is gone from
	// the API and the kubelet never saw it go) gets to stop.
	orphanGrace = 2 * time.Second
)

// newPodInformer watches the pods bound to this node, as upstream's API
// pod source does (a field selector on spec.nodeName).
func newPodInformer(client kubernetes.Interface, node string) cache.SharedIndexInformer {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=" + node }))
	return factory.Core().V1().Pods().Informer()
}

// isMirrorPod reports whether a pod is the API's copy of a static pod.
func isMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[annotationConfigMirror]
	return ok
}

// podEventHandler routes watch events: mirror pods to the mirror
// manager, every other pod of this node to its worker. Handlers only
// hand over the pod; the workers do the work.
func (k *Kubelet) podEventHandler() cache.ResourceEventHandler {
	upsert := func(obj any) {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.NodeName != k.cfg.NodeName {
			return
		}
		if isMirrorPod(pod) {
			k.mirrors.observe(pod)
			return
		}
		k.workers.update(pod)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, obj any) { upsert(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			pod, ok := obj.(*v1.Pod)
			if !ok {
				return
			}
			if isMirrorPod(pod) {
				k.mirrors.observe(nil)
				return
			}
			k.workers.remove(pod)
		},
	}
}

// runtimeEventsLoop wakes a pod's worker as soon as one of its containers
// starts or exits (upstream's evented PLEG); the relist in housekeeping
// catches anything missed.
func (k *Kubelet) runtimeEventsLoop() {
	events := k.runtime.Events()
	for {
		select {
		case <-k.ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				k.log.Warn("container runtime closed its event stream")
				return
			}
			if uid := ev.Labels[labels.PodUID]; uid != "" {
				k.workers.wakeUp(types.UID(uid))
			}
		}
	}
}

// housekeepingLoop relists the runtime and removes what no pod wants.
func (k *Kubelet) housekeepingLoop() {
	ticker := k.clock.NewTicker(housekeepingPeriod)
	defer ticker.Stop()
	seen := map[types.UID]string{}
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-ticker.C():
		}
		if err := k.housekeeping(k.ctx, seen); err != nil && k.ctx.Err() == nil {
			k.log.Warn("housekeeping", "err", err)
		}
	}
}

// housekeeping is one relist (upstream's generic PLEG relist plus
// HandlePodCleanups): a pod whose containers changed since the last look
// has its worker woken; sandboxes and containers of pods that the API no
// longer has, and that no worker is ending, are stopped and removed.
func (k *Kubelet) housekeeping(ctx context.Context, seen map[types.UID]string) error {
	pods, err := listRuntimePods(ctx, k.runtime)
	if err != nil {
		return err
	}
	synced := k.podInformer != nil && k.podInformer.HasSynced()
	for uid, rp := range pods {
		fp := fingerprint(rp)
		if seen[uid] != fp {
			seen[uid] = fp
			k.workers.wakeUp(uid)
		}
		if !synced || k.workers.known(uid) || k.inAPI(uid) {
			continue
		}
		k.rec.step(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: rp.name, Namespace: rp.namespace, UID: uid}}, "", StepOrphan, "")
		if err := k.killAll(ctx, nil, rp, orphanGrace); err != nil {
			return fmt.Errorf("kill orphaned pod %s/%s: %w", rp.namespace, rp.name, err)
		}
		if err := k.removeRuntimePod(ctx, rp); err != nil {
			return fmt.Errorf("remove orphaned pod %s/%s: %w", rp.namespace, rp.name, err)
		}
	}
	for uid := range seen {
		if _, ok := pods[uid]; !ok {
			delete(seen, uid)
		}
	}
	k.workers.pruneTombstones(k.clock.Now())
	k.crashBackOff.GC()
	k.imageBackOff.GC()
	return nil
}

// inAPI reports whether the informer holds a pod with this UID.
func (k *Kubelet) inAPI(uid types.UID) bool {
	for _, obj := range k.podInformer.GetStore().List() {
		if pod, ok := obj.(*v1.Pod); ok && pod.UID == uid {
			return true
		}
	}
	return false
}

// fingerprint summarises a runtime pod's state, to notice changes
// between relists.
func fingerprint(rp *runtimePod) string {
	var parts []string
	for _, sb := range rp.sandboxes {
		parts = append(parts, fmt.Sprintf("%s:%v", sb.ID, sb.Ready))
	}
	for _, c := range rp.containers {
		parts = append(parts, fmt.Sprintf("%s:%s", c.ID, c.State))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
