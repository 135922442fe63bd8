package etcd

import "time"

// How long and how often adjustTicks looks for its peers' streams: etcd
// waits up to its rafthttp.ConnReadTimeout (5 s) in 50 ms steps.
const (
	tickAdvanceWait     = 5 * time.Second
	tickAdvanceInterval = 50 * time.Millisecond
)

// adjustTicks fast-forwards the election ticks once at start, as etcd's
// EtcdServer.adjustTicks does. A follower that has just started waits a
// whole randomised election timeout (ElectionTicks to 2×ElectionTicks−1
// ticks) before it campaigns; when every member restarts together — a
// whole-cluster restart, a restore from a snapshot — that wait is the
// cluster's downtime. So:
//
//   - a single-member cluster has nobody to hear from: it advances
//     ElectionTicks−1 ticks at once and campaigns on the next one;
//   - otherwise it waits until at least two peers' streams are up (etcd's
//     "peerN > 1") and then advances ElectionTicks−2 ticks, leaving two
//     ticks for a leader's heartbeat to arrive first if there is a leader.
//     With pre-vote a member that campaigns anyway cannot disrupt it.
//
// If the streams are not up within tickAdvanceWait (the peers are down, a
// restarted single member), nothing is advanced: a campaign could not win.
// A member whose clock is paused (a lesson is stepping it tick by tick)
// is not advanced either.
func (m *Member) adjustTicks() {
	defer m.wg.Done()
	if m.cfg.NoInitialElectionTickAdvance {
		return
	}
	members := m.memberCount()
	if members == 1 {
		m.advanceTicks(m.cfg.ElectionTicks-1, members, 0)
		return
	}
	t := time.NewTicker(tickAdvanceInterval)
	defer t.Stop()
	for deadline := time.Now().Add(tickAdvanceWait); time.Now().Before(deadline); {
		select {
		case <-m.stopc:
			return
		case <-t.C:
		}
		if n := m.transport.ActivePeers(); n > 1 {
			m.advanceTicks(m.cfg.ElectionTicks-2, members, n)
			return
		}
	}
}

// advanceTicks hands the raft loop n ticks now, unless the clock is paused,
// and logs it as etcd does.
func (m *Member) advanceTicks(n, members, active int) {
	st := m.clock.status()
	if st.Paused || n <= 0 {
		return
	}
	interval := time.Duration(st.TickIntervalMS * float64(time.Millisecond))
	msg := "initialized peer connections; fast-forwarding election ticks"
	if members == 1 {
		msg = "started as single-node; fast-forwarding election ticks"
	}
	m.lg.Info(msg,
		"local-member-id", hexID(m.id),
		"forward-ticks", n,
		"forward-duration", time.Duration(n)*interval,
		"election-ticks", m.cfg.ElectionTicks,
		"election-timeout", time.Duration(m.cfg.ElectionTicks)*interval,
		"active-remote-members", active)
	m.clock.step(n)
}

// memberCount is this member and the peers its transport sends to: the
// initial cluster on a first start, the stored membership on a restart.
func (m *Member) memberCount() int {
	m.peersMu.Lock()
	defer m.peersMu.Unlock()
	return len(m.peers) + 1
}
