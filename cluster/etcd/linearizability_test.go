package etcd_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// Linearizability under faults. Several clients run random gets, puts and
// compare-and-swaps on a few keys against a 3-member cluster while a nemesis
// kills and restarts the leader, isolates members and pauses them. Every
// operation's invocation and return time is recorded, and porcupine checks
// that the history is linearizable against kvModel.
//
// Environment:
//
//	KLAB_LIN_RUNS      number of randomized runs (default 3)
//	KLAB_LIN_DURATION  length of one run's workload (default 4s)
//	KLAB_LIN_SEED      seed of the first run (default: from the clock); run
//	                   i uses seed+i, and every run logs its seed
//	KLAB_LIN_VIZ_DIR   where to write porcupine's HTML visualization; it is
//	                   always written there when set, and on a violation
//	                   otherwise into a fresh directory under os.TempDir()

const (
	linKeys    = 4
	linClients = 5
	// linOpTimeout bounds one client operation. An operation that fails
	// or times out is a write of unknown outcome (or a read that saw
	// nothing, which is dropped from the history).
	linOpTimeout = time.Second
	// linTick makes elections take 300–600 ms, so that a 4 s run sees
	// several faults and recoveries.
	linTick = 30 * time.Millisecond
)

func TestLinearizability(t *testing.T) {
	runs := envInt(t, "KLAB_LIN_RUNS", 3)
	dur := 4 * time.Second
	if v := os.Getenv("KLAB_LIN_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("KLAB_LIN_DURATION: %v", err)
		}
		dur = d
	}
	seed := uint64(time.Now().UnixNano())
	if os.Getenv("KLAB_LIN_SEED") != "" {
		seed = uint64(envInt(t, "KLAB_LIN_SEED", 0))
	}
	for i := 0; i < runs; i++ {
		runSeed := seed + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", runSeed), func(t *testing.T) {
			t.Logf("seed %d (rerun with KLAB_LIN_SEED=%d KLAB_LIN_RUNS=1)", runSeed, runSeed)
			linearizabilityRun(t, runSeed, dur)
		})
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// history collects operations from concurrent clients. Times are
// nanoseconds since the run started, on the monotonic clock.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	notes []porcupine.Annotation
	ok    int // operations with a known outcome
	unk   int // writes with an unknown outcome
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(op porcupine.Operation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
	if op.Output.(kvOutput).Unknown {
		h.unk++
	} else {
		h.ok++
	}
}

// note records what the nemesis did, for the visualization.
func (h *history) note(start int64, what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notes = append(h.notes, porcupine.Annotation{Tag: "nemesis", Start: start, End: h.now(), Description: what, BackgroundColor: "#ffd7d7"})
}

func linearizabilityRun(t *testing.T, seed uint64, dur time.Duration) {
	c := etcdtest.New(t, 3, fastTicks(linTick))
	h := &history{start: time.Now()}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for id := 0; id < linClients; id++ {
		// Clients 0–2 talk to one member each (so reads are served by
		// followers through ReadIndex and writes are forwarded); the rest
		// talk to all members and fail over.
		var cli *clientv3.Client
		if id < len(c.Peers) {
			cli = c.Client(c.Peers[id].ClientURL)
		} else {
			cli = c.Client()
		}
		rng := rand.New(rand.NewPCG(seed, uint64(id)+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			linClient(cli, id, rng, h, stop)
		}()
	}
	faults := runNemesis(t, c, rand.New(rand.NewPCG(seed, 1000)), h, time.Now().Add(dur))
	close(stop)
	wg.Wait()

	t.Logf("%d operations with a known outcome, %d writes with an unknown outcome, %d faults injected", h.ok, h.unk, faults)
	if faults == 0 {
		t.Errorf("the nemesis injected no fault")
	}
	if h.ok < 50 {
		t.Errorf("only %d operations completed: the cluster was barely available, the check proves little", h.ok)
	}
	checkLinearizable(t, h)
}

// linClient runs random operations until stop is closed. After an
// operation of unknown outcome it carries on as a new porcupine client (as
// Jepsen does with a crashed process), so that the visualization shows the
// open-ended operation on its own line.
func linClient(cli *clientv3.Client, id int, rng *rand.Rand, h *history, stop <-chan struct{}) {
	proc := id
	seq := 0
	seen := map[string]kvState{} // the last state this client observed per key
	for {
		select {
		case <-stop:
			return
		default:
		}
		seq++
		in := kvInput{Key: "/lin/k" + strconv.Itoa(rng.IntN(linKeys)), Value: fmt.Sprintf("c%d-%d", id, seq)}
		switch r := rng.IntN(100); {
		case r < 45:
			in.Op = opGet
		case r < 70:
			in.Op = opPut
		case r < 85:
			in.Op = opCASValue
			in.Expect = seen[in.Key].Value
		default:
			in.Op = opCASVersion
			in.ExpectVersion = seen[in.Key].Version
		}
		call := h.now()
		out, err := linDo(cli, in)
		ret := h.now()
		if err != nil {
			if in.Op == opGet {
				continue // a failed read has no effect on the history
			}
			out = kvOutput{Unknown: true}
			ret = math.MaxInt64
		}
		h.add(porcupine.Operation{ClientId: proc, Input: in, Call: call, Output: out, Return: ret})
		switch {
		case out.Unknown:
			proc += linClients
			delete(seen, in.Key)
		case in.Op == opGet:
			seen[in.Key] = kvState{Value: out.Value, Version: out.Version}
		}
	}
}

// linDo performs one operation with the real client. Reads are
// linearizable (the clientv3 default); serializable reads would not be.
func linDo(cli *clientv3.Client, in kvInput) (kvOutput, error) {
	ctx, cancel := context.WithTimeout(context.Background(), linOpTimeout)
	defer cancel()
	switch in.Op {
	case opGet:
		resp, err := cli.Get(ctx, in.Key)
		if err != nil {
			return kvOutput{}, err
		}
		if len(resp.Kvs) == 0 {
			return kvOutput{}, nil
		}
		return kvOutput{Value: string(resp.Kvs[0].Value), Version: resp.Kvs[0].Version}, nil
	case opPut:
		_, err := cli.Put(ctx, in.Key, in.Value)
		return kvOutput{}, err
	default:
		cmp := clientv3.Compare(clientv3.Value(in.Key), "=", in.Expect)
		if in.Op == opCASVersion {
			cmp = clientv3.Compare(clientv3.Version(in.Key), "=", in.ExpectVersion)
		}
		resp, err := cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(in.Key, in.Value)).Commit()
		if err != nil {
			return kvOutput{}, err
		}
		return kvOutput{Succeeded: resp.Succeeded}, nil
	}
}

// runNemesis injects one fault at a time until the deadline, leaves the
// cluster healthy, and returns how many faults it injected.
func runNemesis(t *testing.T, c *etcdtest.Cluster, rng *rand.Rand, h *history, until time.Time) int {
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
	// hold is bounded nemesis pacing: how long a fault lasts and how long
	// the cluster stays healthy between faults.
	hold := func(min, max time.Duration) {
		time.Sleep(min + time.Duration(rng.Int64N(int64(max-min))))
	}
	faults := 0
	// Let the clients get going on a healthy cluster first.
	hold(200*time.Millisecond, 400*time.Millisecond)
	for time.Now().Before(until) {
		victim := c.Leader()
		if victim < 0 || rng.IntN(3) == 0 {
			victim = rng.IntN(len(c.Peers))
		}
		start := h.now()
		switch kind := rng.IntN(3); kind {
		case 0:
			c.Kill(victim)
			hold(100*time.Millisecond, 700*time.Millisecond)
			if err := c.Start(victim); err != nil {
				t.Errorf("restart %s: %v", names[victim], err)
				return faults
			}
			h.note(start, "kill+restart "+names[victim])
		case 1:
			c.Faults.Isolate(names[victim], others(victim))
			hold(200*time.Millisecond, 900*time.Millisecond)
			c.Faults.Heal()
			h.note(start, "isolate "+names[victim])
		case 2:
			m := c.Member(victim)
			m.Pause()
			hold(100*time.Millisecond, 700*time.Millisecond)
			m.Resume()
			h.note(start, "pause "+names[victim])
		}
		faults++
		hold(150*time.Millisecond, 500*time.Millisecond)
	}
	return faults
}

// checkLinearizable runs porcupine over the history and fails the test on a
// violation (or if the checker cannot decide in time), writing the
// visualization where a human can open it.
func checkLinearizable(t *testing.T, h *history) {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(kvModel, h.ops, 60*time.Second)
	dir := os.Getenv("KLAB_LIN_VIZ_DIR")
	if dir != "" || res != porcupine.Ok {
		info.AddAnnotations(h.notes)
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "klab-lin-*"); err != nil {
				t.Errorf("create visualization dir: %v", err)
			}
		}
		path := filepath.Join(dir, filepath.Base(t.Name())+".html")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Errorf("create visualization dir: %v", err)
		} else if err := porcupine.VisualizePath(kvModel, info, path); err != nil {
			t.Errorf("write visualization: %v", err)
		} else {
			t.Logf("porcupine visualization: %s", path)
		}
	}
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		t.Errorf("history of %d operations is NOT linearizable (see the visualization)", len(h.ops))
	default:
		t.Errorf("porcupine could not decide linearizability of %d operations within its timeout", len(h.ops))
	}
}

// TestLinearizabilityModel makes sure the model and checker catch what the
// test relies on them to catch: a checker that accepts everything would
// make TestLinearizability worthless.
func TestLinearizabilityModel(t *testing.T) {
	const k = "/k"
	put := func(client int, v string, call, ret int64) porcupine.Operation {
		out := kvOutput{}
		if ret == math.MaxInt64 {
			out.Unknown = true
		}
		return porcupine.Operation{ClientId: client, Input: kvInput{Op: opPut, Key: k, Value: v}, Call: call, Output: out, Return: ret}
	}
	get := func(client int, v string, ver int64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: kvInput{Op: opGet, Key: k}, Call: call, Output: kvOutput{Value: v, Version: ver}, Return: ret}
	}
	cas := func(client int, expect, v string, ok bool, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: kvInput{Op: opCASValue, Key: k, Expect: expect, Value: v}, Call: call, Output: kvOutput{Succeeded: ok}, Return: ret}
	}
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"read after write", []porcupine.Operation{put(0, "a", 0, 10), get(1, "a", 1, 20, 30)}, porcupine.Ok},
		{"stale read after write", []porcupine.Operation{put(0, "a", 0, 10), put(0, "b", 11, 20), get(1, "a", 1, 30, 40)}, porcupine.Illegal},
		{"concurrent read sees either", []porcupine.Operation{put(0, "a", 0, 10), put(0, "b", 11, 40), get(1, "a", 1, 20, 30)}, porcupine.Ok},
		{"unknown write may have happened", []porcupine.Operation{put(0, "a", 0, math.MaxInt64), get(1, "a", 1, 20, 30)}, porcupine.Ok},
		{"unknown write may not have happened", []porcupine.Operation{put(0, "a", 0, math.MaxInt64), get(1, "", 0, 20, 30)}, porcupine.Ok},
		{"write visible then gone", []porcupine.Operation{put(0, "a", 0, math.MaxInt64), get(1, "a", 1, 20, 30), get(1, "", 0, 40, 50)}, porcupine.Illegal},
		{"lost update", []porcupine.Operation{put(0, "a", 0, 10), cas(1, "a", "b", true, 20, 30), cas(2, "a", "c", true, 40, 50)}, porcupine.Illegal},
		{"cas on missing key fails", []porcupine.Operation{cas(1, "", "b", true, 20, 30)}, porcupine.Illegal},
		{"version is counted", []porcupine.Operation{put(0, "a", 0, 10), put(0, "a", 11, 20), get(1, "a", 1, 30, 40)}, porcupine.Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(kvModel, tt.ops, 5*time.Second); got != tt.want {
				t.Errorf("check = %s, want %s", got, tt.want)
			}
		})
	}
}
