package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// These tests run on upstream's default timings (100 ms ticks, an election
// timeout of 10 ticks = 1 s, randomised by raft to 1.0–1.9 s), so the
// bounds they assert are the ones a user of etcd would expect.
const defaultElectionTimeout = etcd.DefaultElectionTicks * etcd.DefaultTickInterval

// waitNewLeader polls the members in among until one of them leads with a
// term above oldTerm and the others of among follow it; it returns the
// leader's index, its term and when the leader was first seen.
func waitNewLeader(t *testing.T, c *etcdtest.Cluster, among []int, oldTerm uint64, timeout time.Duration) (int, uint64, time.Time) {
	t.Helper()
	var lead int
	var term uint64
	var seen time.Time
	waitFor(t, timeout, fmt.Sprintf("a leader with a term above %d among %v", oldTerm, among), func() bool {
		lead = -1
		for _, i := range among {
			if st := status(c, i); st.State == "StateLeader" && st.Term > oldTerm {
				lead, term = i, st.Term
			}
		}
		if lead < 0 {
			return false
		}
		if seen.IsZero() {
			seen = time.Now()
		}
		id := status(c, lead).ID
		for _, i := range among {
			if st := status(c, i); st.Leader != id || st.Term != term {
				return false
			}
		}
		return true
	})
	return lead, term, seen
}

// putKeys writes n keys name/0 … name/n-1 through cli and returns them.
func putKeys(t *testing.T, cli *clientv3.Client, name string, n int) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kvs := map[string]string{}
	for i := 0; i < n; i++ {
		k, v := name+"/"+strconv.Itoa(i), fmt.Sprintf("%s-value-%d", name, i)
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		kvs[k] = v
	}
	return kvs
}

func indexesExcept(n int, except ...int) []int {
	var out []int
next:
	for i := 0; i < n; i++ {
		for _, e := range except {
			if i == e {
				continue next
			}
		}
		out = append(out, i)
	}
	return out
}

func endpointsOf(c *etcdtest.Cluster, idx []int) []string {
	eps := make([]string, len(idx))
	for j, i := range idx {
		eps[j] = c.Peers[i].ClientURL
	}
	return eps
}

// TestFaultLeaderKilled kills the leader: a new leader with a higher term is
// elected within two election timeouts, reads and writes carry on, and the
// old leader, restarted on its data, rejoins as a follower with all data
// (including what was written while it was down) without disturbing the
// new leader (pre-vote).
func TestFaultLeaderKilled(t *testing.T) {
	c := etcdtest.New(t, 3, nil)
	want := putKeys(t, c.Client(), "/before", 5)
	old := c.WaitLeader(5 * time.Second)
	oldTerm := status(c, old).Term

	killed := time.Now()
	c.Kill(old)
	survivors := indexesExcept(3, old)
	lead, term, seen := waitNewLeader(t, c, survivors, oldTerm, 10*time.Second)
	if took := seen.Sub(killed); took > 2*defaultElectionTimeout {
		t.Errorf("new leader %s (term %d) took %v after the kill, want at most 2 × election timeout = %v", c.Peers[lead].Name, term, took, 2*defaultElectionTimeout)
	} else {
		t.Logf("new leader %s, term %d → %d, %v after the kill (election timeout %v)", c.Peers[lead].Name, oldTerm, term, took, defaultElectionTimeout)
	}

	cli := c.Client(endpointsOf(c, survivors)...)
	for k, v := range putKeys(t, cli, "/after", 5) {
		want[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("linearizable read after failover: %v", err)
	}
	if int(resp.Count) != len(want) {
		t.Errorf("read after failover: %d keys, want %d", resp.Count, len(want))
	}

	if err := c.Start(old); err != nil {
		t.Fatalf("restart old leader: %v", err)
	}
	leadSt := status(c, lead)
	waitFor(t, 10*time.Second, "the old leader to rejoin as a follower and catch up", func() bool {
		st := status(c, old)
		return st.State == "StateFollower" && st.Leader == leadSt.ID && st.Applied >= leadSt.Commit
	})
	if got := memberKVs(t, c, old, "/"); diffKVs(want, got) != "[]" {
		t.Errorf("restarted %s serves (serializable) %s", c.Peers[old].Name, diffKVs(want, got))
	}
	waitConverged(t, c, 5*time.Second)
	if st := status(c, lead); st.State != "StateLeader" || st.Term != term {
		t.Errorf("the rejoining member disturbed the leader: %s is %s in term %d, was leader in term %d", st.Name, st.State, st.Term, term)
	}
}

// TestFaultLeaderPartitioned cuts the leader (with others, up to a minority)
// off from the rest. The majority elects a new leader and keeps committing;
// a write sent to the cut-off old leader fails with "no leader" instead of
// hanging; once healed there is exactly one leader and every member holds
// the same log and the same data.
func TestFaultLeaderPartitioned(t *testing.T) {
	tests := []struct {
		name     string
		members  int
		minority int // members on the old leader's side, itself included
	}{
		{"3 members, leader alone", 3, 1},
		{"5 members, leader and one follower", 5, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := etcdtest.New(t, tt.members, nil)
			want := putKeys(t, c.Client(), "/before", 3)
			old := c.WaitLeader(5 * time.Second)
			oldTerm := status(c, old).Term
			minority := []int{old}
			for i := 0; len(minority) < tt.minority; i++ {
				if i != old {
					minority = append(minority, i)
				}
			}
			majority := indexesExcept(tt.members, minority...)
			var minNames, majNames []string
			for _, i := range minority {
				minNames = append(minNames, c.Peers[i].Name)
			}
			for _, i := range majority {
				majNames = append(majNames, c.Peers[i].Name)
			}

			cut := time.Now()
			c.Faults.Partition(minNames, majNames)
			lead, term, seen := waitNewLeader(t, c, majority, oldTerm, 10*time.Second)
			// A follower notices the leader gone after its randomised
			// election timeout, up to two timeouts; the pre-vote and the
			// vote follow, and on a machine loaded by other tests each
			// step runs late: three timeouts is still far below what a
			// stuck election (no randomisation, no pre-vote answers)
			// would take.
			if took := seen.Sub(cut); took > 3*defaultElectionTimeout {
				t.Errorf("majority %v elected %s after %v, want at most %v", majNames, c.Peers[lead].Name, took, 3*defaultElectionTimeout)
			}
			for k, v := range putKeys(t, c.Client(endpointsOf(c, majority)...), "/majority", 5) {
				want[k] = v
			}

			// CheckQuorum makes the old leader step down once it has not
			// heard from a quorum for an election timeout.
			waitFor(t, 3*defaultElectionTimeout, "the cut-off old leader to step down", func() bool {
				return len(leaders(c, minority)) == 0
			})
			// The member answers "no leader" after 2 election timeouts
			// without one; the deadline leaves room for that and then
			// some, so an error before it is the member's own answer.
			deadline := 2*defaultElectionTimeout + 3*time.Second
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			sent := time.Now()
			_, err := c.Client(c.Peers[old].ClientURL).Put(ctx, "/minority/lost", "never committed")
			took := time.Since(sent)
			switch {
			case err == nil:
				t.Fatalf("write to the cut-off old leader %s succeeded", c.Peers[old].Name)
			case ctx.Err() != nil:
				t.Fatalf("write to the cut-off old leader hung until the client deadline (%v): %v", deadline, err)
			case !errors.Is(err, rpctypes.ErrNoLeader):
				t.Errorf("write to the cut-off old leader failed after %v with %v, want %v", took, err, rpctypes.ErrNoLeader)
			default:
				t.Logf("write to the cut-off old leader: %v after %v", err, took)
			}

			c.Faults.Heal()
			if got := waitConverged(t, c, 10*time.Second); got != lead {
				t.Errorf("after healing %s leads, want the majority's leader %s", c.Peers[got].Name, c.Peers[lead].Name)
			}
			if st := status(c, lead); st.Term != term {
				t.Errorf("healing disturbed the leader: term %d → %d (pre-vote should prevent it)", term, st.Term)
			}
			if n := leaders(c, running(c)); len(n) != 1 {
				t.Errorf("after healing %d members think they lead, want 1", len(n))
			}
			ref := memberKVs(t, c, lead, "/")
			if d := diffKVs(want, ref); d != "[]" {
				t.Errorf("leader %s holds %s", c.Peers[lead].Name, d)
			}
			for _, i := range running(c) {
				if d := diffKVs(ref, memberKVs(t, c, i, "/")); d != "[]" {
					t.Errorf("%s differs from the leader: %s", c.Peers[i].Name, d)
				}
			}
		})
	}
}
