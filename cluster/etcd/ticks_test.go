package etcd_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
	"github.com/klab-dev/klab/internal/testenv"
)

// stillClock is a tick interval no test outlives: the members' clocks make
// no tick of their own (the first could come at a random fraction of it,
// one in hundreds of thousands of runs), so every tick seen is the start's
// fast-forward or a step of the test.
const stillClock = time.Hour

// startMembers starts a new cluster of n members named prefix1..prefixN
// with the raft clock still, and stops them at the end of the test.
func startMembers(t *testing.T, prefix string, n int, tune func(*etcd.Config)) []*etcd.Member {
	t.Helper()
	dir := t.TempDir()
	var peers []etcd.Peer
	var listens [][2]string
	for i := range n {
		client, err := etcdtest.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		peer, err := etcdtest.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		listens = append(listens, [2]string{client, peer})
		peers = append(peers, etcd.Peer{Name: fmt.Sprintf("%s%d", prefix, i+1), PeerURL: "http://" + peer, ClientURL: "http://" + client})
	}
	members := make([]*etcd.Member, n)
	errs := make(chan error, n)
	for i := range n {
		cfg := etcd.Config{
			Name: peers[i].Name, DataDir: filepath.Join(dir, peers[i].Name), ClusterToken: "ticks-" + prefix,
			InitialCluster: peers, ClientListen: listens[i][0], PeerListen: listens[i][1], TickInterval: stillClock,
		}
		if tune != nil {
			tune(&cfg)
		}
		m, err := etcd.NewMember(cfg)
		if err != nil {
			t.Fatal(err)
		}
		members[i] = m
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errs <- m.Start(ctx)
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, m := range members {
			m.Stop()
		}
	})
	return members
}

// A cluster started from nothing fast-forwards its election ticks once its
// peers' streams are up, as etcd's --initial-election-tick-advance does:
// ElectionTicks−2 of them, short of any randomised election timeout, so
// that nobody campaigns on the fast-forward alone but the first to reach
// its timeout needs only a fraction of one.
func TestStartFastForwardsElectionTicks(t *testing.T) {
	testenv.EndToEnd(t)
	members := startMembers(t, "adv", 3, nil)
	want := uint64(etcd.DefaultElectionTicks - 2)
	for _, m := range members {
		waitFor(t, 10*time.Second, m.Name()+"'s ticks fast-forwarded", func() bool { return m.Status().Clock.Ticks >= want })
	}
	for _, m := range members {
		st := m.Status()
		if st.Clock.Ticks > want+1 || st.ElectionElapsed < int(want) {
			t.Errorf("%s: %d ticks, %d elapsed, want %d of each", m.Name(), st.Clock.Ticks, st.ElectionElapsed, want)
		}
		if st.Leader != "0" || st.State != raft.StateFollower.String() || st.Term != 1 {
			t.Errorf("%s campaigned on the fast-forward alone: state %s, term %d, leader %q", m.Name(), st.State, st.Term, st.Leader)
		}
	}
	// The rest of the longest timeout (2×ElectionTicks−1) makes one
	// member campaign and win.
	if err := members[0].SetClock(etcd.ClockRequest{Step: etcd.DefaultElectionTicks + 2}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, members[0].Name()+" elected", func() bool { return members[0].Status().State == raft.StateLeader.String() })
}

// A single member has nobody to wait for: it fast-forwards ElectionTicks−1
// ticks at once. With the advance turned off it makes none.
func TestStartFastForwardsSingleMember(t *testing.T) {
	testenv.EndToEnd(t)
	on := startMembers(t, "one", 1, nil)[0]
	off := startMembers(t, "off", 1, func(cfg *etcd.Config) { cfg.NoInitialElectionTickAdvance = true })[0]
	want := uint64(etcd.DefaultElectionTicks - 1)
	waitFor(t, 10*time.Second, "the single member's ticks fast-forwarded", func() bool { return on.Status().Clock.Ticks >= want })
	if got := on.Status().Clock.Ticks; got > want+1 {
		t.Errorf("single member: %d ticks, want %d", got, want)
	}
	if got := off.Status().Clock.Ticks; got != 0 {
		t.Errorf("member with the advance off made %d ticks, want none", got)
	}
	if err := on.SetClock(etcd.ClockRequest{Step: etcd.DefaultElectionTicks}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the single member elected", func() bool { return on.Status().State == raft.StateLeader.String() })
}
