package kubestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/proxy"
)

// next runs the feed's wait command as the UI would, failing the test if
// no message comes.
func next(t *testing.T, cmd func() any) UpdateMsg {
	t.Helper()
	got := make(chan any, 1)
	go func() { got <- cmd() }()
	select {
	case m := <-got:
		msg, ok := m.(UpdateMsg)
		if !ok {
			t.Fatalf("feed sent %T, want UpdateMsg", m)
		}
		return msg
	case <-time.After(time.Minute):
		t.Fatal("no message from the feed within a minute")
	}
	return UpdateMsg{}
}

func waitCmd(f *feed) func() any { return func() any { return f.wait() } }

// until applies the feed's messages to s until cond holds, and returns how
// many it took.
func until(t *testing.T, f *feed, s *State, what string, cond func() bool) int {
	t.Helper()
	n := 0
	for !cond() {
		s.Apply(next(t, waitCmd(f)))
		n++
		if n > 10000 {
			t.Fatalf("never saw %s", what)
		}
	}
	return n
}

func startFake(t *testing.T, objects ...k8sruntime.Object) (*feed, *fake.Clientset, *State) {
	t.Helper()
	client := fake.NewClientset(objects...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := newFeed(ctx)
	f.run(client, nil)
	s := &State{}
	until(t, f, s, "the first sync", func() bool { return s.Conn.Synced })
	return f, client, s
}

func TestFeedFirstSync(t *testing.T) {
	cfg := proxy.DefaultConfiguration()
	cfg.Mode = "ipvs"
	cm, err := proxy.NewConfigMap(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, _, s := startFake(t,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "master-1", Labels: map[string]string{labelControlPlane: ""}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: corev1.PodSpec{NodeName: "worker-1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: LeaseControllerManager},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("master-1_abc")}},
		// Only the two leader-election leases are kept.
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "apiserver-xyz"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("apiserver-xyz")}},
		cm,
		// Another ConfigMap in kube-system is not the kube-proxy's.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns"}},
	)
	if len(s.Nodes()) != 2 || s.Nodes()[0].Name != "master-1" || !s.Nodes()[0].IsReady() {
		t.Errorf("nodes = %+v", s.Nodes())
	}
	if c := s.Counts("worker-1"); c[PodNotReady] != 1 {
		t.Errorf("pods on worker-1 = %v", c)
	}
	if s.LeaseHolder(LeaseControllerManager) != "master-1" {
		t.Errorf("controller-manager lease held by %q", s.LeaseHolder(LeaseControllerManager))
	}
	if _, ok := s.Lease("apiserver-xyz"); ok {
		t.Error("the feed kept an API server identity lease")
	}
	if s.ProxyConfig.Mode != "ipvs" {
		t.Errorf("ProxyConfig = %+v", s.ProxyConfig)
	}
	if !s.Conn.Connected || s.Conn.Err != "" {
		t.Errorf("Conn = %+v", s.Conn)
	}
}

// A burst of changes reaches the UI in a few messages: at most one per
// coalescing window while it lasts.
func TestFeedCoalescesBursts(t *testing.T) {
	f, client, s := startFake(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}})
	// A create through the fake clientset takes milliseconds, so a few
	// hundred already span dozens of coalescing windows.
	const pods = 300
	start := time.Now()
	go func() {
		for i := range pods {
			_, _ = client.CoreV1().Pods("default").Create(context.Background(), &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("web-%d", i)},
				Spec:       corev1.PodSpec{NodeName: "worker-1"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}, metav1.CreateOptions{})
		}
	}()
	msgs := until(t, f, s, "every pod", func() bool { return s.PodCount() == pods })
	elapsed := time.Since(start)
	limit := int(elapsed/coalesce) + 2
	t.Logf("%d pods created in %v arrived in %d messages", pods, elapsed, msgs)
	if msgs > limit {
		t.Errorf("%d messages in %v, want at most %d (one per %v)", msgs, elapsed, limit, coalesce)
	}
}

// An update that changes nothing the TUI shows sends nothing: the next
// message carries only the change that matters.
func TestFeedDropsInvisibleUpdates(t *testing.T) {
	f, client, s := startFake(t,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
	)
	ctx := context.Background()
	pods := client.CoreV1().Pods("default")
	a, _ := pods.Get(ctx, "a", metav1.GetOptions{})
	a.Annotations = map[string]string{"touched": "yes"}
	if _, err := pods.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b, _ := pods.Get(ctx, "b", metav1.GetOptions{})
	b.Status.Phase = corev1.PodRunning
	if _, err := pods.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	msg := next(t, waitCmd(f))
	if msg.Len() != 1 || msg.changes[0].key != "pod/default/b" {
		var keys []string
		for _, c := range msg.changes {
			keys = append(keys, c.key)
		}
		t.Fatalf("message carries %v, want only pod/default/b", keys)
	}
	s.Apply(msg)
	if p, _ := s.Pod("default/b"); p.Phase != corev1.PodRunning {
		t.Errorf("pod b = %+v", p)
	}
	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, f, s, "pod a deleted", func() bool { _, ok := s.Pod("default/a"); return !ok })
}

func TestFeedEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := newFeed(ctx)
	f.run(fake.NewClientset(), nil)
	var s State
	until(t, f, &s, "the first sync", func() bool { return s.Conn.Synced })
	cancel()
	msg := next(t, waitCmd(f))
	s.Apply(msg)
	if !s.Conn.Stopped || s.Conn.Connected {
		t.Errorf("after the end, Conn = %+v", s.Conn)
	}
	if msg.Next() != nil {
		t.Error("an ended feed offers a next command")
	}
}

func TestStartWithoutKubeconfig(t *testing.T) {
	msg := next(t, func() any { return Start(context.Background(), &lab.Info{Name: "demo"})() })
	var s State
	s.Apply(msg)
	if !s.Conn.Stopped || s.Conn.Err == "" {
		t.Errorf("Conn = %+v, want stopped with a reason", s.Conn)
	}
	if msg.Next() != nil {
		t.Error("a feed that never started offers a next command")
	}
}

// The UI learns that the API server stopped answering, and that it answers
// again, from the probe a failed watch starts.
func TestFeedReportsDisconnection(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" && ready.Load() {
			_, _ = w.Write([]byte("ok"))
			return
		}
		http.Error(w, "etcd not ready", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFeed(ctx)
	f.client = client
	// A watch that merely ended starts no probe.
	f.requestFailed(io.EOF)
	f.mu.Lock()
	probing := f.probing
	f.mu.Unlock()
	if probing {
		t.Error("the end of a watch started a probe")
	}
	var s State
	f.requestFailed(errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"))
	s.Apply(next(t, waitCmd(f)))
	if s.Conn.Connected || !strings.Contains(s.Conn.Err, "connection refused") || s.Conn.Since.IsZero() {
		t.Fatalf("Conn = %+v, want disconnected with the watch's error", s.Conn)
	}
	ready.Store(true)
	until(t, f, &s, "the reconnection", func() bool { return s.Conn.Connected })
	if s.Conn.Err != "" {
		t.Errorf("Conn = %+v after reconnecting", s.Conn)
	}
}

// fakeProxy serves a kube-proxy's status and event stream.
type fakeProxy struct {
	mode   atomic.Value
	events chan proxy.Event
	srv    *httptest.Server
}

func newFakeProxy(t *testing.T, mode string) *fakeProxy {
	p := &fakeProxy{events: make(chan proxy.Event)}
	p.mode.Store(mode)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/klab/status", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(proxy.Status{Node: "worker-1", Mode: p.mode.Load().(string)})
	})
	mux.HandleFunc("GET /debug/klab/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.(http.Flusher).Flush()
		enc := json.NewEncoder(w)
		for {
			select {
			case e, ok := <-p.events:
				if !ok {
					return
				}
				_ = enc.Encode(e)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func TestFollowProxy(t *testing.T) {
	fp := newFakeProxy(t, "iptables")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFeed(ctx)
	poke := make(chan struct{}, 1)
	go f.followProxy("worker-1", strings.TrimPrefix(fp.srv.URL, "http://"), poke)
	var s State
	proxyOf := func() Proxy { p, _ := s.Proxy("worker-1"); return p }
	until(t, f, &s, "the first status", func() bool { return proxyOf().Reachable })
	if p := proxyOf(); p.Mode != "iptables" {
		t.Fatalf("proxy = %+v", p)
	}

	// Syncs in the running mode change nothing; a switch does.
	fp.events <- proxy.Event{Kind: proxy.EventSync, Mode: "iptables"}
	fp.events <- proxy.Event{Kind: proxy.EventModeChanged, From: "iptables", To: "ipvs", Mode: "ipvs"}
	msg := next(t, waitCmd(f))
	s.Apply(msg)
	if p := proxyOf(); p.Mode != "ipvs" || msg.Len() != 1 {
		t.Fatalf("after the switch: proxy %+v in %d changes", p, msg.Len())
	}
	fp.events <- proxy.Event{Kind: proxy.EventConfigError, Mode: "ipvs", Message: "mode \"bpf\" unknown"}
	until(t, f, &s, "the config error", func() bool { return proxyOf().ConfigError != "" })

	// A poke (the ConfigMap changed) reads the status again.
	fp.mode.Store("nftables")
	poke <- struct{}{}
	until(t, f, &s, "the status read again", func() bool { return proxyOf().Mode == "nftables" })
	if p := proxyOf(); p.ConfigError != "" {
		t.Errorf("the status read again kept the config error: %+v", p)
	}

	// The kube-proxy goes away: the mode it ran stays, marked unreachable.
	close(fp.events)
	until(t, f, &s, "the kube-proxy gone", func() bool { return !proxyOf().Reachable })
	if p := proxyOf(); p.Mode != "nftables" || p.Err == "" {
		t.Errorf("unreachable proxy = %+v", p)
	}
}
