package statefulset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/controller/internal/history"
)

// The labels every StatefulSet Pod carries, upstream's
// (apps/v1 StatefulSetPodNameLabel and PodIndexLabel): a Service can
// select one Pod by its name, and a Pod can read its own ordinal.
const (
	podNameLabel  = appsv1.StatefulSetPodNameLabel
	podIndexLabel = appsv1.PodIndexLabel
)

// revisionSets are the two templates a sync works with: the set as of its
// current revision and as of its update revision.
type revisionSets struct {
	current, update                 *appsv1.StatefulSet
	currentRevision, updateRevision *appsv1.ControllerRevision
}

// sync converges one StatefulSet; it is safe to run any number of times.
func (ssc *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a malformed key will never become valid
	}
	set, err := ssc.setLister.StatefulSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // its Pods and revisions go with it through the garbage collector
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil // validation refuses such a set; nothing to do
	}
	revisions, err := ssc.listRevisions(ctx, set, selector)
	if err != nil {
		return err
	}
	history.Sort(revisions)
	current, update, collisionCount, err := ssc.getStatefulSetRevisions(ctx, set, revisions)
	if err != nil {
		return err
	}
	sets := revisionSets{currentRevision: current, updateRevision: update}
	if sets.current, err = applyRevision(set, current); err != nil {
		return err
	}
	if sets.update, err = applyRevision(set, update); err != nil {
		return err
	}

	pods, err := ssc.claimPods(ctx, set, selector)
	if err != nil {
		return err
	}
	// Pods are the set's by their ControllerRef and their name.
	replicas := int(ptr.Deref(set.Spec.Replicas, 1))
	byOrdinal := map[int]*corev1.Pod{}
	var owned []*corev1.Pod
	var condemned []int // ordinals at or above replicas, highest first below
	for _, pod := range pods {
		ordinal, ok := ordinalOf(set, pod)
		if !ok {
			continue
		}
		byOrdinal[ordinal] = pod
		owned = append(owned, pod)
		if ordinal >= replicas {
			condemned = append(condemned, ordinal)
		}
	}
	manageErr := ssc.manage(ctx, set, sets, replicas, byOrdinal, condemned)
	if err := ssc.updateStatus(ctx, set, sets, collisionCount, byOrdinal); err != nil {
		return err
	}
	if manageErr != nil {
		return manageErr
	}
	if err := ssc.truncateHistory(ctx, set, owned, revisions, current, update); err != nil {
		return err
	}
	// A Ready Pod becomes Available minReadySeconds later without an
	// event to say so: look again then, as upstream re-queues the set.
	if set.Spec.MinReadySeconds > 0 {
		now := metav1.Now()
		for _, pod := range byOrdinal {
			if isHealthy(pod) && !controllerutil.IsPodAvailable(pod, set.Spec.MinReadySeconds, now) {
				return controllerutil.RequeueAfter(time.Duration(set.Spec.MinReadySeconds) * time.Second)
			}
		}
	}
	return nil
}

// claimPods returns the set's Pods as upstream's getPodsForStatefulSet
// does: the ones its ControllerRef names, plus orphans that match its
// selector and are named as its members (<set>-<ordinal>), which it adopts;
// owned Pods that stopped matching are released.
func (ssc *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, error) {
	// All of the namespace's Pods: owned ones that stopped matching must
	// be released.
	pods, err := ssc.podLister.Pods(set.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	isMember := func(pod *corev1.Pod) bool {
		_, ok := ordinalOf(set, pod)
		return ok
	}
	m := controllerutil.NewPodControllerRefManager(controllerutil.PodControl{Client: ssc.client, Recorder: ssc.recorder}, set, selector, controllerKind, ssc.canAdopt(set))
	return m.ClaimPods(ctx, pods, isMember)
}

// manage creates the missing Pods and removes the condemned ones, in order
// unless the set's policy is Parallel, then takes the next step of a
// rolling update.
func (ssc *Controller) manage(ctx context.Context, set *appsv1.StatefulSet, sets revisionSets, replicas int, byOrdinal map[int]*corev1.Pod, condemned []int) error {
	ordered := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	for i := range replicas {
		pod := byOrdinal[i]
		switch {
		case pod == nil:
			if err := ssc.createPod(ctx, set, newVersionedPod(sets, i)); err != nil {
				return err
			}
			if ordered {
				return nil // the next waits for this one to be Running and Ready
			}
		case pod.DeletionTimestamp != nil:
			// A Pod on its way out keeps its name until it is gone; it
			// is made again then.
			if ordered {
				return nil
			}
		case pod.Status.Phase == corev1.PodFailed:
			// A failed Pod is replaced under the same identity.
			if err := ssc.deletePod(ctx, set, pod); err != nil {
				return err
			}
			if ordered {
				return nil
			}
		case ordered && !isAvailable(set, pod, metav1.Now()):
			// Wait for it to be Running, Ready and Available
			// (minReadySeconds) before touching any higher ordinal.
			return nil
		}
	}
	// Scale down from the highest ordinal, one at a time when ordered and
	// only while every Pod that stays is healthy (the loop above returned
	// otherwise).
	slices.Sort(condemned)
	slices.Reverse(condemned)
	for _, ordinal := range condemned {
		pod := byOrdinal[ordinal]
		if pod.DeletionTimestamp != nil {
			if ordered {
				return nil
			}
			continue
		}
		if err := ssc.deletePod(ctx, set, pod); err != nil {
			return err
		}
		if ordered {
			return nil
		}
	}
	return ssc.rollingUpdate(ctx, set, sets.updateRevision, replicas, byOrdinal)
}

// rollingUpdate deletes the highest-ordinal Pod, down to the partition,
// that is not of the update revision; the loop of manage makes it again
// from the update revision. It goes one Pod at a time: it waits while the
// Pod it last replaced (or any above the partition it passes) is not
// healthy, whatever the pod management policy. OnDelete leaves it to the
// user to delete Pods.
func (ssc *Controller) rollingUpdate(ctx context.Context, set *appsv1.StatefulSet, update *appsv1.ControllerRevision, replicas int, byOrdinal map[int]*corev1.Pod) error {
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return nil
	}
	updateMin := 0
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		updateMin = int(*ru.Partition)
	}
	for target := replicas - 1; target >= updateMin; target-- {
		pod := byOrdinal[target]
		if pod == nil {
			return nil // being made; wait for it
		}
		if pod.Labels[podRevisionLabel] != update.Name && pod.DeletionTimestamp == nil {
			return ssc.deletePod(ctx, set, pod)
		}
		if !isAvailable(set, pod, metav1.Now()) {
			return nil // wait for the updated Pod to be Available
		}
	}
	return nil
}

// newVersionedPod is the Pod of ordinal i at the revision it should run:
// during a RollingUpdate the ordinals below the partition keep the
// current revision; every other Pod, and every Pod of an OnDelete set, is
// made from the update revision.
func newVersionedPod(sets revisionSets, ordinal int) *corev1.Pod {
	set, revision := sets.update, sets.updateRevision
	if strategy := sets.current.Spec.UpdateStrategy; strategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		keep := int(sets.current.Status.CurrentReplicas)
		if strategy.RollingUpdate != nil && strategy.RollingUpdate.Partition != nil {
			keep = int(*strategy.RollingUpdate.Partition)
		}
		if ordinal < keep {
			set, revision = sets.current, sets.currentRevision
		}
	}
	pod := newPod(set, ordinal)
	pod.Labels[podRevisionLabel] = revision.Name
	return pod
}

// isHealthy reports a Pod that is Running and Ready and not on its way
// out: the one a rollout or an ordered scale may go past.
func isHealthy(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && controllerutil.IsPodReady(pod)
}

// isAvailable is upstream's isRunningAndAvailable for a Pod not on its way
// out: Running and Ready for at least the set's minReadySeconds.
func isAvailable(set *appsv1.StatefulSet, pod *corev1.Pod, now metav1.Time) bool {
	return isHealthy(pod) && controllerutil.IsPodAvailable(pod, set.Spec.MinReadySeconds, now)
}

// newPod is the Pod of ordinal i: the template with the set's identity
// labels, a hostname of its own name and the governing Service as
// subdomain, so that it resolves as <name>.<service>.<namespace>.
func newPod(set *appsv1.StatefulSet, ordinal int) *corev1.Pod {
	name := podName(set, ordinal)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       set.Namespace,
			Labels:          maps.Clone(set.Spec.Template.Labels),
			Annotations:     maps.Clone(set.Spec.Template.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, controllerKind)},
		},
		Spec: *set.Spec.Template.Spec.DeepCopy(),
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[podNameLabel] = name
	pod.Labels[podIndexLabel] = strconv.Itoa(ordinal)
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = set.Spec.ServiceName
	return pod
}

func (ssc *Controller) createPod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	_, err := ssc.client.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // made by an earlier sync the informer has not shown yet
	}
	if err != nil {
		ssc.recorder.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "create Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err)
		return err
	}
	ssc.recorder.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate", "create Pod %s in StatefulSet %s successful", pod.Name, set.Name)
	return nil
}

func (ssc *Controller) deletePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	err := ssc.client.CoreV1().Pods(set.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		ssc.recorder.Eventf(set, corev1.EventTypeWarning, "FailedDelete", "delete Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err)
		return err
	}
	ssc.recorder.Eventf(set, corev1.EventTypeNormal, "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful", pod.Name, set.Name)
	return nil
}

// updateStatus writes what the set's Pods are, which revisions they run,
// and the generation it acted on, when that changed. A RollingUpdate is
// complete when every Pod is of the update revision and Ready: the update
// revision then becomes the current one.
func (ssc *Controller) updateStatus(ctx context.Context, set *appsv1.StatefulSet, sets revisionSets, collisionCount int32, byOrdinal map[int]*corev1.Pod) error {
	status := appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation,
		CollisionCount:     &collisionCount,
		CurrentRevision:    sets.currentRevision.Name,
		UpdateRevision:     sets.updateRevision.Name,
	}
	for _, pod := range byOrdinal {
		if pod.DeletionTimestamp != nil {
			continue
		}
		status.Replicas++
		if pod.Status.Phase == corev1.PodRunning && controllerutil.IsPodReady(pod) {
			status.ReadyReplicas++
			if controllerutil.IsPodAvailable(pod, set.Spec.MinReadySeconds, metav1.Now()) {
				status.AvailableReplicas++
			}
		}
		if pod.Labels[podRevisionLabel] == sets.currentRevision.Name {
			status.CurrentReplicas++
		}
		if pod.Labels[podRevisionLabel] == sets.updateRevision.Name {
			status.UpdatedReplicas++
		}
	}
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		status.UpdatedReplicas == status.Replicas && status.ReadyReplicas == status.Replicas {
		status.CurrentReplicas = status.UpdatedReplicas
		status.CurrentRevision = status.UpdateRevision
	}
	if apiequality.Semantic.DeepEqual(status, set.Status) {
		return nil
	}
	updated := set.DeepCopy() // never mutate the informer's copy
	updated.Status = status
	_, err := ssc.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}

// podName is the name of ordinal i: "<set>-<i>".
func podName(set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

// ordinalOf reads a Pod's ordinal from its name; a Pod whose name is not
// "<set>-<n>" is not one of the set's.
func ordinalOf(set *appsv1.StatefulSet, pod *corev1.Pod) (int, bool) {
	suffix, ok := strings.CutPrefix(pod.Name, set.Name+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(suffix)
	if err != nil || n < 0 || strconv.Itoa(n) != suffix {
		return 0, false
	}
	return n, true
}
