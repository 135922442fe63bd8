package kubelet

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Static pod annotations and values, as upstream's kubelet types.
const (
	annotationConfigMirror = "kubernetes.io/config.mirror"
	annotationConfigSource = "kubernetes.io/config.source"
	annotationConfigHash   = "kubernetes.io/config.hash"
	annotationConfigSeen   = "kubernetes.io/config.seen"
	configSourceFile       = "file"
	systemNodeCritical     = "system-node-critical"
	// systemNodeCriticalPriority is scheduling.SystemCriticalPriority + 1000.
	systemNodeCriticalPriority int32 = 2000001000
)

// Health polling of static pods: kubeadm's readiness probe of the API
// server (every second, three failures), not scaled by the lab's speed.
const (
	staticHealthPeriod    = time.Second
	staticHealthTimeout   = time.Second
	staticHealthFailures  = 3
	staticExitCodeOnFault = 1
)

// mirrorManager keeps a mirror pod in the API for each static pod of the
// node (upstream's mirror client and static pod status): created when
// missing, replaced when deleted, its status following the component's
// health URL. The components themselves are run by the lab, not by this
// kubelet: the mirror pod is how they show in `kubectl get pods -n
// kube-system`.
type mirrorManager struct {
	k *Kubelet

	mu     sync.Mutex
	kicks  []chan struct{}
	states map[string]*staticState
}

func newMirrorManager(k *Kubelet) *mirrorManager {
	return &mirrorManager{k: k, states: map[string]*staticState{}}
}

// staticState is what the kubelet knows of one static pod's health.
type staticState struct {
	spec StaticPod
	hash string

	healthy      bool
	everHealthy  bool
	failures     int
	startedAt    time.Time
	restarts     int32
	down         *v1.ContainerStateTerminated
	lastTerm     *v1.ContainerStateTerminated
	lastCheckErr string
}

// mirrorName is <component>-<node>, as kubeadm's static pods show.
func (m *mirrorManager) mirrorName(sp StaticPod) string { return sp.Name + "-" + m.k.cfg.NodeName }

func staticHash(sp StaticPod) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%s|%v|%v", sp.Name, sp.Image, sp.HealthURL, sp.Ports, sp.Labels)))
	return hex.EncodeToString(sum[:16])
}

// run starts a poller per static pod.
func (m *mirrorManager) run() {
	for _, sp := range m.k.cfg.StaticPods {
		kick := make(chan struct{}, 1)
		st := &staticState{spec: sp, hash: staticHash(sp), startedAt: m.k.clock.Now()}
		m.mu.Lock()
		m.kicks = append(m.kicks, kick)
		m.states[sp.Name] = st
		m.mu.Unlock()
		m.k.life.Go(func() { m.poll(st, kick) })
	}
}

// observe is told of any change to a mirror pod of this node.
func (m *mirrorManager) observe(*v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.kicks {
		select {
		case k <- struct{}{}:
		default:
		}
	}
}

func (m *mirrorManager) poll(st *staticState, kick chan struct{}) {
	k := m.k
	client := &http.Client{Timeout: staticHealthTimeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: k.cfg.CAPool}, DisableKeepAlives: true,
	}}
	ticker := k.clock.NewTicker(staticHealthPeriod)
	defer ticker.Stop()
	for {
		ok, msg := checkHealth(k.ctx, client, st.spec.HealthURL)
		if k.ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		st.observe(ok, msg, k.clock.Now())
		m.mu.Unlock()
		if k.podInformer != nil && k.podInformer.HasSynced() {
			if err := m.reconcile(k.ctx, st); err != nil && k.ctx.Err() == nil {
				k.log.Warn("mirror pod", "name", m.mirrorName(st.spec), "err", err)
			}
		}
		select {
		case <-k.ctx.Done():
			return
		case <-ticker.C():
		case <-kick:
		}
	}
}

// checkHealth GETs a health URL: 2xx and 3xx are healthy. An empty URL
// is always healthy.
func checkHealth(ctx context.Context, client *http.Client, rawURL string) (bool, string) {
	if rawURL == "" {
		return true, ""
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", probeUserAgent)
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return true, ""
	}
	return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
}

// observe applies one health check: healthy at once on success, down
// after staticHealthFailures failures in a row. Coming back after being
// down counts as a restart, as the kubelet would have restarted the
// component's container.
func (st *staticState) observe(ok bool, msg string, now time.Time) {
	st.lastCheckErr = msg
	if ok {
		st.failures = 0
		if !st.healthy && st.down != nil {
			st.restarts++
			st.lastTerm, st.down = st.down, nil
			st.startedAt = now
		}
		st.healthy, st.everHealthy = true, true
		return
	}
	st.failures++
	if st.failures < staticHealthFailures || st.down != nil {
		return
	}
	st.healthy = false
	if st.everHealthy {
		st.down = &v1.ContainerStateTerminated{
			ExitCode: staticExitCodeOnFault, Reason: "Error",
			Message:   fmt.Sprintf("health check %s failed: %s", st.spec.HealthURL, msg),
			StartedAt: metav1.NewTime(st.startedAt), FinishedAt: metav1.NewTime(now),
		}
	}
}

// status is the mirror pod's status for the current health.
func (m *mirrorManager) status(st *staticState) v1.PodStatus {
	ip := m.k.cfg.NodeIP
	cs := v1.ContainerStatus{
		Name: st.spec.Name, Image: st.spec.Image, RestartCount: st.restarts,
		ContainerID: "klab://" + m.k.cfg.NodeName + "/" + st.spec.Name,
		Ready:       st.healthy, Started: ptr.To(true),
	}
	switch {
	case st.down != nil:
		cs.State.Terminated = st.down.DeepCopy()
		cs.State.Terminated.ContainerID = cs.ContainerID
		cs.Started = ptr.To(false)
	default:
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(st.startedAt)}
	}
	if st.lastTerm != nil {
		cs.LastTerminationState.Terminated = st.lastTerm.DeepCopy()
		cs.LastTerminationState.Terminated.ContainerID = cs.ContainerID
	}
	s := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{cs}}
	if ip != "" {
		s.HostIP, s.HostIPs, s.PodIP, s.PodIPs = ip, []v1.HostIP{{IP: ip}}, ip, []v1.PodIP{{IP: ip}}
	}
	ready := containersReadyCondition(s.ContainerStatuses, s.Phase)
	readyPod := ready
	readyPod.Type = v1.PodReady
	s.Conditions = []v1.PodCondition{
		boolCondition(v1.PodReadyToStartContainers, true, "", ""),
		boolCondition(v1.PodInitialized, true, "", ""),
		readyPod, ready,
		boolCondition(v1.PodScheduled, true, "", ""),
	}
	return s
}

// reconcile makes the API's mirror pod match: created if missing,
// replaced if it is being deleted or describes an older configuration,
// its status written when it changed.
func (m *mirrorManager) reconcile(ctx context.Context, st *staticState) error {
	k := m.k
	name := m.mirrorName(st.spec)
	obj, exists, err := k.podInformer.GetStore().GetByKey(metav1.NamespaceSystem + "/" + name)
	if err != nil {
		return err
	}
	m.mu.Lock()
	status := m.status(st)
	m.mu.Unlock()
	if exists {
		pod := obj.(*v1.Pod)
		if pod.DeletionTimestamp == nil && pod.Annotations[annotationConfigMirror] == st.hash {
			_, err := k.statuses.SetPodStatus(ctx, pod, status)
			return err
		}
		err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(pod.UID)),
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete mirror pod: %w", err)
		}
		k.statuses.forget(pod.UID)
		k.rec.step(pod, "", StepMirror, "deleted outdated mirror pod")
		return nil
	}
	created, err := k.client.CoreV1().Pods(metav1.NamespaceSystem).Create(ctx, m.mirrorPod(st), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // the informer has not caught up yet
	}
	if err != nil {
		return fmt.Errorf("create mirror pod: %w", err)
	}
	k.rec.step(created, "", StepMirror, "created mirror pod")
	_, err = k.statuses.SetPodStatus(ctx, created, status)
	return err
}

// mirrorPod is the API object of a static pod, as the kubelet creates it
// for a kubeadm manifest.
func (m *mirrorManager) mirrorPod(st *staticState) *v1.Pod {
	k := m.k
	container := v1.Container{
		Name: st.spec.Name, Image: st.spec.Image, ImagePullPolicy: v1.PullIfNotPresent,
		Ports: st.spec.Ports, ReadinessProbe: healthProbe(st.spec.HealthURL),
	}
	labels := map[string]string{"component": st.spec.Name, "tier": "control-plane"}
	maps.Copy(labels, st.spec.Labels)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.mirrorName(st.spec), Namespace: metav1.NamespaceSystem,
			Labels: labels,
			Annotations: map[string]string{
				annotationConfigHash: st.hash, annotationConfigMirror: st.hash,
				annotationConfigSeen:   k.clock.Now().UTC().Format(time.RFC3339Nano),
				annotationConfigSource: configSourceFile,
			},
		},
		Spec: v1.PodSpec{
			NodeName: k.cfg.NodeName, HostNetwork: true, RestartPolicy: v1.RestartPolicyAlways,
			PriorityClassName: systemNodeCritical, Priority: ptr.To(systemNodeCriticalPriority),
			Containers:  []v1.Container{container},
			Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}},
		},
	}
	if uid := k.nodeUID(); uid != "" {
		pod.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: k.cfg.NodeName, UID: uid, Controller: ptr.To(true),
		}}
	}
	return pod
}

// healthProbe shows the health URL in the mirror pod's spec as the
// readiness probe kubeadm would write.
func healthProbe(rawURL string) *v1.Probe {
	u, err := url.Parse(rawURL)
	if err != nil || rawURL == "" {
		return nil
	}
	host, portStr, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, portStr = u.Host, "80"
		if u.Scheme == "https" {
			portStr = "443"
		}
	}
	port, _ := strconv.Atoi(portStr)
	scheme := v1.URISchemeHTTP
	if u.Scheme == "https" {
		scheme = v1.URISchemeHTTPS
	}
	path := u.Path
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return &v1.Probe{
		ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
			Host: host, Path: path, Port: intstr.FromInt32(int32(port)), Scheme: scheme,
		}},
		PeriodSeconds: int32(staticHealthPeriod / time.Second), TimeoutSeconds: int32(staticHealthTimeout / time.Second),
		FailureThreshold: staticHealthFailures, SuccessThreshold: 1,
	}
}

// StaticPodStatus is one static pod in /debug/klab/status.
type StaticPodStatus struct {
	Name      string `json:"name"`
	MirrorPod string `json:"mirrorPod"`
	Healthy   bool   `json:"healthy"`
	Restarts  int32  `json:"restarts"`
	LastError string `json:"lastError,omitempty"`
}

func (m *mirrorManager) snapshot() []StaticPodStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []StaticPodStatus
	for _, sp := range m.k.cfg.StaticPods {
		st := m.states[sp.Name]
		if st == nil {
			continue
		}
		out = append(out, StaticPodStatus{Name: sp.Name, MirrorPod: m.mirrorName(sp), Healthy: st.healthy, Restarts: st.restarts, LastError: st.lastCheckErr})
	}
	return out
}
