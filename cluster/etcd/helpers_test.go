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
func waitConverged(t testing.TB, c *etcdtest.Cluster, timeout time.Duration) int {
	t.Helper()
	lead := -1
	var last string
	deadline := time.Now().Add(timeout)
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
			t.Fatalf("members did not converge within %v (leader %d): %s", timeout, lead, last)
		}
		time.Sleep(pollInterval)
	}
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
