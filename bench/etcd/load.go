package etcdbench

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// LoadSpec describes one put workload, in the shape of etcd's own
// `benchmark put`: Clients workers each issue one put at a time, sharing
// Conns clientv3 clients (one gRPC connection each) round-robin.
type LoadSpec struct {
	Endpoints []string
	Clients   int
	Conns     int
	ValueSize int
	// KeySpace is how many distinct keys the puts pick from at random.
	KeySpace int
	// Either Duration (measure for this long after Warmup) or Ops (measure
	// this many puts, no warm-up) ends the run; Ops wins if both are set.
	Duration time.Duration
	Warmup   time.Duration
	Ops      int
	// OpTimeout bounds one put; a put that fails or times out is counted
	// as an error and its latency is not recorded.
	OpTimeout time.Duration
}

// LoadResult is what one workload measured.
type LoadResult struct {
	Ops     int           // successful puts in the measured window
	Errors  int           // failed puts in the measured window
	Elapsed time.Duration // length of the measured window
	// Latencies of the successful puts, sorted ascending.
	Latencies []time.Duration
}

// Throughput is successful puts per second.
func (r LoadResult) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// Percentile returns the p-th percentile (0 < p <= 100) of the recorded
// latencies by the nearest-rank method, or 0 if none were recorded.
func (r LoadResult) Percentile(p float64) time.Duration {
	return percentile(r.Latencies, p)
}

// percentile picks from sorted by nearest rank: the smallest value such that
// at least p percent of the values are less than or equal to it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(float64(n)*p/100 + 0.999999999)
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}

// newClient dials a clientv3 client with the settings both systems get.
func newClient(endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("dial %v: %w", endpoints, err)
	}
	return cli, nil
}

// RunPuts runs the workload and returns what it measured.
func RunPuts(ctx context.Context, spec LoadSpec) (LoadResult, error) {
	if spec.Clients < 1 {
		return LoadResult{}, fmt.Errorf("put load: clients must be at least 1, got %d", spec.Clients)
	}
	if spec.Ops <= 0 && spec.Duration <= 0 {
		return LoadResult{}, fmt.Errorf("put load: neither an op count nor a duration was given")
	}
	conns := max(1, min(spec.Conns, spec.Clients))
	keySpace := max(1, spec.KeySpace)
	opTimeout := spec.OpTimeout
	if opTimeout <= 0 {
		opTimeout = 5 * time.Second
	}
	clis := make([]*clientv3.Client, 0, conns)
	defer func() {
		for _, c := range clis {
			c.Close()
		}
	}()
	for i := 0; i < conns; i++ {
		c, err := newClient(spec.Endpoints)
		if err != nil {
			return LoadResult{}, err
		}
		clis = append(clis, c)
	}
	value := make([]byte, spec.ValueSize)
	rand.Read(value)
	val := string(value)

	var (
		start    = time.Now()
		measured = start.Add(spec.Warmup) // measured window [measured, end)
		end      = measured.Add(spec.Duration)
		tickets  atomic.Int64 // puts claimed, in op-count mode
	)
	if spec.Ops > 0 {
		measured = start
	}
	type workerResult struct {
		lat    []time.Duration
		errors int
	}
	results := make([]workerResult, spec.Clients)
	var wg sync.WaitGroup
	for w := 0; w < spec.Clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cli := clis[w%conns]
			rng := mrand.New(mrand.NewPCG(uint64(w), uint64(start.UnixNano())))
			res := &results[w]
			for ctx.Err() == nil {
				if spec.Ops > 0 && tickets.Add(1) > int64(spec.Ops) {
					return
				}
				t0 := time.Now()
				if spec.Ops <= 0 && !t0.Before(end) {
					return
				}
				key := fmt.Sprintf("bench/%08d", rng.IntN(keySpace))
				octx, cancel := context.WithTimeout(ctx, opTimeout)
				_, err := cli.Put(octx, key, val)
				cancel()
				lat := time.Since(t0)
				if t0.Before(measured) {
					continue // warm-up
				}
				if err != nil {
					res.errors++
					continue
				}
				res.lat = append(res.lat, lat)
			}
		}(w)
	}
	wg.Wait()
	var r LoadResult
	for _, wr := range results {
		r.Latencies = append(r.Latencies, wr.lat...)
		r.Errors += wr.errors
	}
	r.Ops = len(r.Latencies)
	if spec.Ops > 0 {
		r.Elapsed = time.Since(start)
	} else {
		r.Elapsed = spec.Duration
	}
	slices.Sort(r.Latencies)
	if err := ctx.Err(); err != nil {
		return r, fmt.Errorf("put load interrupted: %w", err)
	}
	return r, nil
}
