package proxybench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// Clients of the measured connections: ClusterIP traffic comes from a pod on
// another node, NodePort traffic from a host outside the cluster.
const (
	podClient     = "10.247.255.254"
	outsideClient = "192.168.7.20"
)

// Budget is how much effort one figure gets.
type Budget struct {
	// SyncTime is roughly how long the repetitions of one kind of sync of
	// one mode at one size may take together; MinSyncs and MaxSyncs bound
	// their number whatever the time.
	SyncTime           time.Duration
	MinSyncs, MaxSyncs int
	// LookupRound is the length of one timed round of connections;
	// LookupRounds how many rounds each lookup figure is the median of.
	LookupRound  time.Duration
	LookupRounds int
}

// Budgets for a real run and for a smoke test.
var (
	FullBudget  = Budget{SyncTime: 2 * time.Second, MinSyncs: 5, MaxSyncs: 200, LookupRound: 100 * time.Millisecond, LookupRounds: 5}
	QuickBudget = Budget{SyncTime: 20 * time.Millisecond, MinSyncs: 2, MaxSyncs: 5, LookupRound: 2 * time.Millisecond, LookupRounds: 2}
)

// Durations summarises repeated timings of one operation.
type Durations struct {
	Reps int           `json:"reps"`
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
}

func summarise(ds []time.Duration) Durations {
	slices.Sort(ds)
	return Durations{Reps: len(ds), P50: percentile(ds, 50), P90: percentile(ds, 90)}
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 × n)
	return sorted[max(rank, 1)-1]
}

// repeat runs one timed operation until the budget is spent, after one
// untimed warm-up run. The heap is collected before every run, so that each
// starts from the same state and pays only for the garbage it makes itself.
func repeat(b Budget, op func() time.Duration) Durations {
	op()
	var ds []time.Duration
	start := time.Now()
	for len(ds) < b.MaxSyncs && (len(ds) < b.MinSyncs || time.Since(start) < b.SyncTime) {
		runtime.GC()
		ds = append(ds, op())
	}
	return summarise(ds)
}

// timedSync is the wall-clock time of one Sync call, what the proxy's sync
// loop waits for.
func timedSync(m proxier.Mode, snap *proxier.Snapshot) (time.Duration, proxier.SyncResult) {
	start := time.Now()
	res := m.Sync(snap)
	return time.Since(start), res
}

// MeasureFullSync times a full sync of a fresh mode, one that has never
// synced, from snap, and returns the number of rules it programmed.
func MeasureFullSync(mode string, snap *proxier.Snapshot, b Budget) (Durations, int, error) {
	if _, err := proxier.New(mode, ProxyConfig()); err != nil {
		return Durations{}, 0, err
	}
	rules := -1
	var err error
	d := repeat(b, func() time.Duration {
		m, _ := proxier.New(mode, ProxyConfig())
		took, res := timedSync(m, snap)
		if rules >= 0 && res.Rules != rules && err == nil {
			err = fmt.Errorf("%s: a sync of the same snapshot programmed %d rules, then %d", mode, rules, res.Rules)
		}
		rules = res.Rules
		return took
	})
	return d, rules, err
}

// MeasureResync times the sync of a mode that already programs one snapshot
// to the other, alternating between a and b, which differ in one endpoint.
func MeasureResync(mode string, a, b *proxier.Snapshot, budget Budget) (Durations, error) {
	m, err := proxier.New(mode, ProxyConfig())
	if err != nil {
		return Durations{}, err
	}
	m.Sync(a)
	next := []*proxier.Snapshot{b, a}
	n := 0
	return repeat(budget, func() time.Duration {
		took, _ := timedSync(m, next[n%2])
		n++
		return took
	}), nil
}

// Lookup is the cost of finding the endpoint for one new connection.
type Lookup struct {
	// Ops is the number of connections timed.
	Ops int `json:"ops"`
	// NsPerOp is the median over the timed rounds of each round's mean.
	NsPerOp float64 `json:"ns_per_op"`
	// AllocsPerOp is heap allocations per connection over every round.
	AllocsPerOp float64 `json:"allocs_per_op"`
}

// picker is one connection to svc; it returns what Pick returned.
type picker func(svc proxier.ServicePortName, rng *rand.Rand) error

// MeasureLookup times m.Pick for new connections arriving via the given
// entry, each to a service drawn uniformly from names, so that the figure is
// the mean over where services sit in the mode's structures. The mode must
// have synced a snapshot holding names.
func MeasureLookup(m proxier.Mode, names []proxier.ServicePortName, via proxier.EntryKind, b Budget) (Lookup, error) {
	client := podClient
	if via == proxier.ViaNodePort {
		client = outsideClient
	}
	return measureLoop(names, b, func(svc proxier.ServicePortName, rng *rand.Rand) error {
		_, err := m.Pick(svc, client, via, rng)
		return err
	})
}

// MeasureLoopOverhead times the measuring loop around a Pick that does
// nothing: drawing the random service and the call. Every lookup figure
// includes it.
func MeasureLoopOverhead(names []proxier.ServicePortName, b Budget) Lookup {
	l, _ := measureLoop(names, b, func(proxier.ServicePortName, *rand.Rand) error { return nil })
	return l
}

// measureLoop sizes a batch of connections to last about one round, then
// times b.LookupRounds such batches. The random sequence is the same for
// every mode and size: rounds start from a fixed seed.
func measureLoop(names []proxier.ServicePortName, b Budget, pick picker) (Lookup, error) {
	if len(names) == 0 {
		return Lookup{}, fmt.Errorf("no services to connect to")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	run := func(n int) (time.Duration, error) {
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := pick(names[rng.IntN(len(names))], rng); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}

	// Grow the batch until it takes a tenth of a round, then scale it.
	n := 1
	for {
		took, err := run(n)
		if err != nil {
			return Lookup{}, err
		}
		if took >= b.LookupRound/10 || n >= 1<<30 {
			n = max(1, int(float64(n)*float64(b.LookupRound)/float64(max(took, 1))))
			break
		}
		n *= 4
	}

	perOp := make([]float64, 0, b.LookupRounds)
	var mallocs uint64
	var ms runtime.MemStats
	for r := 0; r < b.LookupRounds; r++ {
		runtime.ReadMemStats(&ms)
		before := ms.Mallocs
		took, err := run(n)
		if err != nil {
			return Lookup{}, err
		}
		runtime.ReadMemStats(&ms)
		mallocs += ms.Mallocs - before
		perOp = append(perOp, float64(took.Nanoseconds())/float64(n))
	}
	slices.Sort(perOp)
	ops := n * b.LookupRounds
	return Lookup{Ops: ops, NsPerOp: perOp[(len(perOp)-1)/2], AllocsPerOp: float64(mallocs) / float64(ops)}, nil
}
