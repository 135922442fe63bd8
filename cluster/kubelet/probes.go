package kubelet

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// probeKind is liveness, readiness or startup.
type probeKind string

const (
	liveness  probeKind = "Liveness"
	readiness probeKind = "Readiness"
	startup   probeKind = "Startup"
)

// Upstream's probe defaults.
const (
	defaultPeriodSeconds    = 10
	defaultTimeoutSeconds   = 1
	defaultSuccessThreshold = 1
	defaultFailureThreshold = 3
)

// probeManager runs a worker per probe of each running container
// (upstream's prober manager). Workers belong to one container ID: a
// restarted container gets fresh workers and fresh results. Probe timings
// are the pod's own and are not scaled by the lab's speed.
type probeManager struct {
	k *Kubelet

	mu      sync.Mutex
	workers map[probeKey]*probeWorker
	results map[string]*containerResults
	warned  map[string]bool
	wg      sync.WaitGroup
}

type probeKey struct {
	containerID string
	kind        probeKind
}

// containerResults are one container's probe results.
type containerResults struct {
	ready   bool
	started bool
	// restart is set when liveness or startup failed: the pod worker
	// kills the container.
	restart *killRequest
}

// killRequest asks the pod worker to kill a container.
type killRequest struct {
	message string
	// grace overrides the pod's termination grace (the probe's own
	// terminationGracePeriodSeconds).
	grace *int64
}

func newProbeManager(k *Kubelet) *probeManager {
	return &probeManager{k: k, workers: map[probeKey]*probeWorker{}, results: map[string]*containerResults{}, warned: map[string]bool{}}
}

// ensure starts the workers of a running container's probes.
func (m *probeManager) ensure(pod *v1.Pod, c *v1.Container, cs cri.ContainerStatus, podIP string) {
	probes := map[probeKind]*v1.Probe{liveness: c.LivenessProbe, readiness: c.ReadinessProbe, startup: c.StartupProbe}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.k.ctx.Err() != nil {
		return
	}
	for kind, p := range probes {
		if p == nil {
			continue
		}
		key := probeKey{cs.ID, kind}
		if _, ok := m.workers[key]; ok {
			continue
		}
		if m.results[cs.ID] == nil {
			m.results[cs.ID] = &containerResults{}
		}
		w := &probeWorker{
			m: m, key: key, pod: pod, container: c.DeepCopy(), probe: p, podIP: podIP,
			startedAt: cs.StartedAt, stop: make(chan struct{}),
		}
		m.workers[key] = w
		m.wg.Add(1)
		go w.run()
	}
}

// ready reports a container's readiness: true without a readiness probe.
func (m *probeManager) ready(c *v1.Container, id string) bool {
	if c.ReadinessProbe == nil {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.results[id]
	return r != nil && r.ready
}

// started reports whether a container's startup probe has succeeded:
// true without one.
func (m *probeManager) started(c *v1.Container, id string) bool {
	if c.StartupProbe == nil {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.results[id]
	return r != nil && r.started
}

// restartWanted returns the kill a failed liveness or startup probe asks
// for.
func (m *probeManager) restartWanted(id string) (killRequest, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.results[id]; r != nil && r.restart != nil {
		return *r.restart, true
	}
	return killRequest{}, false
}

// stopContainer stops a container's workers and drops its results.
func (m *probeManager) stopContainer(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if key.containerID == id {
			close(w.stop)
			delete(m.workers, key)
		}
	}
	delete(m.results, id)
}

// stopPod stops the workers of every container of a pod.
func (m *probeManager) stopPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if w.pod.UID == uid {
			close(w.stop)
			delete(m.workers, key)
			delete(m.results, key.containerID)
		}
	}
}

// stopAll stops every worker and waits for them.
func (m *probeManager) stopAll() {
	m.mu.Lock()
	for key, w := range m.workers {
		close(w.stop)
		delete(m.workers, key)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// warnOnce records a ProbeWarning event once per container and probe.
func (m *probeManager) warnOnce(w *probeWorker, output string) {
	key := fmt.Sprintf("%s/%s/%s", w.pod.UID, w.container.Name, w.key.kind)
	m.mu.Lock()
	seen := m.warned[key]
	m.warned[key] = true
	m.mu.Unlock()
	if !seen {
		m.k.rec.pod(w.pod, w.container.Name, v1.EventTypeWarning, eventProbeWarning,
			fmt.Sprintf("%s probe warning: %s; klab counts it as succeeding", w.key.kind, output))
	}
}

// probeWorker probes one container periodically.
type probeWorker struct {
	m         *probeManager
	key       probeKey
	pod       *v1.Pod
	container *v1.Container
	probe     *v1.Probe
	podIP     string
	startedAt time.Time
	stop      chan struct{}

	last   probeResult
	streak int
}

func orDefault(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

// run probes until stopped: the first time when the initial delay is
// over, then every period.
func (w *probeWorker) run() {
	defer w.m.wg.Done()
	k := w.m.k
	period := time.Duration(orDefault(w.probe.PeriodSeconds, defaultPeriodSeconds)) * time.Second
	if delay := w.startedAt.Add(time.Duration(w.probe.InitialDelaySeconds) * time.Second).Sub(k.clock.Now()); delay > 0 {
		t := k.clock.NewTimer(delay)
		select {
		case <-w.stop:
			t.Stop()
			return
		case <-t.C():
		}
	}
	ticker := k.clock.NewTicker(period)
	defer ticker.Stop()
	for {
		if !w.doProbe() {
			return
		}
		select {
		case <-w.stop:
			return
		case <-ticker.C():
		}
	}
}

// doProbe probes once and records the result when a threshold is
// crossed; it reports whether to keep probing.
func (w *probeWorker) doProbe() bool {
	m, k := w.m, w.m.k
	if w.key.kind != startup && w.container.StartupProbe != nil && !m.started(w.container, w.key.containerID) {
		return true // liveness and readiness wait for startup to succeed
	}
	timeout := time.Duration(orDefault(w.probe.TimeoutSeconds, defaultTimeoutSeconds)) * time.Second
	result, output := runProbe(k.ctx, w.probe, w.container, w.podIP, timeout)
	select {
	case <-w.stop:
		return false
	default:
	}
	if result == probeUnsupported {
		m.warnOnce(w, output)
		result = probeSuccess
	}
	if result == probeFailure {
		k.rec.pod(w.pod, w.container.Name, v1.EventTypeWarning, eventUnhealthy, fmt.Sprintf("%s probe failed: %s", w.key.kind, output))
	}
	if result == w.last {
		w.streak++
	} else {
		w.last, w.streak = result, 1
	}
	threshold := orDefault(w.probe.FailureThreshold, defaultFailureThreshold)
	if result == probeSuccess {
		threshold = orDefault(w.probe.SuccessThreshold, defaultSuccessThreshold)
	}
	if int32(w.streak) < threshold {
		return true
	}
	return w.record(result)
}

// record stores a result that crossed its threshold and wakes the pod's
// worker if it changed anything.
func (w *probeWorker) record(result probeResult) bool {
	m := w.m
	m.mu.Lock()
	r := m.results[w.key.containerID]
	if r == nil || m.workers[w.key] != w {
		m.mu.Unlock()
		return false
	}
	changed, keepGoing := false, true
	switch w.key.kind {
	case readiness:
		changed = r.ready != (result == probeSuccess)
		r.ready = result == probeSuccess
	case startup:
		if result == probeSuccess {
			changed, r.started, keepGoing = !r.started, true, false
		} else {
			changed, keepGoing = true, false
			r.restart = &killRequest{
				message: fmt.Sprintf("Container %s failed startup probe, will be restarted", w.container.Name),
				grace:   w.probe.TerminationGracePeriodSeconds,
			}
		}
	case liveness:
		if result == probeFailure {
			changed, keepGoing = true, false
			r.restart = &killRequest{
				message: fmt.Sprintf("Container %s failed liveness probe, will be restarted", w.container.Name),
				grace:   w.probe.TerminationGracePeriodSeconds,
			}
		}
	}
	m.mu.Unlock()
	if changed {
		m.k.workers.wakeUp(w.pod.UID)
	}
	return keepGoing
}
