package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
	"github.com/klab-dev/klab/cluster/etcd/fault"
)

// TestLinearizabilityWide is the wider sibling of TestLinearizability,
// after etcd's robustness suite: clients run gets, ranges, puts (with and
// without leases), deletes, two-key compare-and-swap transactions, lease
// grants and revokes, and let short leases expire, while watchers follow
// every revision and a nemesis kills and restarts members, takes quorum
// away, isolates and pauses members, drops and delays raft messages and
// moves the leadership; the snapshot count is low so that snapshots are
// taken and sent during the run. Then:
//
//   - every watcher saw every revision after the start exactly once, in
//     order, with no gap, and all watchers saw the same events;
//   - each event agrees with the key's previous state (version, create
//     revision), and every read agrees with the state the watch history
//     gives at the read's revision;
//   - porcupine finds the history (writes of unknown outcome resolved with
//     the watch history where their unique value shows) linearizable
//     against wideModel.
//
// It runs when KLAB_LINW=1 (make bench sets it), not in make test: in one
// clean-clone CI run a run ended with no leader for 30 s after every fault
// was healed (all members running), which did not come back with the same
// seed alone, and that run's member states were not recorded. 32 runs on
// a machine at load average 60–90 (seeds 1007–1016, 2007–2016, 3007–3012,
// 4007–4012; see BENCHMARKS.md) did not bring it back: every run elected
// and converged once healed. Reading the member against etcd's raft found
// one real defect on this path, fixed with its own test
// (TestConcurrentIncomingSnapshotsSameIndex): two snapshots received at
// once for the same index tore the file raft installs from, which stops
// the member. The convergence wait now counts raft ticks as well as wall
// time, so a starved machine (whose members tick a fraction of the wall
// clock) gets the election rounds it is owed and a stuck member (whose
// clock stops) still fails, with each member's vote, clock, election
// timer and the leader's progress view in the report.
//
// Environment: KLAB_LINW=1, KLAB_LINW_RUNS (default 3), KLAB_LINW_DURATION
// (default 15s), KLAB_LINW_SEED, and KLAB_LIN_VIZ_DIR as for
// TestLinearizability.
func TestLinearizabilityWide(t *testing.T) {
	if os.Getenv("KLAB_LINW") != "1" {
		t.Skip("KLAB_LINW=1 runs the wide linearizability test (make bench does)")
	}
	runs := envInt(t, "KLAB_LINW_RUNS", 3)
	dur := 15 * time.Second
	if v := os.Getenv("KLAB_LINW_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("KLAB_LINW_DURATION: %v", err)
		}
		dur = d
	}
	seed := uint64(time.Now().UnixNano())
	if os.Getenv("KLAB_LINW_SEED") != "" {
		seed = uint64(envInt(t, "KLAB_LINW_SEED", 0))
	}
	for i := 0; i < runs; i++ {
		runSeed := seed + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", runSeed), func(t *testing.T) {
			t.Logf("seed %d (rerun with KLAB_LINW_SEED=%d KLAB_LINW_RUNS=1)", runSeed, runSeed)
			wideRun(t, runSeed, dur)
		})
	}
}

const (
	wClients = 5
	wWatches = 2
	// wSnapshotCount makes every member take a raft snapshot every 100
	// applied entries and keep 20 after it, so that a member down for a
	// few hundred milliseconds is caught up with a snapshot.
	wSnapshotCount   = 100
	wSnapshotCatchUp = 20
	// wLongTTL is the TTL of leases the clients revoke themselves: longer
	// than any run.
	wLongTTL = 600
	// wShortTTL is asked for leases that expire; the member raises it to
	// its minimum (one second with these ticks).
	wShortTTL = 1
)

// wHistory collects the operations of a run.
type wHistory struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	notes []porcupine.Annotation
}

func (h *wHistory) now() int64 { return int64(time.Since(h.start)) }

func (h *wHistory) add(op porcupine.Operation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

func (h *wHistory) note(start int64, what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notes = append(h.notes, porcupine.Annotation{Tag: "nemesis", Start: start, End: h.now(), Description: what, BackgroundColor: "#ffd7d7"})
}

// wEvent is one watch event as a watcher received it.
type wEvent struct {
	Rev    int64
	Key    int
	Delete bool
	KV     wKV
}

func wideRun(t *testing.T, seed uint64, dur time.Duration) {
	c := etcdtest.New(t, 3, func(cfg *etcd.Config) {
		cfg.TickInterval = linTick
		cfg.SnapshotCount = wSnapshotCount
		cfg.SnapshotCatchUp = wSnapshotCatchUp
	})
	admin := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	resp, err := admin.Get(ctx, "/lw/", clientv3.WithPrefix())
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	startRev := resp.Header.Revision

	h := &wHistory{start: time.Now()}
	// The watchers: one on member 1 alone, one on every member.
	watchCtx, stopWatches := context.WithCancel(context.Background())
	defer stopWatches()
	events := make([][]wEvent, wWatches)
	var seen [wWatches]atomic.Int64
	var watchErr [wWatches]error
	var wwg sync.WaitGroup
	for w := 0; w < wWatches; w++ {
		cli := admin
		if w == 0 {
			cli = c.Client(c.Peers[0].ClientURL)
		}
		wch := cli.Watch(clientv3.WithRequireLeader(watchCtx), "/lw/", clientv3.WithPrefix(), clientv3.WithRev(startRev+1))
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			for wr := range wch {
				if err := wr.Err(); err != nil {
					if errors.Is(err, rpctypes.ErrNoLeader) || strings.Contains(err.Error(), "no leader") {
						continue // clientv3 resumes from the next revision
					}
					watchErr[w] = err
					return
				}
				for _, ev := range wr.Events {
					events[w] = append(events[w], wEventOf(ev))
					seen[w].Store(ev.Kv.ModRevision)
				}
			}
		}()
	}

	var lid atomic.Int64 // lease IDs: odd ones expire
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for id := 0; id < wClients; id++ {
		var cli *clientv3.Client
		if id < len(c.Peers) {
			cli = c.Client(c.Peers[id].ClientURL)
		} else {
			cli = c.Client()
		}
		cl := &wClient{id: id, proc: id, cli: cli, lease: pb.NewLeaseClient(cli.ActiveConnection()), h: h, rng: rand.New(rand.NewPCG(seed, uint64(id)+1)), lid: &lid}
		cl.stop = stop
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.run(stop)
		}()
	}
	kinds := wideNemesis(t, c, rand.New(rand.NewPCG(seed, 1000)), h, time.Now().Add(dur))
	close(stop)
	wg.Wait()

	// Every member back, healthy and converged; then the final revision,
	// which every watcher must reach.
	c.Faults.Heal()
	waitConverged(t, c, 30*time.Second)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	resp, err = admin.Get(ctx, "/lw/", clientv3.WithPrefix())
	cancel()
	if err != nil {
		t.Fatalf("final read: %v", err)
	}
	finalRev := resp.Header.Revision
	waitFor(t, 30*time.Second, fmt.Sprintf("the watchers to reach revision %d", finalRev), func() bool {
		for w := range seen {
			if watchErr[w] == nil && seen[w].Load() < finalRev {
				return false
			}
		}
		return true
	})
	stopWatches()
	wwg.Wait()
	var snapIndex uint64
	for i := range c.Peers {
		snapIndex = max(snapIndex, status(c, i).SnapshotIndex)
	}

	known, unknown, expired, revoked, txns := 0, 0, 0, 0, 0
	for _, op := range h.ops {
		in, out := op.Input.(wInput), op.Output.(wOutput)
		if out.Unknown {
			unknown++
			continue
		}
		known++
		switch {
		case in.Op == wPut && out.LeaseNotFound && wExpiring(in.Lease):
			expired++
		case in.Op == wRevoke && !out.LeaseNotFound:
			revoked++
		case in.Op == wTxn && out.Succeeded:
			txns++
		}
	}
	t.Logf("%d operations with a known outcome, %d of unknown outcome (%d successful two-key transactions, %d leases seen expired, %d revoked); revisions %d..%d, %d watch events; faults %v; latest snapshot index %d",
		known, unknown, txns, expired, revoked, startRev, finalRev, len(events[0]), kinds, snapIndex)
	for w, err := range watchErr {
		if err != nil {
			t.Errorf("watcher %d ended with %v", w, err)
		}
	}
	if known < 200 {
		t.Errorf("only %d operations completed: the cluster was barely available, the check proves little", known)
	}
	if snapIndex == 0 {
		t.Errorf("no member took a snapshot (snapshot count %d)", wSnapshotCount)
	}
	states := checkWatches(t, events, startRev, finalRev)
	if states == nil {
		return
	}
	ops := resolveUnknown(h.ops, states, startRev)
	checkReadsAgainstWatch(t, ops, states, startRev)
	checkWide(t, ops, h.notes, startRev)
}

func wEventOf(ev *clientv3.Event) wEvent {
	var k int
	fmt.Sscanf(strings.TrimPrefix(string(ev.Kv.Key), "/lw/k"), "%d", &k)
	e := wEvent{Rev: ev.Kv.ModRevision, Key: k, Delete: ev.Type == mvccpb.DELETE}
	if !e.Delete {
		e.KV = wKV{Val: string(ev.Kv.Value), Ver: ev.Kv.Version, Create: ev.Kv.CreateRevision, Mod: ev.Kv.ModRevision, Lease: ev.Kv.Lease}
	}
	return e
}

// checkWatches checks the watchers' events and returns the keyspace at
// every revision from startRev to finalRev (index rev-startRev), or nil if
// the events are wrong.
func checkWatches(t *testing.T, events [][]wEvent, startRev, finalRev int64) [][wKeys]wKV {
	t.Helper()
	for w := 1; w < len(events); w++ {
		if len(events[w]) != len(events[0]) {
			t.Errorf("watcher %d saw %d events, watcher 0 saw %d", w, len(events[w]), len(events[0]))
		}
		for i := range min(len(events[w]), len(events[0])) {
			if events[w][i] != events[0][i] {
				t.Errorf("event %d: watcher %d saw %+v, watcher 0 saw %+v", i, w, events[w][i], events[0][i])
				break
			}
		}
	}
	states := make([][wKeys]wKV, 1, finalRev-startRev+1)
	cur := [wKeys]wKV{}
	for i, e := range events[0] {
		last := startRev + int64(len(states)) - 1
		switch {
		case e.Rev == last && i > 0:
			// another key of the same transaction
		case e.Rev == last+1:
			states = append(states, cur)
		default:
			t.Errorf("watch event %d is at revision %d after revision %d: revisions must come once, in order, with no gap", i, e.Rev, last)
			return nil
		}
		prev := cur[e.Key]
		if e.Delete {
			if prev.Ver == 0 {
				t.Errorf("revision %d deletes k%d, which does not exist", e.Rev, e.Key)
			}
			cur[e.Key] = wKV{}
		} else {
			want := wKV{Val: e.KV.Val, Ver: prev.Ver + 1, Create: prev.Create, Mod: e.Rev, Lease: e.KV.Lease}
			if prev.Ver == 0 {
				want.Create = e.Rev
			}
			if e.KV != want {
				t.Errorf("revision %d puts k%d as %+v; after %+v it should be %+v", e.Rev, e.Key, e.KV, prev, want)
			}
			cur[e.Key] = e.KV
		}
		states[len(states)-1] = cur
	}
	if got := startRev + int64(len(states)) - 1; got != finalRev {
		t.Errorf("the watch history ends at revision %d, the store at %d", got, finalRev)
		return nil
	}
	return states
}

// resolveUnknown settles the writes of unknown outcome that carry a unique
// value (puts and transactions): one whose value the watch history shows
// happened at that revision; one whose value it never shows did not happen
// and is left out. Lease grants of unknown outcome are left out too: their
// client never uses the lease. Deletes and revokes stay unknown.
func resolveUnknown(ops []porcupine.Operation, states [][wKeys]wKV, startRev int64) []porcupine.Operation {
	at := map[string]int64{}
	for i := 1; i < len(states); i++ {
		for _, kv := range states[i] {
			if kv.Ver > 0 && kv.Mod == startRev+int64(i) {
				at[kv.Val] = kv.Mod
			}
		}
	}
	var out []porcupine.Operation
	for _, op := range ops {
		in, res := op.Input.(wInput), op.Output.(wOutput)
		if res.Unknown {
			switch in.Op {
			case wPut, wTxn:
				rev, ok := at[in.Val]
				if !ok {
					continue
				}
				op.Output = wOutput{Rev: rev, Succeeded: true}
			case wGrant:
				continue
			}
		}
		out = append(out, op)
	}
	return out
}

// checkReadsAgainstWatch checks every read against the state the watch
// history gives at the read's revision.
func checkReadsAgainstWatch(t *testing.T, ops []porcupine.Operation, states [][wKeys]wKV, startRev int64) {
	t.Helper()
	bad := 0
	for _, op := range ops {
		in, res := op.Input.(wInput), op.Output.(wOutput)
		if res.Unknown || (in.Op != wGet && in.Op != wRange && (in.Op != wTxn || res.Succeeded)) {
			continue
		}
		i := res.Rev - startRev
		if i < 0 || i >= int64(len(states)) {
			t.Errorf("%s: revision outside the watch history %d..%d", wDescribe(in, res), startRev, startRev+int64(len(states))-1)
			bad++
			continue
		}
		s := states[i]
		ok := true
		switch in.Op {
		case wGet:
			ok = res.KV == s[in.Key]
		case wRange:
			ok = res.KVs == s
		case wTxn:
			ok = res.KVs[in.Key] == s[in.Key] && res.KVs[in.Key2] == s[in.Key2]
		}
		if !ok {
			t.Errorf("%s: the watch history has %+v at that revision", wDescribe(in, res), s)
			bad++
		}
		if bad > 10 {
			return
		}
	}
}

// checkWide runs porcupine over the history.
func checkWide(t *testing.T, ops []porcupine.Operation, notes []porcupine.Annotation, startRev int64) {
	t.Helper()
	model := wideModel(startRev)
	began := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, ops, 90*time.Second)
	t.Logf("porcupine checked %d operations in %v: %s", len(ops), time.Since(began).Round(time.Millisecond), res)
	dir := os.Getenv("KLAB_LIN_VIZ_DIR")
	if dir != "" || res != porcupine.Ok {
		info.AddAnnotations(notes)
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "klab-linw-*"); err != nil {
				t.Errorf("create visualization dir: %v", err)
			}
		}
		path := filepath.Join(dir, filepath.Base(t.Name())+".html")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Errorf("create visualization dir: %v", err)
		} else if err := porcupine.VisualizePath(model, info, path); err != nil {
			t.Errorf("write visualization: %v", err)
		} else {
			t.Logf("porcupine visualization: %s", path)
		}
	}
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		t.Errorf("history of %d operations is NOT linearizable (see the visualization)", len(ops))
	default:
		t.Errorf("porcupine could not decide linearizability of %d operations within its timeout", len(ops))
	}
}

// wClient is one client's loop.
type wClient struct {
	id, proc int
	seq      int
	cli      *clientv3.Client
	lease    pb.LeaseClient
	h        *wHistory
	rng      *rand.Rand
	lid      *atomic.Int64
	mods     [wKeys]int64 // the mod revision this client last saw per key
	own      int64        // a long lease this client holds, or 0
	short    int64        // an expiring lease this client attached a key to, or 0
	stop     <-chan struct{}
}

func (c *wClient) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		c.seq++
		val := fmt.Sprintf("c%d-%d", c.id, c.seq)
		k := c.rng.IntN(wKeys)
		var in wInput
		switch r := c.rng.IntN(100); {
		case r < 25:
			in = wInput{Op: wGet, Key: k}
		case r < 33:
			in = wInput{Op: wRange}
		case r < 50:
			in = wInput{Op: wPut, Key: k, Val: val}
		case r < 58:
			in = wInput{Op: wDelete, Key: k}
		case r < 80:
			k2 := (k + 1 + c.rng.IntN(wKeys-1)) % wKeys
			in = wInput{Op: wTxn, Key: k, Key2: k2, Val: val, Mod: c.mods[k], Mod2: c.mods[k2]}
		case r < 86:
			// A put with this client's long lease, granted first if it
			// has none.
			if c.own == 0 {
				id := 2 * c.lid.Add(1)
				if c.do(wInput{Op: wGrant, Lease: id}) {
					c.own = id
				}
				continue
			}
			in = wInput{Op: wPut, Key: k, Val: val, Lease: c.own}
		case r < 89:
			if c.own == 0 {
				continue
			}
			// Revoke until the answer is known.
			for !c.do(wInput{Op: wRevoke, Lease: c.own}) {
				select {
				case <-stop:
					return
				default:
				}
			}
			c.own = 0
			continue
		case r < 93:
			// An expiring lease: grant it, attach a key, then put with it
			// again (below) until the member says it is gone.
			if c.short != 0 {
				in = wInput{Op: wPut, Key: k, Val: val, Lease: c.short}
				break
			}
			id := 2*c.lid.Add(1) + 1
			if c.do(wInput{Op: wGrant, Lease: id}) {
				c.short = id
			}
			continue
		default:
			if c.short == 0 {
				continue
			}
			in = wInput{Op: wPut, Key: k, Val: val, Lease: c.short}
		}
		c.do(in)
	}
}

// do performs one operation, records it, and reports whether its outcome
// is known. A failed read is not recorded.
func (c *wClient) do(in wInput) bool {
	call := c.h.now()
	out, err := c.exec(in)
	ret := c.h.now()
	if err != nil {
		if in.Op == wGet || in.Op == wRange {
			c.pause()
			return false
		}
		out = wOutput{Unknown: true}
		ret = math.MaxInt64
	}
	c.h.add(porcupine.Operation{ClientId: c.proc, Input: in, Call: call, Output: out, Return: ret})
	if out.Unknown {
		// Carry on as a new process, as Jepsen does after a crash, and
		// forget what this one believed. The expiring lease is kept: the
		// client puts with it until the member says it is gone, which
		// settles when it expired; a lease abandoned while the model
		// cannot tell whether it expired would double the states the
		// checker carries for the rest of the history.
		c.proc += wClients
		c.mods = [wKeys]int64{}
		c.pause()
		return false
	}
	switch {
	case in.Op == wGet:
		c.mods[in.Key] = out.KV.Mod
	case in.Op == wRange || (in.Op == wTxn && !out.Succeeded):
		for i, kv := range out.KVs {
			if in.Op == wRange || i == in.Key || i == in.Key2 {
				c.mods[i] = kv.Mod
			}
		}
	case in.Op == wTxn:
		c.mods[in.Key], c.mods[in.Key2] = out.Rev, out.Rev
	case in.Op == wPut && out.LeaseNotFound && in.Lease == c.short:
		c.short = 0
	case in.Op == wPut && out.LeaseNotFound && in.Lease == c.own:
		c.own = 0
	}
	return true
}

// pause paces a client after a failed request: retrying at once against
// a cluster without quorum only piles up operations of unknown outcome.
func (c *wClient) pause() {
	select {
	case <-c.stop:
	case <-time.After(time.Duration(50+c.rng.IntN(100)) * time.Millisecond):
	}
}

func wKVOf(kv *mvccpb.KeyValue) wKV {
	return wKV{Val: string(kv.Value), Ver: kv.Version, Create: kv.CreateRevision, Mod: kv.ModRevision, Lease: kv.Lease}
}

// exec runs one operation with the real client; reads are linearizable.
func (c *wClient) exec(in wInput) (wOutput, error) {
	ctx, cancel := context.WithTimeout(context.Background(), linOpTimeout)
	defer cancel()
	switch in.Op {
	case wGet:
		resp, err := c.cli.Get(ctx, wKey(in.Key))
		if err != nil {
			return wOutput{}, err
		}
		out := wOutput{Rev: resp.Header.Revision}
		if len(resp.Kvs) > 0 {
			out.KV = wKVOf(resp.Kvs[0])
		}
		return out, nil
	case wRange:
		resp, err := c.cli.Get(ctx, "/lw/", clientv3.WithPrefix())
		if err != nil {
			return wOutput{}, err
		}
		out := wOutput{Rev: resp.Header.Revision}
		for _, kv := range resp.Kvs {
			e := wEventOf(&clientv3.Event{Kv: kv})
			out.KVs[e.Key] = wKVOf(kv)
		}
		return out, nil
	case wPut:
		var opts []clientv3.OpOption
		if in.Lease != 0 {
			opts = append(opts, clientv3.WithLease(clientv3.LeaseID(in.Lease)))
		}
		resp, err := c.cli.Put(ctx, wKey(in.Key), in.Val, opts...)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return wOutput{LeaseNotFound: true}, nil
		}
		if err != nil {
			return wOutput{}, err
		}
		return wOutput{Rev: resp.Header.Revision}, nil
	case wDelete:
		resp, err := c.cli.Delete(ctx, wKey(in.Key))
		if err != nil {
			return wOutput{}, err
		}
		return wOutput{Rev: resp.Header.Revision, Deleted: resp.Deleted}, nil
	case wTxn:
		k1, k2 := wKey(in.Key), wKey(in.Key2)
		resp, err := c.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k1), "=", in.Mod), clientv3.Compare(clientv3.ModRevision(k2), "=", in.Mod2)).
			Then(clientv3.OpPut(k1, in.Val), clientv3.OpPut(k2, in.Val+"'")).
			Else(clientv3.OpGet(k1), clientv3.OpGet(k2)).
			Commit()
		if err != nil {
			return wOutput{}, err
		}
		out := wOutput{Rev: resp.Header.Revision, Succeeded: resp.Succeeded}
		if !resp.Succeeded {
			for i, r := range resp.Responses {
				key := in.Key
				if i == 1 {
					key = in.Key2
				}
				if kvs := r.GetResponseRange().Kvs; len(kvs) > 0 {
					out.KVs[key] = wKVOf(kvs[0])
				}
			}
		}
		return out, nil
	case wGrant:
		ttl := int64(wLongTTL)
		if wExpiring(in.Lease) {
			ttl = wShortTTL
		}
		_, err := c.lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: in.Lease, TTL: ttl})
		return wOutput{}, err
	case wRevoke:
		_, err := c.lease.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: in.Lease})
		if errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound) {
			return wOutput{LeaseNotFound: true}, nil
		}
		return wOutput{}, err
	}
	return wOutput{}, fmt.Errorf("unknown operation %d", in.Op)
}

// wideNemesis injects one fault at a time until the deadline, leaves every
// member running, and returns how many faults of each kind it injected.
func wideNemesis(t *testing.T, c *etcdtest.Cluster, rng *rand.Rand, h *wHistory, until time.Time) map[string]int {
	names := make([]string, len(c.Peers))
	for i, p := range c.Peers {
		names[i] = p.Name
	}
	others := func(i int) []string {
		var o []string
		for j, n := range names {
			if j != i {
				o = append(o, n)
			}
		}
		return o
	}
	hold := func(min, max time.Duration) {
		time.Sleep(min + time.Duration(rng.Int64N(int64(max-min))))
	}
	restart := func(i int) bool {
		if err := c.Start(i); err != nil {
			t.Errorf("restart %s: %v", names[i], err)
			return false
		}
		return true
	}
	clients := make([]*clientv3.Client, len(c.Peers))
	for i, p := range c.Peers {
		clients[i] = c.Client(p.ClientURL)
	}
	kinds := map[string]int{}
	hold(200*time.Millisecond, 400*time.Millisecond)
	for time.Now().Before(until) {
		victim := c.Leader()
		if victim < 0 || rng.IntN(3) == 0 {
			victim = rng.IntN(len(c.Peers))
		}
		start := h.now()
		var kind string
		switch rng.IntN(7) {
		case 0:
			kind = "kill"
			c.Kill(victim)
			hold(100*time.Millisecond, 900*time.Millisecond)
			if !restart(victim) {
				return kinds
			}
		case 1:
			kind = "quorum-loss"
			other := (victim + 1 + rng.IntN(len(c.Peers)-1)) % len(c.Peers)
			c.Kill(victim)
			c.Kill(other)
			hold(300*time.Millisecond, 1200*time.Millisecond)
			if !restart(victim) || !restart(other) {
				return kinds
			}
		case 2:
			kind = "isolate"
			c.Faults.Isolate(names[victim], others(victim))
			hold(200*time.Millisecond, 900*time.Millisecond)
			c.Faults.Heal()
		case 3:
			kind = "pause"
			m := c.Member(victim)
			m.Pause()
			hold(100*time.Millisecond, 700*time.Millisecond)
			m.Resume()
		case 4:
			kind = "drop"
			rate := 0.3 + 0.5*rng.Float64()
			for _, o := range others(victim) {
				c.Faults.Set(names[victim], o, faultRule(rate, 0))
				c.Faults.Set(o, names[victim], faultRule(rate, 0))
			}
			hold(300*time.Millisecond, 1200*time.Millisecond)
			c.Faults.Heal()
		case 5:
			kind = "delay"
			for i := range names {
				for _, o := range others(i) {
					c.Faults.Set(names[i], o, faultRule(0, time.Duration(10+rng.IntN(90))*time.Millisecond))
				}
			}
			hold(300*time.Millisecond, 1200*time.Millisecond)
			c.Faults.Heal()
		case 6:
			kind = "move-leader"
			lead := c.Leader()
			if lead < 0 {
				continue
			}
			to := (lead + 1 + rng.IntN(len(c.Peers)-1)) % len(c.Peers)
			m := c.Member(to)
			if m == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err := clients[lead].MoveLeader(ctx, m.ID())
			cancel()
			if err != nil {
				kind = "move-leader-failed"
			}
		}
		kinds[kind]++
		h.note(start, kind+" "+names[victim])
		hold(150*time.Millisecond, 500*time.Millisecond)
	}
	return kinds
}

func faultRule(drop float64, delay time.Duration) fault.Rule {
	return fault.Rule{DropRate: drop, Delay: delay}
}
