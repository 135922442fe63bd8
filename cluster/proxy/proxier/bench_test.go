package proxier

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// benchSizes are the cluster sizes of issue 6: services of 10 endpoints.
var benchSizes = []int{10, 100, 1000, 5000}

var (
	benchSnapshotsMu sync.Mutex
	benchSnapshots   = map[int]*Snapshot{}
)

// benchSnapshot builds each size once; Sync does not modify a snapshot.
func benchSnapshot(n int) *Snapshot {
	benchSnapshotsMu.Lock()
	defer benchSnapshotsMu.Unlock()
	if s, ok := benchSnapshots[n]; ok {
		return s
	}
	s := manyServices(n)
	benchSnapshots[n] = s
	return s
}

// BenchmarkSync measures one full rebuild of a mode's state: for iptables
// the rules and the iptables-save text, for nftables the table, for ipvs the
// virtual servers, for userspace the balancers and portal rules.
func BenchmarkSync(b *testing.B) {
	for _, mode := range ModeNames {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
				snap := benchSnapshot(n)
				m := newMode(b, mode, newTestClock())
				var res SyncResult
				for b.Loop() {
					res = m.Sync(snap)
				}
				b.ReportMetric(float64(res.Rules), "rules")
			})
		}
	}
}

// BenchmarkLookup measures Pick for a new connection to the ClusterIP of a
// service chosen at random: a walk of KUBE-SERVICES in iptables, hash
// lookups in ipvs and nftables, a map lookup in the userspace proxy.
func BenchmarkLookup(b *testing.B) {
	for _, mode := range ModeNames {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
				snap := benchSnapshot(n)
				m := newMode(b, mode, newTestClock())
				m.Sync(snap)
				names := snap.ServiceNames()
				rng := rand.New(rand.NewPCG(1, 2))
				for b.Loop() {
					svc := names[rng.IntN(len(names))]
					if _, err := m.Pick(svc, podClient, ViaClusterIP, rng); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
