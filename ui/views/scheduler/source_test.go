package scheduler

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	sched "github.com/klab-dev/klab/cluster/scheduler"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/views/events/feed/feedtest"
)

// fakeScheduler serves /debug/klab/events as a kube-scheduler does: the
// retained events after ?since=, then new ones. Its first stream ends
// after two events, as when the scheduler restarts.
type fakeScheduler struct {
	mu     sync.Mutex
	sinces []string
}

func (f *fakeScheduler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/debug/klab/events" {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	f.sinces = append(f.sinces, r.URL.Query().Get("since"))
	n := len(f.sinces)
	f.mu.Unlock()
	enc := json.NewEncoder(w)
	d := pendingDecision(uitest.Now)
	switch n {
	case 1:
		enc.Encode(sched.Event{Seq: 1, Time: uitest.Now, Kind: sched.EventLeader, Holder: "master-1_abc", IsLeader: true})
		enc.Encode(sched.Event{Seq: 2, Time: uitest.Now, Kind: sched.EventDecision, Decision: &d})
		return // the stream ends
	default:
		s := scheduledDecision("web", uitest.Now.Add(time.Second))
		enc.Encode(sched.Event{Seq: 3, Time: s.Time, Kind: sched.EventDecision, Decision: &s})
		enc.Encode(sched.Event{Seq: 4, Time: s.Time, Kind: sched.EventBind, Pod: s.Pod(), Node: s.Node})
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

func infoFor(t *testing.T, url string) *lab.Info {
	t.Helper()
	host, port, err := net.SplitHostPort(url[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return &lab.Info{Name: "t", Nodes: []runtime.Node{{Name: "master-1", Role: runtime.RoleMaster, Index: 1, Host: host, Ports: map[string]int{"scheduler": p}}}}
}

// TestFollowsAndReconnects follows a scheduler whose stream ends: the view
// reconnects, asks only for what it has not seen, and shows what both
// streams carried.
func TestFollowsAndReconnects(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	fake := &fakeScheduler{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v := New(c)
	v.SetSize(120, 40)
	cmd := v.Start(ctx, infoFor(t, srv.URL))
	feedtest.Drive(t, cmd, v.Update, func() bool {
		return len(v.pods.list) == 2 && v.pods.list[0].Bound && v.sources[0].Connected
	}, 10*time.Second)
	fake.mu.Lock()
	sinces := fake.sinces
	fake.mu.Unlock()
	if len(sinces) != 2 || sinces[0] != "0" || sinces[1] != "2" {
		t.Errorf("asked with since=%v, want [0 2]", sinces)
	}
	if v.holder != "master-1" {
		t.Errorf("leader %q, want master-1", v.holder)
	}
	if got := v.pods.list[0].Key; got != "default/web" {
		t.Errorf("selected %s, want the newest pod", got)
	}
}

// TestUnreachableSchedulerShown: with nobody listening the view says so
// and keeps trying.
func TestUnreachableSchedulerShown(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close() // nobody listens there now
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v := New(c)
	v.SetSize(80, 24)
	attempts := 0
	update := func(msg tea.Msg) tea.Cmd {
		cmd := v.Update(msg)
		if v.sources[0].Err != "" {
			attempts++
		}
		return cmd
	}
	feedtest.Drive(t, v.Start(ctx, infoFor(t, url)), update, func() bool { return attempts >= 2 }, 10*time.Second)
	got := v.View()
	for _, want := range []string{"No kube-scheduler answers yet", "connection refused", "✗ master-1 (unreachable, retrying)"} {
		if !strings.Contains(got, want) {
			t.Errorf("view lacks %q:\n%s", want, got)
		}
	}
}
