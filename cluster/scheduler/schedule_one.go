package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	"github.com/klab-dev/klab/cluster/scheduler/internal/queue"
)

// runScheduling starts the scheduling loop, which runs until ctx (the
// leader's) ends or the scheduler stops. It first waits for the informers
// to fill the cache, as upstream does before its first cycle.
func (s *Scheduler) runScheduling(leaderCtx context.Context) {
	// The shutdown reads schedCancel under mu once the scheduler is
	// stopping: either it finds this loop's, or the loop never starts.
	s.mu.Lock()
	if s.life.Stopping() {
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(leaderCtx)
	s.schedCancel = cancel
	s.schedWG.Add(1)
	s.mu.Unlock()
	loop := func() {
		defer s.schedWG.Done()
		defer cancel()
		if !s.waitForCacheSync(ctx) {
			return
		}
		s.life.Go(func() { s.queue.Run(ctx) })
		s.log.Info("scheduling")
		for ctx.Err() == nil {
			s.scheduleOne(ctx)
		}
	}
	if !s.life.Go(loop) {
		cancel()
		s.schedWG.Done()
	}
}

// pluginInformerGrace is how long the first cycle waits for the informers
// plugins asked for, once pods and nodes are in the cache.
const pluginInformerGrace = 5 * time.Second

// waitForCacheSync waits until the pod and node informers have listed
// everything; without them the scheduler would place pods on a cluster it
// has not seen. The informers plugins asked for (Services, ReplicaSets...)
// get a short grace on top: one for a resource the API server does not
// serve would never sync, and must not keep the scheduler from working.
func (s *Scheduler) waitForCacheSync(ctx context.Context) bool {
	// Plugins may have asked for informers after Start; start those too.
	s.informerFactory.Start(s.ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(),
		s.informerFactory.Core().V1().Pods().Informer().HasSynced,
		s.informerFactory.Core().V1().Nodes().Informer().HasSynced) {
		return false
	}
	graceCtx, cancel := context.WithTimeout(ctx, pluginInformerGrace)
	defer cancel()
	for typ, synced := range s.informerFactory.WaitForCacheSync(graceCtx.Done()) {
		if !synced {
			s.log.Warn("informer not synced; scheduling without it", "type", typ.String())
		}
	}
	return ctx.Err() == nil
}

// scheduleOne is one scheduling cycle: pop a pod, find it a node on a
// fresh snapshot, assume it there and hand it to a binding goroutine; or
// record why it fits nowhere and put it back in the queue.
func (s *Scheduler) scheduleOne(ctx context.Context) {
	pInfo, err := s.queue.Pop(ctx)
	if err != nil {
		return
	}
	podSchedulingCycle := s.queue.SchedulingCycle()
	pod := pInfo.Pod
	if s.skipPodSchedule(pod) {
		return
	}

	start := time.Now()
	s.cache.UpdateSnapshot(s.snapshot)
	d := &Decision{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Attempt: pInfo.Attempts, Time: start}
	state := framework.NewCycleState()
	host, err := s.algo.schedulePod(ctx, state, pod, d)
	var assumed *v1.Pod
	if err == nil {
		// The pod now counts against host in the cache, so the next
		// cycle can start before the binding lands.
		assumed = pod.DeepCopy()
		assumed.Spec.NodeName = host
		err = s.cache.AssumePod(assumed)
	}
	d.Cycle = time.Since(start)
	s.stats.observeCycle(d.Cycle)
	if err != nil {
		if ctx.Err() != nil {
			// Stopping: the cycle was cut short, not the pod's fault. The
			// next leader will try it.
			return
		}
		var fitErr *FitError
		if errors.As(err, &fitErr) {
			// preemption.go: make room on a node, if lower-priority pods hold it.
			if _, perr := s.preempt(ctx, state, pod, fitErr); perr != nil {
				s.log.Info("preemption failed", "pod", d.Pod(), "err", perr)
			}
		}
		s.recordFailure(ctx, pInfo, podSchedulingCycle, d, err)
		return
	}
	d.Result, d.Node = ResultScheduled, host
	s.record(d)
	s.bindWG.Add(1)
	go s.bindingCycle(pInfo, podSchedulingCycle, assumed, d)
}

// skipPodSchedule reports whether a popped pod is not to be scheduled: it
// is being deleted, or it is already assumed or bound (it came back to the
// queue through an update while its binding was in flight).
func (s *Scheduler) skipPodSchedule(pod *v1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		s.recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "skip schedule deleting pod: %v/%v", pod.Namespace, pod.Name)
		return true
	}
	if s.cache.IsAssumedPod(pod) {
		return true
	}
	// The informer may have confirmed the binding (so the pod is no longer
	// assumed) an instant before it takes the pod out of the queue.
	latest, err := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	return err == nil && latest.UID == pod.UID && latest.Spec.NodeName != ""
}

// record keeps a decision, counts it and streams it.
func (s *Scheduler) record(d *Decision) {
	s.decisions.add(d)
	if d.Result != ResultScheduled {
		// Scheduled pods count once bound.
		s.stats.count(d.Result)
	}
	published := *d
	s.hub.Publish(Event{Kind: EventDecision, Decision: &published, Time: d.Time})
	s.log.Debug("scheduling attempt", "pod", d.Pod(), "result", d.Result, "node", d.Node, "message", d.Message, "cycle", d.Cycle)
}

// recordFailure records a failed cycle and hands the pod back.
func (s *Scheduler) recordFailure(ctx context.Context, pInfo *queue.QueuedPodInfo, podSchedulingCycle int64, d *Decision, err error) {
	var fitErr *FitError
	unschedulable := errors.As(err, &fitErr) || errors.Is(err, errNoNodesAvailable)
	d.Result, d.Message = ResultError, err.Error()
	reason := v1.PodReasonSchedulerError
	var plugins []string
	var annotations map[string]*string
	if unschedulable {
		d.Result, reason = ResultUnschedulable, v1.PodReasonUnschedulable
		annotations = explain(d)
		if fitErr != nil {
			plugins = fitErr.UnschedulablePlugins
		}
	}
	s.record(d)
	s.handleSchedulingFailure(ctx, pInfo, podSchedulingCycle, reason, d.Message, plugins, annotations)
}

// bindingCycle binds an assumed pod through pods/binding. The Binding
// carries the klab.dev/ annotations, which the API server copies onto the
// pod with the node name: one write says where the pod goes and why.
func (s *Scheduler) bindingCycle(pInfo *queue.QueuedPodInfo, podSchedulingCycle int64, assumed *v1.Pod, d *Decision) {
	defer s.bindWG.Done()
	ctx := s.bindCtx
	annotations := map[string]string{}
	for k, v := range explain(d) {
		if v != nil {
			annotations[k] = *v
		}
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: assumed.Namespace, Name: assumed.Name, UID: assumed.UID, Annotations: annotations},
		Target:     v1.ObjectReference{Kind: "Node", Name: d.Node},
	}
	err := s.client.CoreV1().Pods(assumed.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
	if err == nil {
		s.stats.count(ResultScheduled)
		s.hub.Publish(Event{Kind: EventBind, Pod: d.Pod(), Node: d.Node})
		if !s.isKilled() {
			s.recorder.Eventf(assumed, nil, v1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %v/%v to %v", assumed.Namespace, assumed.Name, d.Node)
		}
		return
	}

	// The binding failed: free the node in the cache, which is like a
	// bound pod going away, so others may now fit.
	if ferr := s.cache.ForgetPod(assumed); ferr != nil {
		s.log.Error("scheduler cache ForgetPod failed", "pod", d.Pod(), "err", ferr)
	} else {
		s.queue.MoveAllToActiveOrBackoffQueue(nil)
	}
	// Upstream binds through its DefaultBinder plugin and says so.
	msg := fmt.Sprintf("running Bind plugin %q: %v", "DefaultBinder", err)
	s.decisions.setBindError(d, msg)
	s.stats.count(ResultError)
	s.hub.Publish(Event{Kind: EventBind, Pod: d.Pod(), Node: d.Node, Error: msg})
	s.log.Info("failed to bind pod", "pod", d.Pod(), "node", d.Node, "err", err)
	if s.isKilled() {
		return
	}
	s.handleSchedulingFailure(ctx, pInfo, podSchedulingCycle, v1.PodReasonSchedulerError, msg, nil, nil)
}

// handleSchedulingFailure puts a pod whose cycle or binding failed back in
// the queue, then tells the world, as upstream: a FailedScheduling event,
// the PodScheduled=False condition and, for an unschedulable pod, the
// klab.dev/ annotations. The queue comes first, so that the watch events
// of these writes find the pod already there.
func (s *Scheduler) handleSchedulingFailure(ctx context.Context, pInfo *queue.QueuedPodInfo, podSchedulingCycle int64, reason, msg string, plugins []string, annotations map[string]*string) {
	pod := pInfo.Pod
	cached, err := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	switch {
	case err != nil:
		s.log.Info("pod doesn't exist in informer cache", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	case cached.Spec.NodeName != "":
		s.log.Info("pod has been assigned to node; abort adding it back to queue", "pod", pod.Namespace+"/"+pod.Name, "node", cached.Spec.NodeName)
	default:
		pod = cached
		pInfo.Pod = cached
		pInfo.UnschedulablePlugins = plugins
		if err := s.queue.AddUnschedulableIfNotPresent(pInfo, podSchedulingCycle); err != nil {
			s.log.Debug("pod not requeued", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	}
	if s.isKilled() || ctx.Err() != nil {
		return
	}
	s.recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "%s", truncateMessage(msg))
	if err := s.updatePodScheduledCondition(ctx, pod, reason, msg); err != nil {
		s.log.Info("error updating pod condition", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	if annotations != nil {
		if err := s.patchAnnotations(ctx, pod, annotations); err != nil {
			s.log.Info("error annotating pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	}
}

// noteLengthLimit is the API's limit on an event's note.
const noteLengthLimit = 1024

// truncateMessage shortens a message to fit an event's note, as upstream.
func truncateMessage(msg string) string {
	if len(msg) <= noteLengthLimit {
		return msg
	}
	const suffix = " ..."
	return msg[:noteLengthLimit-len(suffix)] + suffix
}
