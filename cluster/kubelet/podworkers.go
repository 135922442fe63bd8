package kubelet

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/klab-dev/klab/cluster/timing"
)

// Worker states, as upstream's pod workers name them.
const (
	WorkerSyncing     = "SyncPod"
	WorkerTerminating = "TerminatingPod"
	WorkerTerminated  = "TerminatedPod"
)

const (
	// resyncInterval is how often a worker looks at its pod when nothing
	// woke it (upstream's --sync-frequency, 1 min, scaled).
	resyncInterval = time.Minute
	// tombstoneTTL is how long a finished pod's UID is remembered, so a
	// late watch event does not start a worker for it again.
	tombstoneTTL = 2 * time.Minute
)

// podWorkers runs one goroutine per pod (upstream's pod workers): each
// owns its pod's sync, so a slow pod never holds up another, and updates
// that arrive while a sync runs are folded into the next one. Event
// handlers only record the newest pod and wake its worker.
type podWorkers struct {
	k *Kubelet

	mu         sync.Mutex
	workers    map[types.UID]*podWorker
	tombstones map[types.UID]time.Time
	// closed: the kubelet is stopping; no new workers start.
	closed bool
	wg     sync.WaitGroup
}

// podWorker is one pod's worker.
type podWorker struct {
	uid  types.UID
	wake chan struct{}

	mu      sync.Mutex
	pod     *v1.Pod
	gone    bool // the pod left the API
	state   string
	lastErr string
	synced  time.Time

	// admitted is touched only by the worker's goroutine.
	admitted bool
}

func newPodWorkers(k *Kubelet) *podWorkers {
	return &podWorkers{k: k, workers: map[types.UID]*podWorker{}, tombstones: map[types.UID]time.Time{}}
}

// update hands the newest version of a pod to its worker, starting one
// for a pod not seen before.
func (p *podWorkers) update(pod *v1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers[pod.UID]
	if w == nil {
		if _, done := p.tombstones[pod.UID]; done || p.closed || p.k.ctx.Err() != nil {
			return
		}
		w = &podWorker{uid: pod.UID, wake: make(chan struct{}, 1), state: WorkerSyncing, pod: pod}
		p.workers[pod.UID] = w
		p.wg.Add(1)
		go p.run(w)
		p.k.rec.step(pod, "", StepWorkerStarted, "")
		return
	}
	w.mu.Lock()
	w.pod = pod
	w.mu.Unlock()
	w.signal()
}

// remove tells a pod's worker that the pod left the API.
func (p *podWorkers) remove(pod *v1.Pod) {
	p.mu.Lock()
	w := p.workers[pod.UID]
	p.mu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	w.gone = true
	w.mu.Unlock()
	w.signal()
}

// wakeUp makes a pod's worker sync now (a container changed, a probe
// result flipped).
func (p *podWorkers) wakeUp(uid types.UID) {
	p.mu.Lock()
	w := p.workers[uid]
	p.mu.Unlock()
	if w != nil {
		w.signal()
	}
}

func (w *podWorker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// known reports whether a worker (or a recent tombstone) exists for uid.
func (p *podWorkers) known(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.workers[uid]
	_, dead := p.tombstones[uid]
	return ok || dead
}

// activePods are the pods admitted and not finished, but for one: what
// admission counts against the node's allocatable.
func (p *podWorkers) activePods(except types.UID) []*v1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*v1.Pod
	for uid, w := range p.workers {
		w.mu.Lock()
		if uid != except && w.state == WorkerSyncing && w.pod != nil && !isTerminal(w.pod.Status.Phase) {
			out = append(out, w.pod)
		}
		w.mu.Unlock()
	}
	return out
}

// pruneTombstones forgets old tombstones.
func (p *podWorkers) pruneTombstones(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, at := range p.tombstones {
		if now.Sub(at) > tombstoneTTL {
			delete(p.tombstones, uid)
		}
	}
}

// wait stops new workers from starting and blocks until every worker has
// returned (after the kubelet's context ended).
func (p *podWorkers) wait() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
}

// run is a worker's loop: sync, then sleep until woken or until the sync
// asked to be looked at again. Errors requeue after the worker back-off
// period (upstream's 10 s, scaled).
func (p *podWorkers) run(w *podWorker) {
	defer p.wg.Done()
	k := p.k
	timer := k.clock.NewTimer(k.scaled(resyncInterval))
	defer timer.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-k.ctx.Done():
				return
			case <-w.wake:
			case <-timer.C():
			}
		}
		w.mu.Lock()
		pod, gone, state := w.pod, w.gone, w.state
		w.mu.Unlock()

		next := k.scaled(resyncInterval)
		var err error
		finished := false
		switch {
		case gone || pod.DeletionTimestamp != nil:
			w.setState(WorkerTerminating)
			if err = k.terminatePod(k.ctx, pod, gone); err == nil {
				finished = true
			}
		case state == WorkerTerminated:
			// Done running; only a deletion brings more work.
		default:
			var res syncResult
			res, err = k.syncPod(k.ctx, w, pod)
			if res.terminal {
				w.setState(WorkerTerminated)
			}
			if res.requeue > 0 && res.requeue < next {
				next = res.requeue
			}
			if err == nil {
				k.rec.step(pod, "", StepSynced, "")
			}
		}
		if k.ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		w.synced = k.clock.Now()
		w.lastErr = ""
		if err != nil {
			w.lastErr = err.Error()
		}
		w.mu.Unlock()
		if finished {
			p.mu.Lock()
			delete(p.workers, w.uid)
			p.tombstones[w.uid] = k.clock.Now()
			p.mu.Unlock()
			return
		}
		if err != nil {
			k.log.Warn("error syncing pod, skipping", "pod", formatPod(pod), "err", err)
			next = min(next, k.scaled(timing.BackOffInitial))
		}
		timer.Reset(next)
	}
}

func (w *podWorker) setState(s string) {
	w.mu.Lock()
	w.state = s
	w.mu.Unlock()
}

// WorkerStatus is one pod worker as /debug/klab/status shows it.
type WorkerStatus struct {
	Namespace  string            `json:"namespace"`
	Name       string            `json:"name"`
	UID        string            `json:"uid"`
	State      string            `json:"state"`
	Phase      v1.PodPhase       `json:"phase,omitempty"`
	LastSync   time.Time         `json:"lastSync,omitzero"`
	LastError  string            `json:"lastError,omitempty"`
	Containers []ContainerReport `json:"containers,omitempty"`
}

// ContainerReport is one container of a pod in /debug/klab/status.
type ContainerReport struct {
	Name         string `json:"name"`
	State        string `json:"state"`
	Reason       string `json:"reason,omitempty"`
	Ready        bool   `json:"ready"`
	RestartCount int32  `json:"restartCount"`
}

// snapshot reports every worker.
func (p *podWorkers) snapshot() []WorkerStatus {
	p.mu.Lock()
	workers := make([]*podWorker, 0, len(p.workers))
	for _, w := range p.workers {
		workers = append(workers, w)
	}
	p.mu.Unlock()
	out := make([]WorkerStatus, 0, len(workers))
	for _, w := range workers {
		w.mu.Lock()
		ws := WorkerStatus{UID: string(w.uid), State: w.state, LastSync: w.synced, LastError: w.lastErr}
		pod := w.pod
		w.mu.Unlock()
		if pod != nil {
			base := p.k.statuses.base(pod)
			ws.Namespace, ws.Name, ws.Phase = pod.Namespace, pod.Name, base.Status.Phase
			for _, cs := range base.Status.ContainerStatuses {
				ws.Containers = append(ws.Containers, containerReport(cs))
			}
		}
		out = append(out, ws)
	}
	return out
}

func containerReport(cs v1.ContainerStatus) ContainerReport {
	r := ContainerReport{Name: cs.Name, Ready: cs.Ready, RestartCount: cs.RestartCount}
	switch {
	case cs.State.Running != nil:
		r.State = "running"
	case cs.State.Terminated != nil:
		r.State, r.Reason = "terminated", cs.State.Terminated.Reason
	case cs.State.Waiting != nil:
		r.State, r.Reason = "waiting", cs.State.Waiting.Reason
	}
	return r
}
