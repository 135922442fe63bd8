package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// waitFor waits until cond holds, checking it again after every event the
// proxy publishes (each sync, switch or error).
func waitFor(t *testing.T, p *Proxy, what string, cond func() bool) {
	t.Helper()
	_, events, cancel := p.hub.Subscribe(^uint64(0))
	defer cancel()
	deadline := time.After(waitTimeout)
	for !cond() {
		select {
		case <-events:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; status: %+v", what, p.Status())
		}
	}
}

// waitForMode waits until the proxy runs mode.
func waitForMode(t *testing.T, p *Proxy, mode string) {
	t.Helper()
	waitFor(t, p, "mode "+mode, func() bool { return p.Status().Mode == mode })
}

// lastSnapshot returns the snapshot of the last sync.
func (p *Proxy) lastSnapshot() *proxier.Snapshot {
	p.statusMu.Lock()
	defer p.statusMu.Unlock()
	return p.state.snapshot
}

// endpointsOf returns the endpoints of svc's only port in the last sync.
func (p *Proxy) endpointsOf(svc *corev1.Service) []proxier.Endpoint {
	snap := p.lastSnapshot()
	if snap == nil {
		return nil
	}
	for name, eps := range snap.Endpoints {
		if name.Namespace == svc.Namespace && name.Name == svc.Name {
			return eps
		}
	}
	return nil
}

// hasService reports whether the last sync saw svc.
func (p *Proxy) hasService(svc *corev1.Service) bool {
	snap := p.lastSnapshot()
	if snap == nil {
		return false
	}
	for name := range snap.Services {
		if name.Namespace == svc.Namespace && name.Name == svc.Name {
			return true
		}
	}
	return false
}

// waitForReadyEndpoints waits until the last sync saw exactly n ready
// endpoints of svc.
func waitForReadyEndpoints(t *testing.T, p *Proxy, svc *corev1.Service, n int) {
	t.Helper()
	waitFor(t, p, fmt.Sprintf("%d ready endpoints of %s", n, svc.Name), func() bool {
		ready := 0
		for _, e := range p.endpointsOf(svc) {
			if e.Ready {
				ready++
			}
		}
		return ready == n
	})
}

// getDirect sends one request over a new connection to addr (a NodePort)
// and returns the body.
func getDirect(addr string) (string, error) {
	c, err := net.DialTimeout("tcp4", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	return request(c, bufio.NewReader(c), addr)
}

// connectResult is what a CONNECT through the proxy returned.
type connectResult struct {
	status int
	header http.Header
	body   string // the backend's answer after 200, the proxy's reason otherwise
}

// getConnect sends one request through "CONNECT target" on the proxy,
// with clientIP (if set) in Klab-Client-IP.
func getConnect(p *Proxy, target, clientIP string) (connectResult, error) {
	c, err := net.DialTimeout("tcp4", p.Addr(), 5*time.Second)
	if err != nil {
		return connectResult{}, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	hdr := ""
	if clientIP != "" {
		hdr = HeaderClientIP + ": " + clientIP + "\r\n"
	}
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target, hdr); err != nil {
		c.Close()
		return connectResult{}, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return connectResult{}, err
	}
	res := connectResult{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		res.body = strings.TrimSpace(string(body))
		return res, nil
	}
	res.body, err = request(c, br, target)
	return res, err
}

// getConnectOK is getConnect, with any answer but 200 as an error.
func getConnectOK(p *Proxy, target, clientIP string) (connectResult, error) {
	res, err := getConnect(p, target, clientIP)
	if err == nil && res.status != http.StatusOK {
		err = fmt.Errorf("CONNECT: %d %s", res.status, res.body)
	}
	return res, err
}

// request sends GET / on c, reads the answer and closes c.
func request(c net.Conn, br *bufio.Reader, host string) (string, error) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// dialTCP connects to addr once.
func dialTCP(addr string) (net.Conn, error) { return net.DialTimeout("tcp4", addr, 2*time.Second) }

// tally counts answers by backend name.
type tally struct {
	mu     sync.Mutex
	counts map[string]int
	errs   []error
}

func newTally() *tally { return &tally{counts: map[string]int{}} }

func (t *tally) add(body string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.errs = append(t.errs, err)
		return
	}
	t.counts[body]++
}

// addConnect adds the answer of a CONNECT.
func (t *tally) addConnect(res connectResult, err error) { t.add(res.body, err) }

// waitForKubeEvent watches Events in the default namespace (where Events
// about Nodes go) until one with reason about node appears.
func (l *lab) waitForKubeEvent(node, reason string) *eventsv1.Event {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	events := l.cs.EventsV1().Events(metav1.NamespaceDefault)
	list, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	match := func(e *eventsv1.Event) bool {
		return e.Reason == reason && e.Regarding.Kind == "Node" && e.Regarding.Name == node
	}
	for i := range list.Items {
		if match(&list.Items[i]) {
			return &list.Items[i]
		}
	}
	w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		l.t.Fatal(err)
	}
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				l.t.Fatalf("event watch ended before an Event %s about node %s", reason, node)
			}
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			if e, ok := ev.Object.(*eventsv1.Event); ok && match(e) {
				return e
			}
		case <-ctx.Done():
			l.t.Fatalf("no Event %s about node %s within %v", reason, node, waitTimeout)
		}
	}
}
