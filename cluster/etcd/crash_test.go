package etcd_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// writeLoad is a set of writers putting distinct keys as fast as the
// cluster lets them, recording every write the cluster acknowledged (and
// every write they tried, whose outcome may be unknown).
type writeLoad struct {
	mu     sync.Mutex
	acked  map[string]string
	tried  map[string]string
	failed int
	stop   chan struct{}
	wg     sync.WaitGroup
}

func startWriteLoad(c *etcdtest.Cluster, writers int, prefix string) *writeLoad {
	l := &writeLoad{acked: map[string]string{}, tried: map[string]string{}, stop: make(chan struct{})}
	for w := 0; w < writers; w++ {
		cli := c.Client()
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				k, v := fmt.Sprintf("%s/w%d/%06d", prefix, w, n), fmt.Sprintf("w%d-n%d", w, n)
				l.mu.Lock()
				l.tried[k] = v
				l.mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := cli.Put(ctx, k, v)
				cancel()
				l.mu.Lock()
				if err == nil {
					l.acked[k] = v
				} else {
					l.failed++
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *writeLoad) Stop() {
	close(l.stop)
	l.wg.Wait()
}

func (l *writeLoad) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// crashKill says which member a crash step kills.
type crashKill int

const (
	killLeader crashKill = iota
	killFollower
	// killFollowerPastCompaction keeps a follower down until the leader
	// has compacted its log past the follower's last index, so that the
	// follower can only catch up from a snapshot.
	killFollowerPastCompaction
)

func (k crashKill) String() string {
	return [...]string{"leader", "follower", "follower past compaction"}[k]
}

// TestCrashSafety kills members (leaders included) abruptly in the middle of
// a write load, several times, restarting each on its data. Afterwards every
// acknowledged write is on every member, and no member holds a write nobody
// made. With a small SnapshotCount a member that was down while the others
// compacted their logs catches up from a snapshot.
func TestCrashSafety(t *testing.T) {
	tests := []struct {
		name  string
		tune  func(*etcd.Config)
		kills []crashKill
	}{
		{
			name:  "kill leader and followers",
			tune:  fastTicks(50 * time.Millisecond),
			kills: []crashKill{killLeader, killFollower, killLeader, killFollower},
		},
		{
			name: "small snapshot count, catch-up from snapshot",
			tune: func(cfg *etcd.Config) {
				cfg.TickInterval = 50 * time.Millisecond
				cfg.SnapshotCount = 50
				cfg.SnapshotCatchUp = 10
			},
			kills: []crashKill{killFollowerPastCompaction, killLeader, killFollowerPastCompaction},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := etcdtest.New(t, 3, tt.tune)
			load := startWriteLoad(c, 4, "/crash")
			waitFor(t, 10*time.Second, "the load to get going", func() bool { return load.ackedCount() >= 20 })
			for step, kind := range tt.kills {
				crashOnce(t, c, load, step, kind)
			}
			load.Stop()
			waitConverged(t, c, 15*time.Second)

			load.mu.Lock()
			defer load.mu.Unlock()
			t.Logf("%d writes acknowledged, %d failed (outcome unknown)", len(load.acked), load.failed)
			if len(load.acked) < 100 {
				t.Errorf("only %d writes were acknowledged: too few to prove anything", len(load.acked))
			}
			for i := range c.Peers {
				got := memberKVs(t, c, i, "/crash/")
				var lost, phantom []string
				for k, v := range load.acked {
					if got[k] != v {
						lost = append(lost, fmt.Sprintf("%s=%q (has %q)", k, v, got[k]))
					}
				}
				for k, v := range got {
					if load.tried[k] != v {
						phantom = append(phantom, fmt.Sprintf("%s=%q", k, v))
					}
				}
				if len(lost) > 0 {
					t.Errorf("%s lost %d acknowledged writes, e.g. %v", c.Peers[i].Name, len(lost), lost[:min(5, len(lost))])
				}
				if len(phantom) > 0 {
					t.Errorf("%s holds %d writes nobody made, e.g. %v", c.Peers[i].Name, len(phantom), phantom[:min(5, len(phantom))])
				}
			}
		})
	}
}

// crashOnce kills one member under load, restarts it, and waits until it
// has caught up.
func crashOnce(t *testing.T, c *etcdtest.Cluster, load *writeLoad, step int, kind crashKill) {
	t.Helper()
	victim := c.WaitLeader(10 * time.Second)
	if kind != killLeader {
		victim = (victim + 1 + step%2) % len(c.Peers)
	}
	name := c.Peers[victim].Name
	before := status(c, victim)
	c.Kill(victim)
	acked := load.ackedCount()
	if kind == killFollowerPastCompaction {
		waitFor(t, 20*time.Second, fmt.Sprintf("the leader to compact its log past %s's last index %d", name, before.LastIndex), func() bool {
			l := c.Leader()
			return l >= 0 && status(c, l).FirstIndex > before.LastIndex+1
		})
	}
	// Keep the member down while at least some writes commit without it.
	waitFor(t, 10*time.Second, "writes to commit while "+name+" is down", func() bool { return load.ackedCount() >= acked+20 })

	if err := c.Start(victim); err != nil {
		t.Fatalf("step %d: restart %s: %v", step, name, err)
	}
	var events <-chan etcd.Event
	if kind == killFollowerPastCompaction {
		events = followEvents(t, c.Peers[victim].PeerURL)
	}
	if st := status(c, victim); st.Applied < before.Applied {
		t.Errorf("step %d: %s restarted with applied index %d, below the %d it had applied before the kill", step, name, st.Applied, before.Applied)
	}
	lead := c.WaitLeader(10 * time.Second)
	target := status(c, lead).Commit
	waitFor(t, 15*time.Second, fmt.Sprintf("%s to catch up to index %d", name, target), func() bool {
		return status(c, victim).Applied >= target
	})
	t.Logf("step %d: killed %s (%s) at applied %d, restarted, caught up to %d", step, name, kind, before.Applied, target)

	if kind == killFollowerPastCompaction {
		installed := waitEvent(t, events, 10*time.Second, func(e etcd.Event) bool {
			return e.Kind == etcd.EventSnapshot && strings.HasPrefix(e.Detail, "installed snapshot")
		})
		st := status(c, victim)
		if st.SnapshotIndex <= before.LastIndex || st.FirstIndex <= before.LastIndex {
			t.Errorf("step %d: %s caught up but its snapshot index %d / first index %d do not pass its old last index %d",
				step, name, st.SnapshotIndex, st.FirstIndex, before.LastIndex)
		}
		t.Logf("step %d: %s: %s", step, name, installed.Detail)
	}
}

// waitEvent returns the first event from events that match accepts.
func waitEvent(t *testing.T, events <-chan etcd.Event, timeout time.Duration, match func(etcd.Event) bool) etcd.Event {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("event stream ended before the expected event")
			}
			if match(e) {
				return e
			}
		case <-timer.C:
			t.Fatalf("expected event did not arrive within %v", timeout)
		}
	}
}
