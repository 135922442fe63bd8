package rafthttp

import (
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/klab-dev/klab/cluster/etcd/fault"
)

func TestCutLinkDropsAndHealResumes(t *testing.T) {
	faults := fault.NewTable()
	a, b := newNode(t, 1, nodeOptions{faults: faults}), newNode(t, 2, nodeOptions{faults: faults})
	connect(a, b)
	warmUp(t, a, b)

	faults.Isolate("etcd-2", []string{"etcd-1"})
	const n = 50
	for i := range n {
		a.tr.Send([]*raftpb.Message{msgApp(1, 2, uint64(i+1), nil)})
	}
	deadline := time.Now().Add(5 * time.Second)
	for a.obs.count(EventDropped) < n {
		if time.Now().After(deadline) {
			t.Fatalf("observed %d dropped messages, want %d", a.obs.count(EventDropped), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := b.rec.count(); got != 0 {
		t.Errorf("%d messages crossed a cut link", got)
	}
	if got := a.obs.count(EventUnreachable); got != 0 {
		t.Errorf("a cut link reported %d messages unreachable; it should lose them silently", got)
	}

	faults.Heal()
	start := time.Now()
	a.tr.Send([]*raftpb.Message{heartbeat(1, 2, 3)})
	b.rec.await(t, time.Second, "delivery after heal", func() bool { return len(b.rec.msgs) == 1 })
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("first message after heal took %v", d)
	}
	if got := b.rec.messages()[0].GetTerm(); got != 3 {
		t.Errorf("first message after heal has term %d, want the post-heal heartbeat's 3", got)
	}
}

func TestDropRateIsApplied(t *testing.T) {
	faults := fault.NewTable()
	a, b := newNode(t, 1, nodeOptions{faults: faults}), newNode(t, 2, nodeOptions{})
	connect(a, b)
	warmUp(t, a, b)

	faults.Set("etcd-1", "etcd-2", fault.Rule{DropRate: 0.3})
	const n = 2000
	for i := range n {
		a.tr.Send([]*raftpb.Message{msgApp(1, 2, uint64(i+1), nil)})
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.rec.count()+a.obs.count(EventDropped) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d delivered + %d dropped, want %d in all", b.rec.count(), a.obs.count(EventDropped), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// 30% of 2000 is 600 with a standard deviation of about 20.5; ±100
	// is beyond 4.8 sigma.
	if dropped := a.obs.count(EventDropped); dropped < 500 || dropped > 700 {
		t.Errorf("dropped %d of %d at a 30%% drop rate", dropped, n)
	}
	// Survivors keep their order.
	var last uint64
	for _, m := range b.rec.messages() {
		if idx := m.GetEntries()[0].GetIndex(); idx <= last {
			t.Fatalf("index %d after %d", idx, last)
		}
		last = m.GetEntries()[0].GetIndex()
	}
}

func TestDelayAddsLatencyNotThroughputLoss(t *testing.T) {
	tests := []struct {
		name  string
		delay time.Duration
	}{
		{name: "no delay", delay: 0},
		{name: "150ms", delay: 150 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			faults := fault.NewTable()
			a, b := newNode(t, 1, nodeOptions{faults: faults}), newNode(t, 2, nodeOptions{})
			connect(a, b)
			warmUp(t, a, b)

			faults.Set("etcd-1", "etcd-2", fault.Rule{Delay: tt.delay})
			// 20 messages 10ms apart: a link that delayed each one in turn
			// would need 20×delay; a delay adds latency only.
			const n = 20
			start := time.Now()
			sent := make([]time.Time, n)
			for i := range n {
				sent[i] = time.Now()
				a.tr.Send([]*raftpb.Message{heartbeat(1, 2, uint64(i+1))})
				time.Sleep(10 * time.Millisecond)
			}
			b.rec.await(t, 5*time.Second, "all delayed messages", func() bool { return len(b.rec.msgs) == n })
			elapsed := time.Since(start)
			for i, at := range b.rec.arrived {
				if latency := at.Sub(sent[i]); latency < tt.delay {
					t.Errorf("message %d arrived after %v, before the %v delay", i, latency, tt.delay)
				}
			}
			if limit := n*10*time.Millisecond + tt.delay + 300*time.Millisecond; elapsed > limit {
				t.Errorf("messages took %v, want under %v", elapsed, limit)
			}
		})
	}
}

func TestHealCutsShortAHeldMessage(t *testing.T) {
	faults := fault.NewTable()
	a, b := newNode(t, 1, nodeOptions{faults: faults}), newNode(t, 2, nodeOptions{})
	connect(a, b)
	warmUp(t, a, b)

	faults.Set("etcd-1", "etcd-2", fault.Rule{Delay: time.Hour})
	a.tr.Send([]*raftpb.Message{heartbeat(1, 2, 1)})
	// The sender holds the message; no event says so, so just give it a
	// moment to pick it up before healing.
	time.Sleep(20 * time.Millisecond)
	faults.Heal()
	b.rec.await(t, time.Second, "held message after heal", func() bool { return len(b.rec.msgs) == 1 })
}
