package kubelet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
)

// probeServer answers with the status code in *code, after *delay.
func probeServer(t *testing.T, code *atomic.Int32) (*httptest.Server, int) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(300 * time.Millisecond)
		}
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/ok", http.StatusFound)
			return
		}
		if r.Header.Get("User-Agent") != probeUserAgent {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		if r.URL.Path == "/header" && r.Header.Get("X-Check") != "yes" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(int(code.Load()))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n, _ := strconv.Atoi(port)
	return srv, n
}

func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestHTTPProbe(t *testing.T) {
	var code atomic.Int32
	code.Store(200)
	_, port := probeServer(t, &code)
	container := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	get := func(path string, p intstr.IntOrString, headers ...v1.HTTPHeader) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: p, HTTPHeaders: headers}}}
	}
	tests := []struct {
		name   string
		probe  *v1.Probe
		code   int32
		want   probeResult
		output string // a part of the output
	}{
		{"200 succeeds", get("/ok", intstr.FromInt(port)), 200, probeSuccess, ""},
		{"399 succeeds", get("/ok", intstr.FromInt(port)), 399, probeSuccess, ""},
		{"redirect is followed", get("/redirect", intstr.FromInt(port)), 200, probeSuccess, ""},
		{"named port", get("/ok", intstr.FromString("http")), 200, probeSuccess, ""},
		{"headers are sent", get("/header", intstr.FromInt(port), v1.HTTPHeader{Name: "X-Check", Value: "yes"}), 200, probeSuccess, ""},
		{"404 fails", get("/ok", intstr.FromInt(port)), 404, probeFailure, "HTTP probe failed with statuscode: 404"},
		{"500 fails", get("/ok", intstr.FromInt(port)), 500, probeFailure, "HTTP probe failed with statuscode: 500"},
		{"timeout fails", get("/slow", intstr.FromInt(port)), 200, probeFailure, "Client.Timeout exceeded"},
		{"refused fails", get("/ok", intstr.FromInt(closedPort(t))), 200, probeFailure, "connect: connection refused"},
		{"unknown port name fails", get("/ok", intstr.FromString("grpc")), 200, probeFailure, "couldn't find port"},
		{"exec is unsupported", &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}, 200, probeUnsupported, "exec probes are not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code.Store(tt.code)
			got, output := runProbe(context.Background(), tt.probe, container, "127.0.0.1", 100*time.Millisecond)
			if got != tt.want || !strings.Contains(output, tt.output) {
				t.Errorf("result %v %q, want %v containing %q", got, output, tt.want, tt.output)
			}
		})
	}
}

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	open := l.Addr().(*net.TCPAddr).Port
	closed := closedPort(t)
	tests := []struct {
		name   string
		port   int
		want   probeResult
		output string
	}{
		{"open port succeeds", open, probeSuccess, ""},
		{"closed port fails", closed, probeFailure, "dial tcp 127.0.0.1:" + strconv.Itoa(closed) + ": connect: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(tt.port)}}}
			got, output := runProbe(context.Background(), p, &v1.Container{}, "127.0.0.1", time.Second)
			if got != tt.want || output != tt.output {
				t.Errorf("result %v %q, want %v %q", got, output, tt.want, tt.output)
			}
		})
	}
}

// probeFixture is a running pod whose container's probes hit an HTTP
// server whose answer the test sets.
type probeFixture struct {
	*fixture
	pod  *v1.Pod
	w    *podWorker
	code atomic.Int32
	port int
}

func newProbeFixture(t *testing.T, mutate func(c *v1.Container, port int)) *probeFixture {
	pf := &probeFixture{fixture: newFixture(t, critest.Options{})}
	pf.code.Store(200)
	_, pf.port = probeServer(t, &pf.code)
	pf.pod = pf.create(testPod("probed", appImage, func(p *v1.Pod) {
		p.Spec.TerminationGracePeriodSeconds = new(int64)
		mutate(&p.Spec.Containers[0], pf.port)
	}))
	pf.w = &podWorker{}
	pf.sync(pf.w, pf.pod)
	return pf
}

func httpProbeOn(port int, failure, success int32) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:     v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Path: "/ok", Port: intstr.FromInt(port)}},
		FailureThreshold: failure, SuccessThreshold: success, PeriodSeconds: 3600,
	}
}

// worker registers a probe worker for the running container without
// starting its goroutine: the test calls doProbe itself.
func (pf *probeFixture) worker(kind probeKind) *probeWorker {
	c := pf.latest(pf.pod)
	spec := pf.get(pf.pod).Spec.Containers[0]
	probe := map[probeKind]*v1.Probe{liveness: spec.LivenessProbe, readiness: spec.ReadinessProbe, startup: spec.StartupProbe}[kind]
	m := pf.k.probes
	w := &probeWorker{m: m, key: probeKey{c.ID, kind}, pod: pf.get(pf.pod), container: &spec, probe: probe, podIP: "127.0.0.1", stop: make(chan struct{})}
	m.mu.Lock()
	m.workers[w.key] = w
	if m.results[c.ID] == nil {
		m.results[c.ID] = &containerResults{}
	}
	m.mu.Unlock()
	return w
}

func TestReadinessThresholds(t *testing.T) {
	pf := newProbeFixture(t, func(c *v1.Container, port int) { c.ReadinessProbe = httpProbeOn(port, 2, 2) })
	w := pf.worker(readiness)
	spec := &pf.get(pf.pod).Spec.Containers[0]
	id := pf.latest(pf.pod).ID
	steps := []struct {
		code  int32
		ready bool
	}{
		{200, false}, // one success of two
		{200, true},
		{500, true}, // one failure of two
		{200, true},
		{500, true},
		{500, false},
		{200, false},
		{200, true},
	}
	for i, s := range steps {
		pf.code.Store(s.code)
		w.doProbe()
		if got := pf.k.probes.ready(spec, id); got != s.ready {
			t.Fatalf("step %d (%d): ready = %v, want %v", i, s.code, got, s.ready)
		}
	}
	pf.sync(pf.w, pf.pod)
	if st := pf.get(pf.pod).Status; condition(st, v1.PodReady).Status != v1.ConditionTrue || !st.ContainerStatuses[0].Ready {
		t.Errorf("pod not Ready after the readiness probe passed: %+v", st.Conditions)
	}
	if events := pf.drain(); !hasEvent(events, "Warning Unhealthy Readiness probe failed: HTTP probe failed with statuscode: 500") {
		t.Errorf("no Unhealthy event in %v", events)
	}
}

func TestLivenessFailureRestartsContainer(t *testing.T) {
	pf := newProbeFixture(t, func(c *v1.Container, port int) { c.LivenessProbe = httpProbeOn(port, 3, 1) })
	w := pf.worker(liveness)
	first := pf.latest(pf.pod)
	pf.code.Store(500)
	for i := range 3 {
		if _, wanted := pf.k.probes.restartWanted(first.ID); wanted {
			t.Fatalf("restart wanted after %d failures of 3", i)
		}
		w.doProbe()
	}
	if _, wanted := pf.k.probes.restartWanted(first.ID); !wanted {
		t.Fatal("no restart after 3 failures")
	}
	pf.sync(pf.w, pf.pod)
	now := pf.latest(pf.pod)
	if now.ID == first.ID || now.Attempt != 1 || now.State != cri.StateRunning {
		t.Errorf("container after the liveness failure = %+v", now)
	}
	if !containsCall(pf.rt.Calls(), "StopContainer ["+first.ID+" 0s]") {
		t.Errorf("not killed with the pod's grace period: %v", pf.rt.Calls())
	}
	events := pf.drain()
	for _, want := range []string{
		"Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500",
		"Normal Killing Container app failed liveness probe, will be restarted",
	} {
		if !hasEvent(events, want) {
			t.Errorf("no event %q in %v", want, events)
		}
	}
	if cs := pf.container(pf.pod); cs.RestartCount != 1 {
		t.Errorf("restart count = %d", cs.RestartCount)
	}
}

func TestStartupProbeGatesLiveness(t *testing.T) {
	pf := newProbeFixture(t, func(c *v1.Container, port int) {
		c.StartupProbe = httpProbeOn(port, 2, 1)
		c.LivenessProbe = httpProbeOn(port, 1, 1)
	})
	live, start := pf.worker(liveness), pf.worker(startup)
	id := pf.latest(pf.pod).ID
	pf.code.Store(500)
	live.doProbe()
	if _, wanted := pf.k.probes.restartWanted(id); wanted {
		t.Fatal("liveness ran before the startup probe succeeded")
	}
	if cs := pf.container(pf.pod); cs.Started == nil || *cs.Started || cs.Ready {
		t.Errorf("started before the startup probe: %+v", cs)
	}
	pf.code.Store(200)
	start.doProbe()
	spec := &pf.get(pf.pod).Spec.Containers[0]
	if !pf.k.probes.started(spec, id) {
		t.Fatal("startup success not recorded")
	}
	pf.code.Store(500)
	live.doProbe()
	if kill, wanted := pf.k.probes.restartWanted(id); !wanted || kill.message != "Container app failed liveness probe, will be restarted" {
		t.Errorf("liveness after startup: %v %+v", wanted, kill)
	}
}

func TestStartupProbeFailureRestarts(t *testing.T) {
	pf := newProbeFixture(t, func(c *v1.Container, port int) { c.StartupProbe = httpProbeOn(port, 2, 1) })
	w := pf.worker(startup)
	id := pf.latest(pf.pod).ID
	pf.code.Store(503)
	w.doProbe()
	w.doProbe()
	if kill, wanted := pf.k.probes.restartWanted(id); !wanted || kill.message != "Container app failed startup probe, will be restarted" {
		t.Errorf("startup failure: %v %+v", wanted, kill)
	}
}

func TestExecProbeWarnsAndSucceeds(t *testing.T) {
	pf := newProbeFixture(t, func(c *v1.Container, port int) {
		c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}}
	})
	w := pf.worker(readiness)
	w.doProbe()
	w.doProbe()
	spec := &pf.get(pf.pod).Spec.Containers[0]
	if !pf.k.probes.ready(spec, pf.latest(pf.pod).ID) {
		t.Error("an exec readiness probe keeps the container unready")
	}
	events := pf.drain()
	warnings := 0
	for _, e := range events {
		if strings.HasPrefix(e, "Warning ProbeWarning Readiness probe warning: exec probes are not supported by klab") {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d ProbeWarning events, want 1: %v", warnings, events)
	}
}
