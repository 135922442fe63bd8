package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// TestMinSyncPeriod: a burst of changes is folded into few syncs, never
// more than upstream's runner allows: two at once, then one per
// minSyncPeriod.
func TestMinSyncPeriod(t *testing.T) {
	l := newLab(t, 69)
	b := l.startBackends(1)
	svc := l.createService("web", b, serviceOptions{})
	p := l.startProxy(node)
	minSync := p.Status().MinSyncPeriod
	start := p.Status().Syncs

	const changes = 40
	begin := time.Now()
	ctx := context.Background()
	for i := range changes {
		svc.Labels = map[string]string{"generation": fmt.Sprint(i)}
		var err error
		if svc, err = l.cs.CoreV1().Services(l.ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The last change reaches a sync.
	l.createSlice(l.slice(svc, onNode(b, node)))
	waitForReadyEndpoints(t, p, svc, 1)
	window := time.Since(begin)
	syncs := p.Status().Syncs - start
	// Burst of 2, one per minSyncPeriod, and one periodic resync if the
	// window spans a syncPeriod.
	bound := uint64(burstSyncs + int(window/minSync) + 1 + int(window/p.Status().SyncPeriod))
	t.Logf("%d changes over %v gave %d syncs (bound %d, minSyncPeriod %v)", changes+1, window, syncs, bound, minSync)
	if syncs > bound {
		t.Errorf("%d syncs over %v; minSyncPeriod %v allows at most %d", syncs, window, minSync, bound)
	}
	// Far fewer syncs than changes, when the writes were quick enough for
	// the period to matter.
	if bound < changes/2 && syncs >= changes/2 {
		t.Errorf("%d changes gave %d syncs; want far fewer", changes+1, syncs)
	}
}

// TestStopWithOpenConnections: Stop returns promptly with connections
// spliced through the proxy, and closes them.
func TestStopWithOpenConnections(t *testing.T) {
	l := newLab(t, 70)
	// A backend that holds every connection open.
	ln, err := net.Listen("tcp4", l.backendIP(0).String()+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	b := &backends{port: ln.Addr().(*net.TCPAddr).Port}
	svc := l.createService("hold", b, serviceOptions{nodePort: true})
	s := l.slice(svc, []endpoint{{addr: addrPort(ln.Addr()), node: node}})
	l.createSlice(s)
	l.setMode(proxier.ModeUserspace, "")
	p := l.startProxy(node)
	waitForReadyEndpoints(t, p, svc, 1)

	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("tcp4", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", clusterIPAddr(svc))
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		clients = append(clients, c)
	}
	np, err := net.Dial("tcp4", l.nodePortAddr(svc))
	if err != nil {
		t.Fatal(err)
	}
	defer np.Close()
	clients = append(clients, np)
	waitFor(t, p, "4 connections", func() bool { return p.Status().Connections.Total == 4 })

	stopped := make(chan struct{})
	begin := time.Now()
	go func() {
		p.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return within 5s with connections open")
	}
	t.Logf("Stop took %v", time.Since(begin))
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	if p.Err() != nil {
		t.Errorf("Err() = %v after Stop", p.Err())
	}
	for i, c := range clients {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("client %d: read after Stop returned data", i)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("client %d: still open after Stop", i)
		}
	}
	if _, err := net.DialTimeout("tcp4", l.nodePortAddr(svc), time.Second); err == nil {
		t.Error("NodePort still accepts after Stop")
	}
	checkNoProxyGoroutines(t)
}

// checkNoProxyGoroutines fails if a goroutine still runs this package's
// code (tests aside). Goroutines of HTTP handlers end just after their
// connection closes, so it looks a few times before failing.
func checkNoProxyGoroutines(t *testing.T) {
	t.Helper()
	var leaked []string
	for i := range 20 {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		leaked = leaked[:0]
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "klab/cluster/proxy.") && !strings.Contains(g, "klab/cluster/proxy.Test") &&
				!strings.Contains(g, "_test.go") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			t.Logf("no proxy goroutine left (looked %d times)", i+1)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("%d goroutines of the proxy outlive Stop:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
}

func addrPort(a net.Addr) netip.AddrPort { return netip.MustParseAddrPort(a.String()) }

// TestNodePortInUse: a NodePort another process holds is reported, and
// opened at a later sync once it is free.
func TestNodePortInUse(t *testing.T) {
	l := newLab(t, 73)
	b := l.startBackends(1)
	var blocker net.Listener
	var port int
	for p := 32767; p > 30000; p-- {
		ln, err := net.Listen("tcp4", netip.AddrPortFrom(l.nodeIP, uint16(p)).String())
		if err == nil {
			blocker, port = ln, p
			break
		}
	}
	if blocker == nil {
		t.Fatal("no free port in the NodePort range")
	}
	defer blocker.Close()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: l.ns},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeNodePort,
			Ports: []corev1.ServicePort{{Port: 80, NodePort: int32(port), Protocol: corev1.ProtocolTCP}},
		},
	}
	svc, err := l.cs.CoreV1().Services(l.ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.createSlice(l.slice(svc, onNode(b, node)))
	l.setMode(proxier.ModeIPVS, "")
	p := l.startProxy(node)
	waitFor(t, p, "the NodePort error", func() bool { return p.Status().NodePortErrors[port] != "" })
	past, _, cancel := p.hub.Subscribe(0)
	cancel()
	if !slices.ContainsFunc(past, func(e Event) bool { return e.Kind == EventNodePortError && e.NodePort == port }) {
		t.Errorf("no nodeport-error event for %d: %+v", port, past)
	}
	blocker.Close()
	// The periodic resync (syncPeriod) retries it.
	waitFor(t, p, "the NodePort open", func() bool { return slices.Contains(p.Status().NodePorts, port) })
	if st := p.Status(); len(st.NodePortErrors) != 0 {
		t.Errorf("errors left: %v", st.NodePortErrors)
	}
	if body, err := getDirect(l.nodePortAddr(svc)); err != nil || body != b.names[0] {
		t.Errorf("through the NodePort: %q, %v", body, err)
	}
}

// TestContextBoundsStartOnly: the context given to Start bounds the start,
// not the proxy's life (the runtimes start components with a request's
// context); Stop ends it.
func TestContextBoundsStartOnly(t *testing.T) {
	l := newLab(t, 74)
	p, err := New(Config{REST: l.cluster.Config(0, auth.KubeProxy), NodeName: node, NodeIP: l.nodeIP, Speed: testSpeed})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err == nil {
		t.Error("a second Start succeeded")
	}
	cancel()
	select {
	case <-p.Done():
		t.Fatalf("the proxy stopped with the context of its start: %v", p.Err())
	default:
	}
	resp, err := http.Get("http://" + p.Addr() + "/healthz")
	if err != nil {
		t.Fatalf("after the start's context ended: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz after the start's context ended: %s", resp.Status)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Err(); err != nil {
		t.Errorf("Err() after Stop = %v", err)
	}
	checkNoProxyGoroutines(t)
}
