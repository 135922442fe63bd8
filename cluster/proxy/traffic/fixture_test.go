package traffic

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/app"
)

// fakeProxy is a small stand-in for a kube-proxy's HTTP entrance: it
// answers CONNECT for one target by dialling a backend its picker chooses,
// with the headers klab's kube-proxy sends.
type fakeProxy struct {
	addr     string
	mode     string
	node     string
	target   string
	backends []string
	// retry makes a failed dial try the next backend, as the userspace
	// proxier does; the kernel modes send the connection to its fate.
	retry bool

	mu        sync.Mutex
	pick      func(n int) int
	clientIPs map[string]int
}

type proxyOption func(*fakeProxy)

func withPicker(pick func(n int) int) proxyOption { return func(p *fakeProxy) { p.pick = pick } }
func withRetry() proxyOption                      { return func(p *fakeProxy) { p.retry = true } }
func withMode(mode string) proxyOption            { return func(p *fakeProxy) { p.mode = mode } }

// roundRobin picks 0, 1, …, n−1, 0, … as ipvs's rr scheduler does.
func roundRobin() func(n int) int {
	next := 0
	return func(n int) int {
		i := next % n
		next++
		return i
	}
}

// randomPick picks uniformly with a fixed seed, as iptables' statistic
// match does with the kernel's randomness.
func randomPick(seed uint64) func(n int) int {
	r := rand.New(rand.NewPCG(seed, seed))
	return func(n int) int { return r.IntN(n) }
}

// weightedPick picks backend i with probability weights[i]/sum.
func weightedPick(seed uint64, weights ...int) func(n int) int {
	r := rand.New(rand.NewPCG(seed, seed))
	sum := 0
	for _, w := range weights {
		sum += w
	}
	return func(n int) int {
		x := r.IntN(sum)
		for i, w := range weights {
			if x < w {
				return i
			}
			x -= w
		}
		return n - 1
	}
}

const testTarget = "10.96.0.10:80"

func startProxy(t *testing.T, backends []string, opts ...proxyOption) *fakeProxy {
	t.Helper()
	p := &fakeProxy{mode: "ipvs", node: "worker-1", target: testTarget, backends: backends,
		pick: roundRobin(), clientIPs: map[string]int{}}
	for _, o := range opts {
		o(p)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	serveConns(t, ln, p.serve)
	return p
}

// serveConns runs handle for every connection ln accepts until the test
// ends, then closes the listener and the open connections and waits for
// the handlers.
func serveConns(t *testing.T, ln net.Listener, handle func(net.Conn)) {
	var (
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					c.Close()
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
				}()
				handle(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

func (p *fakeProxy) serve(conn net.Conn) {
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		writeStatus(conn, http.StatusMethodNotAllowed, nil, "only CONNECT is served here")
		return
	}
	headers := map[string]string{HeaderProxyMode: p.mode, HeaderNode: p.node}
	if req.Host != p.target {
		writeStatus(conn, http.StatusNotFound, headers, "no service at "+req.Host)
		return
	}
	p.mu.Lock()
	if ip := req.Header.Get(HeaderClientIP); ip != "" {
		p.clientIPs[ip]++
	}
	first := p.pick(len(p.backends))
	p.mu.Unlock()

	tries := 1
	if p.retry {
		tries = len(p.backends)
	}
	var backend net.Conn
	for k := range tries {
		headers[HeaderEndpoint] = p.backends[(first+k)%len(p.backends)]
		backend, err = net.DialTimeout("tcp", headers[HeaderEndpoint], 2*time.Second)
		if err == nil {
			break
		}
	}
	if err != nil {
		writeStatus(conn, http.StatusServiceUnavailable, headers, err.Error())
		return
	}
	defer backend.Close()
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 Connection established\r\n")
	for _, k := range []string{HeaderProxyMode, HeaderEndpoint, HeaderNode} {
		fmt.Fprintf(&b, "%s: %s\r\n", k, headers[k])
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return
	}
	// Splice until either side ends, then end both: the client never
	// half-closes, and the app closes after its answer.
	done := make(chan struct{})
	go func() {
		io.Copy(backend, br) // what the client sends, buffered bytes first
		conn.Close()
		backend.Close()
		close(done)
	}()
	io.Copy(conn, backend)
	conn.Close()
	backend.Close()
	<-done
}

func writeStatus(w io.Writer, code int, headers map[string]string, line string) {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n",
		code, http.StatusText(code), len(line)+1)
	for _, k := range []string{HeaderProxyMode, HeaderEndpoint, HeaderNode} {
		if v := headers[k]; v != "" {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n" + line + "\n")
	io.WriteString(w, b.String())
}

// startApp runs klab's demo app in-process as pod name on node and returns
// its address.
func startApp(t *testing.T, pod, node string) string {
	t.Helper()
	for attempt := 0; attempt < 3; attempt++ {
		// The app wants a fixed port: take a free one. Should another
		// program grab it in between, the app exits and we try again.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()

		ctx, cancel := context.WithCancel(context.Background())
		stdout := &signalWriter{want: "listening on", seen: make(chan struct{})}
		exited := make(chan int, 1)
		go func() {
			exited <- app.Run(ctx, app.Options{
				Args:       []string{"--port", strconv.Itoa(port), "--log-requests=false"},
				Env:        []string{"POD_NAME=" + pod, "POD_NAMESPACE=default", "NODE_NAME=" + node},
				ListenHost: "127.0.0.1",
				Stdout:     stdout,
			})
		}()
		select {
		case <-stdout.seen:
			t.Cleanup(func() {
				cancel()
				<-exited
			})
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		case code := <-exited:
			cancel()
			t.Logf("app %s exited with %d before listening; trying another port", pod, code)
		case <-time.After(10 * time.Second):
			cancel()
			t.Fatalf("app %s did not start", pod)
		}
	}
	t.Fatalf("app %s could not start", pod)
	return ""
}

// startApps runs n apps, web-1 … web-n, alternating between two nodes.
func startApps(t *testing.T, n int) []string {
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = startApp(t, fmt.Sprintf("web-%d", i+1), fmt.Sprintf("worker-%d", i%2+1))
	}
	return addrs
}

// signalWriter closes seen once the output contains want.
type signalWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen chan struct{}
	done bool
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), w.want) {
		w.done = true
		close(w.seen)
	}
	return len(p), nil
}

// deadAddr is an address nothing listens on: dialling it is refused.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// silentServer accepts connections, reads what it is sent and never
// answers. Each accepted connection is announced on the returned channel.
func silentServer(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 1000)
	serveConns(t, ln, func(c net.Conn) {
		accepted <- struct{}{}
		io.Copy(io.Discard, c)
	})
	return ln.Addr().String(), accepted
}

// handlerServer serves h on a fresh loopback port.
func handlerServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}
