package record

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// busy is a synthetic busy cluster of three members, fed to a Live with
// made-up times: a leader replicating to two followers (obsPerSec raft
// messages and statuses a second), an election every two minutes, the
// API servers' requests and Events (the Events view's tapes), a
// Deployment's pods coming and going (the Overview's and the Scheduler's)
// and, every five minutes, a member stopped or started (the runtime's
// report). Its tapes are what the views' Tape write, so that the views
// play them when a window is trimmed.
type busy struct {
	start     time.Time
	obsPerSec int
	// reqsPerTape is how many requests an Events view's tape holds; a
	// tape comes every step.
	reqsPerTape int

	seq, index, term uint64
	leader           int
	schedSeq         int
	// tapes counts the tapes fed; slowest is the longest a Live took
	// to take a record (a trim's, when it trimmed).
	tapes   int
	slowest time.Duration
	// trimsTook is how long each record that trimmed took.
	trimsTook []time.Duration
}

// took notes how long l took a record; trims is how often it had
// trimmed before.
func (b *busy) took(l *Live, trims int, d time.Duration) {
	b.slowest = max(b.slowest, d)
	if l.trims > trims {
		b.trimsTook = append(b.trimsTook, d)
	}
}

// tape feeds l a tape.
func (b *busy) tape(l *Live, view string, at time.Time, data []byte) {
	b.tapes++
	t0, trims := time.Now(), l.trims
	l.Tape(view, at, data)
	b.took(l, trims, time.Since(t0))
}

// step is how often the workspace takes a batch.
const step = 250 * time.Millisecond

func member(i int) string { return fmt.Sprintf("master-%d", i) }
func memberID(i int) string {
	return fmt.Sprintf("%x", 0x1000+i)
}

// feed runs the cluster for d after the session's start, from its state
// at from, into l.
func (b *busy) feed(l *Live, from, d time.Duration) {
	if b.term == 0 {
		b.term, b.leader = 2, 1
	}
	for at := from; at < d; at += step {
		now := b.start.Add(at)
		l.now = func() time.Time { return now }
		if at == 0 {
			stamp := now.Format(time.RFC3339Nano)
			nodes := `[{"conn":{"connected":true,"synced":true,"since":"0001-01-01T00:00:00Z"}},{"config":{"exists":true,"mode":"iptables"}}`
			for i := 1; i <= 3; i++ {
				nodes += fmt.Sprintf(`,{"node":{"name":"master-%d","role":"master","ready":"True","reason":"KubeletReady","since":%q}}`, i, stamp)
			}
			b.tape(l, ViewOverview, now, []byte(nodes+"]"))
			b.tape(l, ViewScheduler, now, fmt.Appendf(nil, `[{"n":"master-1","state":""},{"n":"master-1","e":{"seq":1,"time":%q,"kind":"leader","holder":"master-1_4f2a","isLeader":true}}]`, stamp))
			b.schedSeq = 1
		}
		if at%(5*time.Minute) == 0 {
			state := "running"
			if at%(10*time.Minute) != 0 {
				state = "stopped"
			}
			b.tape(l, Components, now, fmt.Appendf(nil, `[{"ref":{"node":"master-1","component":"etcd"},"state":"running"},`+
				`{"ref":{"node":"master-3","component":"etcd"},"state":%q},{"ref":{"node":"master-3","component":"kube-apiserver"},"state":%[1]q}]`, state))
		}
		batch := b.batch(now, at)
		t0 := time.Now()
		trims := l.trims
		l.Observe(batch)
		b.took(l, trims, time.Since(t0))
		b.tape(l, ViewEvents, now, b.requests(now, at))
		if at%time.Second == 0 {
			pod := int(at/time.Second) % 20
			phase := "Pending"
			if at%(2*time.Second) == 0 {
				phase = "Running"
			}
			b.tape(l, ViewOverview, now, fmt.Appendf(nil, `[{"pod":{"ns":"default","name":"web-%d","node":"master-%d","phase":%q,"ready":%t,"created":"%s"}}]`,
				pod, 1+pod%3, phase, phase == "Running", now.Format(time.RFC3339Nano)))
			b.schedSeq += 2
			b.tape(l, ViewScheduler, now, fmt.Appendf(nil, `[{"n":"master-1","e":{"seq":%d,"time":%q,"kind":"decision","decision":{"namespace":"default",`+
				`"name":"web-%d","uid":"u-%d","attempt":1,"time":%[2]q,"cycleNs":1200000,"result":"Scheduled","node":"master-%[5]d","numNodes":3,`+
				`"evaluatedNodes":3,"feasibleNodes":3}}},{"n":"master-1","e":{"seq":%[6]d,"time":%[2]q,"kind":"bind","pod":"default/web-%[3]d","node":"master-%[5]d"}}]`,
				b.schedSeq-1, now.Format(time.RFC3339Nano), pod, at/time.Second, 1+pod%3, b.schedSeq))
		}
	}
}

// batch is a step's observations: raft messages between the leader and
// its followers, a member's status, and every two minutes an election.
func (b *busy) batch(now time.Time, at time.Duration) []lab.Observation {
	var out []lab.Observation
	hdr := func(m int) lab.Observed {
		b.seq++
		return lab.Observed{Seq: b.seq, Member: member(m), At: now.Add(-time.Duration(b.seq%50) * time.Millisecond)}
	}
	send := func(typ string, from, to int) {
		h := hdr(from)
		b.index++
		out = append(out, &lab.EventObservation{Observed: h, Event: etcd.Event{Seq: b.seq, Time: h.At, Member: h.Member, Kind: etcd.EventSend,
			Msg: &etcd.MessageInfo{Type: typ, From: memberID(from), To: memberID(to), FromName: member(from), ToName: member(to),
				Term: b.term, LogTerm: b.term, Index: b.index, Commit: b.index - 1, Entries: 1}}})
	}
	if at > 0 && at%(2*time.Minute) == 0 {
		b.term++
		b.leader = 1 + b.leader%3
		for f := 1; f <= 3; f++ {
			if f != b.leader {
				send("MsgVote", b.leader, f)
				send("MsgVoteResp", f, b.leader)
			}
		}
	}
	n := b.obsPerSec * int(step) / int(time.Second)
	for i := 0; len(out) < n-1; i++ {
		f := 1 + (b.leader+i%2)%3
		typ := []string{"MsgApp", "MsgAppResp", "MsgHeartbeat", "MsgHeartbeatResp"}[i%4]
		if i%2 == 0 {
			send(typ, b.leader, f)
		} else {
			send(typ, f, b.leader)
		}
	}
	m := 1 + int(at/step)%3
	st := etcd.Status{ID: memberID(m), Name: member(m), ClusterID: "c1", State: "StateFollower", Term: b.term,
		Vote: memberID(b.leader), Leader: memberID(b.leader), Commit: b.index, Applied: b.index, FirstIndex: 1, LastIndex: b.index,
		ElectionTicks: 10, HeartbeatTicks: 1, ClientURL: "http://127.0.0.1:2379", PeerURL: "http://127.0.0.1:2380"}
	if m == b.leader {
		st.State = "StateLeader"
		st.Progress = map[string]etcd.Progress{}
		for f := 1; f <= 3; f++ {
			st.Progress[memberID(f)] = etcd.Progress{Match: b.index, Next: b.index + 1, State: "StateReplicate", RecentActive: true}
		}
	}
	return append(out, &lab.StatusObservation{Observed: hdr(m), Status: st})
}

// requests is an Events view's tape of a step: the API servers' requests
// and, every ten seconds, an Event.
func (b *busy) requests(now time.Time, at time.Duration) []byte {
	var sb strings.Builder
	sb.WriteString("[")
	for i := range b.reqsPerTape {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"k":"req","req":{"server":"master-%d","time":"%s","verb":"update","resource":"leases","namespace":"kube-node-lease",`+
			`"name":"master-%d","user":"system:node:master-%d","groups":["system:nodes","system:authenticated"],"decision":"allow",`+
			`"userAgent":"klab-kubelet","code":200,"latencyMs":%d.5}}`, 1+i%3, now.Format(time.RFC3339Nano), 1+i%3, 1+i%3, i)
	}
	if at%(10*time.Second) == 0 {
		pod := int(at/time.Second) % 20
		fmt.Fprintf(&sb, `,{"k":"event","ev":{"uid":"e-%d","time":"%s","first":"%s","type":"Normal","reason":"Scheduled",`+
			`"note":"Successfully assigned default/web-%d","kind":"Pod","ns":"default","name":"web-%d","by":"default-scheduler","count":1}}`,
			pod, now.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano), pod, pod)
	}
	sb.WriteString("]")
	return []byte(sb.String())
}

func newBusyLive(t testing.TB, w Window) (*Live, *busy) {
	info := uitest.Info("busy", 3)
	start := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	l := NewLive(nil, info, start)
	l.SetWindow(w)
	return l, &busy{start: start, obsPerSec: 60, reqsPerTape: 2}
}

// TestLiveKeepsAWindow feeds three hours of a busy cluster into a Live
// with made-up times, and checks after every minute that what it keeps
// stays within its window: the span of recorded time, and the bytes its
// records and base take, estimated and as the heap measures them.
func TestLiveKeepsAWindow(t *testing.T) {
	uitest.Setup(t, i18n.English)
	for _, tc := range []struct {
		name  string
		w     Window
		hours time.Duration
	}{
		{"default", DefaultWindow, 3},
		{"small budget", Window{Span: time.Hour, Bytes: 4 << 20}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, b := newBusyLive(t, tc.w)
			var records int
			for m := time.Duration(0); m < tc.hours*time.Hour; m += time.Minute {
				b.feed(l, m, m+time.Minute)
				s := l.Session()
				records = int(b.seq) + b.tapes
				if from := s.From(); from%checkpointEvery != 0 {
					t.Errorf("the window starts at %s, off the keyframes' grid", from)
				}
				if span := s.Duration() - s.From(); tc.w.Span > 0 && span > tc.w.Span {
					t.Fatalf("at %s the session keeps %s, more than the window's %s", m, span, tc.w.Span)
				}
				if l.kept > tc.w.Bytes {
					t.Fatalf("at %s the session keeps %d B, more than the window's %d B", m, l.kept, tc.w.Bytes)
				}
				if got := s.bytes(); got != l.kept {
					t.Fatalf("at %s Live counts %d B kept, the session holds %d B", m, l.kept, got)
				}
			}
			s := l.Session()
			if s.From() < tc.hours*time.Hour-tc.w.Span {
				t.Errorf("after %d hours the window starts at %s", tc.hours, s.From())
			}
			// Trimmed in chunks, not with every record: a sixteenth of
			// a bound at a time, hundreds of records at least.
			if l.trims == 0 || records/l.trims < 300 {
				t.Errorf("%d trims in %d records", l.trims, records)
			}
			// The heap agrees with the estimate: it holds no more than
			// the budget, with room for the allocator's slack.
			if tc.w.Bytes > 0 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if heap := int64(ms.HeapAlloc); heap > 2*tc.w.Bytes+16<<20 {
					t.Errorf("the heap holds %d MB with a window of %d MB", heap>>20, tc.w.Bytes>>20)
				}
				runtime.KeepAlive(l)
			}
			t.Logf("%d trims of %d records; kept %s from %s, %d observations, %d tapes, %.1f MB estimated",
				l.trims, records, s.Duration()-s.From(), s.From(), len(s.Observations), len(s.Tapes), float64(l.kept)/(1<<20))
		})
	}
}

// TestWindowDrawsAsTheWholeSession: a Live that kept only a window draws
// every view, at every moment inside it, as the whole session does; its
// timeline says where it begins, and goes no further back.
func TestWindowDrawsAsTheWholeSession(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	whole, b := newBusyLive(t, Window{})
	windowed, _ := newBusyLive(t, Window{Span: 5 * time.Minute})
	// The windowed Live writes a recording, as a workspace's does.
	var file bytes.Buffer
	windowed.rec = New(nopCloser{&file}, windowed.s.Info, windowed.s.Start)
	// Both take the same records: the windowed one follows the whole
	// one's.
	b.feed(whole, 0, 23*time.Minute+700*time.Millisecond)
	full := whole.Session()
	replay(windowed, full)
	s := windowed.Session()
	if s.From() == 0 || s.Duration() != full.Duration() {
		t.Fatalf("the windowed session runs from %s to %s, the whole one to %s", s.From(), s.Duration(), full.Duration())
	}
	if len(s.Observations) >= len(full.Observations) {
		t.Fatalf("the window keeps %d observations of %d", len(s.Observations), len(full.Observations))
	}
	for _, at := range []time.Duration{s.From(), s.From() + 1234*time.Millisecond, s.From() + 10*time.Second,
		(s.From() + s.Duration()) / 2, s.Duration() - 3*time.Second, s.Duration()} {
		got, err := s.ViewsAt(c, at)
		if err != nil {
			t.Fatal(err)
		}
		want, err := full.ViewsAt(c, at)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Lab, want.Lab) {
			t.Errorf("at %s the members' state differs from the whole session's", at)
		}
		for _, view := range ViewNames {
			got.SetSize(100, 30)
			want.SetSize(100, 30)
			if g, w := got.Draw(view), want.Draw(view); g != w {
				t.Errorf("at %s the %s view differs from the whole session's:\n--- whole\n%s\n--- window\n%s", at, view, w, g)
			}
		}
	}
	// The file has everything, for klab replay.
	if err := windowed.Close(); err != nil {
		t.Fatal(err)
	}
	sessions, err := Read(&file, FileName)
	if err != nil {
		t.Fatal(err)
	}
	if r := sessions[0]; len(r.Observations) != len(full.Observations) || len(r.Tapes) != len(full.Tapes) || r.From() != 0 {
		t.Errorf("the recording holds %d observations and %d tapes from %s, want all %d and %d",
			len(r.Observations), len(r.Tapes), r.From(), len(full.Observations), len(full.Tapes))
	}

	// Before the window: the timeline stops at its start, and says so.
	v, err := s.ViewsAt(c, 0)
	if err != nil || v.At() != s.From() {
		t.Errorf("the windowed session at 0 draws %v (%v), want its start %s", v.At(), err, s.From())
	}
	line := Timeline(s, s.From(), false, 120)
	if !strings.Contains(line, i18n.T("record.window", clock(s.From()))) || !strings.Contains(line, "●─") {
		t.Errorf("the timeline at the window's start:\n%s", line)
	}
	if line := Timeline(full, s.From(), false, 120); strings.Contains(line, clock(s.From())+" (") {
		t.Errorf("the whole session's timeline names a window:\n%s", line)
	}
}

// replay feeds a Live the records of a session, as they were taken.
func replay(l *Live, s *Session) {
	i, j := 0, 0
	for i < len(s.Observations) || j < len(s.Tapes) {
		if j >= len(s.Tapes) || i < len(s.Observations) && !s.taken(i).After(s.Tapes[j].At) {
			taken := s.taken(i)
			k := i
			for k < len(s.Observations) && s.taken(k).Equal(taken) {
				k++
			}
			l.now = func() time.Time { return taken }
			l.Observe(s.Observations[i:k])
			i = k
			continue
		}
		t := s.Tapes[j]
		l.Tape(t.View, t.At, t.Data)
		j++
	}
}

// BenchmarkLiveBusyHour feeds a Live an hour of a busy cluster, at the
// rate the recording benchmark (bench/ui/cmd/uibench -record, busy phase)
// measured on a real one: about 700 observations a second, besides the
// views' tapes. It reports the heap the Live retains at the end, measured
// and as it estimates it, the recorded time it keeps, the time it took
// (the window's trims included), the longest a single record took, and
// how long the records that trimmed took (the workspace's Update loop
// waits for them), whole and within the DefaultWindow.
func BenchmarkLiveBusyHour(b *testing.B) {
	for _, bc := range []struct {
		name string
		w    Window
	}{{"whole", Window{}}, {"window", DefaultWindow}} {
		b.Run(bc.name, func(b *testing.B) {
			uitest.Setup(b, i18n.English)
			for range b.N {
				b.StopTimer()
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				l, feed := newBusyLive(b, bc.w)
				feed.obsPerSec, feed.reqsPerTape = 700, 4
				b.StartTimer()
				feed.feed(l, 0, time.Hour)
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				s := l.Session()
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "MiB-retained")
				b.ReportMetric(float64(l.kept)/(1<<20), "MiB-estimated")
				b.ReportMetric((s.Duration() - s.From()).Minutes(), "min-kept")
				b.ReportMetric(float64(feed.slowest.Milliseconds()), "ms-slowest-record")
				b.ReportMetric(float64(int(feed.seq)+feed.tapes), "records")
				if n := len(feed.trimsTook); n > 0 {
					slices.Sort(feed.trimsTook)
					b.ReportMetric(float64(n), "trims")
					b.ReportMetric(float64(feed.trimsTook[n/2].Microseconds())/1000, "ms-median-trim")
					b.ReportMetric(float64(feed.trimsTook[n-1].Microseconds())/1000, "ms-longest-trim")
				}
				runtime.KeepAlive(l)
			}
		})
	}
}
