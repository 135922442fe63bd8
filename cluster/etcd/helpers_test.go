package etcd_test

// Helpers shared by the member's correctness tests (linearizability, faults,
// crashes, bad input, watch): waiting on member status, reading one member's
// own state, and following a member's raft event stream.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// pollInterval is how often tests look at member status where no event
// exists to wait on.
const pollInterval = etcdtest.PollInterval

// fastTicks shortens the raft clock so that elections take a few hundred
// milliseconds: for tests whose subject is not the default timing.
func fastTicks(tick time.Duration) func(*etcd.Config) {
	return func(cfg *etcd.Config) { cfg.TickInterval = tick }
}

// waitFor polls cond until it holds or timeout passes.
var waitFor = etcdtest.WaitFor

// status returns member i's status, or a "stopped" status if it is not
// running.
func status(c *etcdtest.Cluster, i int) etcd.Status {
	m := c.Member(i)
	if m == nil {
		return etcd.Status{Name: c.Peers[i].Name, State: "stopped"}
	}
	return m.Status()
}

// running returns the indexes of the members that are running.
func running(c *etcdtest.Cluster) []int {
	var out []int
	for i := range c.Peers {
		if c.Member(i) != nil {
			out = append(out, i)
		}
	}
	return out
}

// leaders returns the indexes of the running members that think they lead.
func leaders(c *etcdtest.Cluster, among []int) []int {
	var out []int
	for _, i := range among {
		if status(c, i).State == "StateLeader" {
			out = append(out, i)
		}
	}
	return out
}

// waitConverged waits until every running member agrees on one leader and
// has applied the same index, reaching the same revision: the logs have
// converged. It returns the leader's index.
//
// timeout is counted on the wall clock and in the members' raft ticks:
// raft elects in ticks, and on a starved machine (a load average of 50 on
// two cores) a member's clock goroutine and raft loop run so seldom that
// 30 s of wall time may hold a few dozen ticks, too few election rounds to
// say anything. The wait goes on past timeout, up to starvedFactor times
// it, while some running member has ticked less than timeout's worth; a
// member that stops ticking altogether (a raft loop stuck for good) fails
// at that cap, and the report says how far each clock got.
func waitConverged(t testing.TB, c *etcdtest.Cluster, timeout time.Duration) int {
	t.Helper()
	lead := -1
	var last string
	start := time.Now()
	deadline := start.Add(timeout)
	ticks := newTickMeter(c)
	extended := false
	defer func() {
		if took := time.Since(start); took > timeout/4 {
			t.Logf("convergence took %v (%s)", took.Round(time.Millisecond), ticks.describe(c))
		}
	}()
	for {
		lead = c.Leader()
		if lead < 0 {
			var desc []string
			for _, i := range running(c) {
				st := status(c, i)
				// Enough to tell a stuck member from a slow one: whether
				// its clock still ticks, how long since it heard a leader,
				// and, on a leader, how it sees each follower.
				d := fmt.Sprintf("%s: %s term %d vote %s leader %s commit %d applied %d last %d ticks %d elapsed %d/%d",
					st.Name, st.State, st.Term, st.Vote, st.Leader, st.Commit, st.Applied, st.LastIndex, st.Clock.Ticks, st.ElectionElapsed, st.RandomizedElectionTicks)
				for id, pr := range st.Progress {
					d += fmt.Sprintf(" [%s %s match %d next %d active %v paused %v]", id, pr.State, pr.Match, pr.Next, pr.RecentActive, pr.Paused)
				}
				desc = append(desc, d)
			}
			last = "no agreed leader: " + fmt.Sprint(desc)
		}
		if lead >= 0 && len(leaders(c, running(c))) == 1 {
			ls := status(c, lead)
			same := true
			var desc []string
			for _, i := range running(c) {
				st := status(c, i)
				desc = append(desc, fmt.Sprintf("%s: %s term %d commit %d applied %d rev %d", st.Name, st.State, st.Term, st.Commit, st.Applied, st.Revision))
				if st.Applied != ls.Commit || st.Commit != ls.Commit || st.Revision != ls.Revision || st.Term != ls.Term {
					same = false
				}
			}
			if same {
				return lead
			}
			last = fmt.Sprint(desc)
		}
		if time.Now().After(deadline) {
			if ticks.behind(c, timeout) && time.Since(start) < starvedFactor*timeout {
				if !extended {
					extended = true
					t.Logf("not converged after %v, but the members' clocks are behind the wall clock (%s): the machine is starved; waiting up to %v", timeout, ticks.describe(c), starvedFactor*timeout)
				}
			} else {
				t.Fatalf("members did not converge within %v (leader %d; %s): %s", time.Since(start).Round(time.Millisecond), lead, ticks.describe(c), last)
			}
		}
		time.Sleep(pollInterval)
	}
}

// starvedFactor caps how far waitConverged stretches its timeout for
// members whose clocks fall behind the wall clock.
const starvedFactor = 4

// tickMeter counts the raft ticks each member has made since it was made.
type tickMeter struct {
	start map[int]uint64
}

func newTickMeter(c *etcdtest.Cluster) *tickMeter {
	tm := &tickMeter{start: map[int]uint64{}}
	for _, i := range running(c) {
		tm.start[i] = status(c, i).Clock.Ticks
	}
	return tm
}

// made is how many ticks member i has made since the meter started (all
// of them if it was restarted or not running then).
func (tm *tickMeter) made(st etcd.Status, i int) uint64 {
	if s, ok := tm.start[i]; ok && st.Clock.Ticks >= s {
		return st.Clock.Ticks - s
	}
	return st.Clock.Ticks
}

// behind reports whether some running member has made fewer ticks than
// d holds at its tick interval.
func (tm *tickMeter) behind(c *etcdtest.Cluster, d time.Duration) bool {
	for _, i := range running(c) {
		st := status(c, i)
		if st.Clock.TickIntervalMS <= 0 {
			continue
		}
		want := uint64(float64(d) / (st.Clock.TickIntervalMS * float64(time.Millisecond)))
		if tm.made(st, i) < want {
			return true
		}
	}
	return false
}

func (tm *tickMeter) describe(c *etcdtest.Cluster) string {
	var parts []string
	for _, i := range running(c) {
		st := status(c, i)
		parts = append(parts, fmt.Sprintf("%s ticked %d times at %gms", st.Name, tm.made(st, i), st.Clock.TickIntervalMS))
	}
	return strings.Join(parts, ", ")
}

// memberKVs reads every key under prefix from member i alone, with a
// serializable read: what that member itself has applied, not what the
// leader knows.
func memberKVs(t testing.TB, c *etcdtest.Cluster, i int, prefix string) map[string]string {
	t.Helper()
	cli := c.Client(c.Peers[i].ClientURL)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSerializable())
	if err != nil {
		t.Fatalf("serializable read of %s* from %s: %v", prefix, c.Peers[i].Name, err)
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}

// diffKVs describes how got differs from want, at most a few keys of it.
func diffKVs(want, got map[string]string) string {
	var diffs []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s missing (want %q)", k, v))
		} else if g != v {
			diffs = append(diffs, fmt.Sprintf("%s = %q, want %q", k, g, v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s = %q unexpected", k, v))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 5 {
		diffs = append(diffs[:5], fmt.Sprintf("... and %d more", len(diffs)-5))
	}
	return fmt.Sprint(diffs)
}

// followEvents streams member events from a peer URL's /debug/klab/events
// (replaying the retained ones first) until the test ends.
func followEvents(t testing.TB, peerURL string) <-chan etcd.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, peerURL+"/debug/klab/events?since=0", nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("follow events of %s: %v", peerURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		t.Fatalf("follow events of %s: %s", peerURL, resp.Status)
	}
	out := make(chan etcd.Event, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			var e etcd.Event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-done
	})
	return out
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := etcdtest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
