package etcd_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func postClock(t *testing.T, peerURL string, req etcd.ClockRequest) etcd.ClockStatus {
	t.Helper()
	b, _ := json.Marshal(req)
	resp, err := http.Post(peerURL+"/debug/klab/clock", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST clock: %s", resp.Status)
	}
	var st etcd.ClockStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestDebugStatusReportsLeaderProgress(t *testing.T) {
	c := etcdtest.New(t, 3, nil)
	lead := c.WaitLeader(5 * time.Second)
	// Just after an election the leader has not heard back from its
	// followers yet (match 0); wait for their first replies.
	var st etcd.Status
	waitFor(t, 5*time.Second, "the leader to hear from both followers", func() bool {
		st = etcd.Status{}
		getJSON(t, c.Peers[lead].PeerURL+"/debug/klab/status", &st)
		if st.State != "StateLeader" || st.Name != c.Peers[lead].Name || st.Term == 0 {
			t.Fatalf("leader status = %+v", st)
		}
		if len(st.Progress) != 2 {
			t.Fatalf("leader reports progress for %d followers, want 2: %+v", len(st.Progress), st.Progress)
		}
		for _, pr := range st.Progress {
			if pr.Match == 0 {
				return false
			}
		}
		return true
	})
	for name, pr := range st.Progress {
		if pr.Match == 0 || pr.Next <= pr.Match || pr.State != "StateReplicate" {
			t.Errorf("progress of %s = %+v", name, pr)
		}
	}
	follower := (lead + 1) % 3
	var fst etcd.Status
	getJSON(t, c.Peers[follower].PeerURL+"/debug/klab/status", &fst)
	if fst.State != "StateFollower" || fst.Leader == "0" || fst.Progress != nil {
		t.Fatalf("follower status = %+v", fst)
	}
}

// With every clock paused, nothing times out: killing the leader elects no
// one until the members' clocks are stepped past their election timeout.
// Both survivors must be stepped: with CheckQuorum a follower whose own
// clock says it heard from the leader recently refuses to vote. The votes
// travel over the (running) network and show on the event stream.
func TestPausedClockStepsAnElection(t *testing.T) {
	c := etcdtest.New(t, 3, nil)
	lead := c.WaitLeader(5 * time.Second)
	paused := true
	for i := range c.Peers {
		if st := postClock(t, c.Peers[i].PeerURL, etcd.ClockRequest{Paused: &paused}); !st.Paused {
			t.Fatalf("clock of %s not paused: %+v", c.Peers[i].Name, st)
		}
	}
	oldTerm := c.Member(lead).Status().Term
	c.Kill(lead)
	candidate := (lead + 1) % 3

	// Subscribe to the candidate's events before stepping its clock.
	resp, err := http.Get(c.Peers[candidate].PeerURL + "/debug/klab/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan etcd.Event, 1024)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e etcd.Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				events <- e
			}
		}
		close(events)
	}()

	survivors := []int{candidate, (lead + 2) % 3}
	// Ticks before the election timeout (10 ticks) change nothing.
	for _, i := range survivors {
		postClock(t, c.Peers[i].PeerURL, etcd.ClockRequest{Step: 5})
	}
	for _, i := range survivors {
		if st := c.Member(i).Status(); st.State != "StateFollower" || st.Term != oldTerm {
			t.Fatalf("after 5 ticks %s is %s in term %d; want follower in term %d", c.Peers[i].Name, st.State, st.Term, oldTerm)
		}
	}
	// The randomised timeout is below 2 × 10 ticks: 20 more are enough for
	// both to campaign. If their votes split, only the candidate's clock
	// moves on, so its next campaign meets no rival.
	for _, i := range survivors {
		postClock(t, c.Peers[i].PeerURL, etcd.ClockRequest{Step: 20})
	}
	go func() {
		for round := 0; round < 10; round++ {
			a, b := c.Member(survivors[0]), c.Member(survivors[1])
			if a == nil || b == nil {
				return
			}
			if sa, sb := a.Status(), b.Status(); sa.Leader != "0" && sa.Leader == sb.Leader {
				return
			}
			time.Sleep(200 * time.Millisecond) // let the round's votes land
			a.SetClock(etcd.ClockRequest{Step: 20})
		}
	}()

	// The stream first replays the first election; count what follows the
	// second step of the clock.
	seen := map[string]bool{}
	stepped := false
	deadline := time.After(5 * time.Second)
	for !(seen["MsgPreVote"] && seen["MsgVote"] && seen["MsgVoteResp"] && seen["new term"]) {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("event stream ended")
			}
			if e.Kind == etcd.EventClock && e.Detail == "interval 100ms paused=true step=20" {
				stepped = true
			}
			if !stepped {
				continue
			}
			if e.Msg != nil && (e.Kind == etcd.EventSend || e.Kind == etcd.EventRecv) {
				seen[e.Msg.Type] = true
			}
			if e.Kind == etcd.EventLeader && e.Leader != "0" && e.Term > oldTerm {
				seen["new term"] = true
			}
		case <-deadline:
			t.Fatalf("election not seen on the event stream; saw %v", seen)
		}
	}
	// The candidate reports its own win; the other survivor learns of it
	// from the new leader's first append, which may still be on its way:
	// messages flow while the clocks are paused, so it arrives without a
	// tick.
	var a, b etcd.Status
	for agreed := time.After(5 * time.Second); ; {
		a, b = c.Member(survivors[0]).Status(), c.Member(survivors[1]).Status()
		if a.Leader == b.Leader && a.Leader != "0" && a.Term > oldTerm {
			break
		}
		select {
		case <-agreed:
		case <-time.After(10 * time.Millisecond):
			continue
		}
		t.Fatalf("after the stepped election: %s sees leader %s in term %d, %s sees %s in term %d; want one leader above term %d",
			a.Name, a.Leader, a.Term, b.Name, b.Leader, b.Term, oldTerm)
	}
}

// /health answers as etcd's does: healthy with a leader, 503 without.
func TestHealthFollowsLeadership(t *testing.T) {
	c := etcdtest.New(t, 1, nil)
	c.WaitLeader(5 * time.Second)
	resp, err := http.Get(c.Peers[0].PeerURL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != `{"health":"true","reason":""}` {
		t.Fatalf("/health with a leader = %d %s", resp.StatusCode, body)
	}
}

// arrival is an event read from a stream, and when it was read.
type arrival struct {
	at time.Time
	e  etcd.Event
}

// arrivals reads the event stream at url until the test ends.
func arrivals(t *testing.T, url string) <-chan arrival {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); resp.Body.Close() })
	lines := make(chan arrival, 4096)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var e etcd.Event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			select {
			case lines <- arrival{time.Now(), e}:
			case <-done:
				return
			}
		}
	}()
	return lines
}

// With ?quiet=, a steady cluster's traffic waits on the member until the
// next multiple of the quiet interval, and news (here a clock change) goes out at once,
// taking the waiting traffic with it.
func TestEventStreamHoldsRoutineTraffic(t *testing.T) {
	c := etcdtest.New(t, 3, nil)
	lead := c.WaitLeader(5 * time.Second)
	url := c.Peers[lead].PeerURL + "/debug/klab/events"

	for _, bad := range []string{"abc", "-1s", "3s"} {
		resp, err := http.Get(url + "?quiet=" + bad)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("quiet=")) {
			t.Errorf("quiet=%s: %s %q; want 400 naming quiet", bad, resp.Status, body)
		}
	}

	// Held traffic is sent on multiples of 2 s: connect just after one.
	time.Sleep(time.Until(time.Now().Truncate(2 * time.Second).Add(2*time.Second + 20*time.Millisecond)))
	// No replay (since = the largest sequence number): only what the
	// leader does from now on, heartbeats ten times a second.
	lines := arrivals(t, url+"?quiet=2s&since=18446744073709551615")
	connected := time.Now()

	time.Sleep(500 * time.Millisecond)
	posted := time.Now()
	postClock(t, c.Peers[lead].PeerURL, etcd.ClockRequest{})
	routine := 0
	for a := range lines {
		if a.at.Before(posted) {
			t.Fatalf("%s %s arrived %v after connecting, before any news: routine traffic was not held", a.e.Kind, a.e.Msg.Type, a.at.Sub(connected))
		}
		if a.e.Kind == etcd.EventClock {
			if late := a.at.Sub(posted); late > time.Second {
				t.Fatalf("the clock change arrived %v after it was made; news waits at most 50 ms", late)
			}
			if routine == 0 {
				t.Fatal("the clock change came without the heartbeats sent before it")
			}
			return
		}
		if !a.e.Routine() {
			t.Fatalf("unexpected news on a steady cluster: %+v", a.e)
		}
		routine++
	}
	t.Fatal("the stream ended before the clock change")
}

// Without ?series=, a held stream leaves nothing out: on the leader's
// stream of a steady cluster, sequence numbers follow each other, and over
// whole beats the heartbeats it sent add up to what raft sends (one a
// tick).
func TestEventStreamCarriesEveryEvent(t *testing.T) {
	c := etcdtest.New(t, 3, nil)
	lead := c.WaitLeader(5 * time.Second)
	lines := arrivals(t, c.Peers[lead].PeerURL+"/debug/klab/events?quiet=500ms&since=18446744073709551615")

	const beat = 500 * time.Millisecond
	start := time.Now().Truncate(beat).Add(beat)
	end := start.Add(4 * beat)
	var prev uint64
	beats := map[string]int{} // heartbeats sent per follower
	for a := range lines {
		e := a.e
		if prev != 0 && e.Seq != prev+1 {
			t.Fatalf("event %d after %d: events left out", e.Seq, prev)
		}
		prev = e.Seq
		if e.Beats != 0 || e.Skipped != 0 {
			t.Fatalf("heartbeats written as a series without ?series=: %+v", e)
		}
		if !e.Heartbeat() || e.Kind != etcd.EventSend || e.Msg.Type != "MsgHeartbeat" {
			continue
		}
		if a.at.Before(start) {
			continue
		}
		if !a.at.Before(end) {
			break
		}
		beats[e.Msg.To]++
	}
	// Four beats of 500 ms at one heartbeat per 100 ms tick: 20 to each
	// follower, give or take the flushes' edges and a loaded machine.
	if len(beats) != 2 {
		t.Fatalf("heartbeats went to %d followers, want 2: %v", len(beats), beats)
	}
	for to, n := range beats {
		if n < 10 || n > 30 {
			t.Errorf("%d heartbeats to %s over 2 s, want about 20", n, to)
		}
	}
}

// With ?series=true, each flush writes a pair's heartbeats as the last of
// them, counted in its Beats, and the others as skipped: on the leader's
// stream of a steady cluster, over whole beats, no sequence number goes
// missing unaccounted, no flush carries two heartbeats from the leader to
// one follower, and the counts add up to what raft sends (one a tick).
func TestEventStreamWritesHeartbeatSeries(t *testing.T) {
	c := etcdtest.New(t, 3, nil)
	lead := c.WaitLeader(5 * time.Second)
	lines := arrivals(t, c.Peers[lead].PeerURL+"/debug/klab/events?quiet=500ms&series=true&since=18446744073709551615")

	const beat = 500 * time.Millisecond
	start := time.Now().Truncate(beat).Add(beat)
	end := start.Add(4 * beat)
	var prev uint64
	beats := map[string]int{}    // heartbeats sent per follower
	perFlush := map[string]int{} // per follower and flush
	for a := range lines {
		e := a.e
		if prev != 0 && e.Seq != prev+1+e.Skipped {
			t.Fatalf("event %d after %d with %d skipped: events lost", e.Seq, prev, e.Skipped)
		}
		prev = e.Seq
		if !e.Heartbeat() || e.Kind != etcd.EventSend || e.Msg.Type != "MsgHeartbeat" {
			continue
		}
		if a.at.Before(start) {
			continue
		}
		if !a.at.Before(end) {
			break
		}
		flush := a.at.Truncate(beat).String()
		if perFlush[flush+e.Msg.To]++; perFlush[flush+e.Msg.To] > 1 {
			t.Errorf("two heartbeats to %s in the flush at %s", e.Msg.ToName, flush)
		}
		beats[e.Msg.To] += e.Count()
	}
	// Four beats of 500 ms at one heartbeat per 100 ms tick: 20 to each
	// follower, give or take the flushes' edges and a loaded machine.
	if len(beats) != 2 {
		t.Fatalf("heartbeats went to %d followers, want 2: %v", len(beats), beats)
	}
	for to, n := range beats {
		if n < 10 || n > 30 {
			t.Errorf("%d heartbeats counted to %s over 2 s, want about 20", n, to)
		}
	}
}

// With ?status=flush, each flush of a held stream ends with the member's
// status, unnumbered, after the events it follows.
func TestEventStreamEndsFlushesWithStatus(t *testing.T) {
	c := etcdtest.New(t, 3, nil)
	lead := c.WaitLeader(5 * time.Second)
	resp, err := http.Get(c.Peers[lead].PeerURL + "/debug/klab/events?quiet=250ms&status=flush&since=18446744073709551615")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	statuses, events := 0, 0
	for statuses < 3 && sc.Scan() {
		var line struct {
			etcd.Event
			Status *etcd.Status `json:"status"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Kind != eventstream.StatusKind {
			if line.Status != nil {
				t.Errorf("a %s event carries a status", line.Kind)
			}
			events++
			continue
		}
		if st := line.Status; st == nil || line.Seq != 0 || st.State != "StateLeader" || st.Name != c.Peers[lead].Name {
			t.Fatalf("status line %s; want the leader's status, unnumbered", sc.Bytes())
		}
		if events == 0 {
			t.Errorf("a status with no event before it in its flush")
		}
		statuses++
		events = 0
	}
	if statuses < 3 {
		t.Fatalf("the stream ended after %d statuses: %v", statuses, sc.Err())
	}
}
