// Command etcdbench measures klab's etcd member and the real etcd server
// (embedded, same version as klab's API) side by side in one run, and prints
// the figures as Markdown tables: put throughput and latency with 1 and with
// many concurrent clients, with fsync on and off, and how long a 3-member
// cluster takes to accept a write again after its leader is killed.
//
//	go run ./bench/etcd/cmd/etcdbench
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/klab-dev/klab/bench/etcd"
)

type options struct {
	members    int
	systems    []string
	fsync      []bool
	clients    []int
	conns      int
	value      int
	keys       int
	duration   time.Duration
	warmup     time.Duration
	target     string
	trials     int
	attempt    time.Duration
	foFsync    bool
	cpuprofile string
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench:", err)
		os.Exit(1)
	}
}

func run() error {
	var o options
	var systems, fsync, clients, foFsync string
	flag.IntVar(&o.members, "members", 3, "members per cluster")
	flag.StringVar(&systems, "systems", "klab,etcd", "systems to measure: klab, etcd")
	flag.StringVar(&fsync, "fsync", "on,off", "fsync settings for the put runs (on, off)")
	flag.StringVar(&clients, "clients", "1,64", "concurrent put clients, one run per value")
	flag.IntVar(&o.conns, "conns", 8, "clientv3 clients (gRPC connections) shared by the put clients, at most one per client")
	flag.IntVar(&o.value, "value", 256, "value size in bytes")
	flag.IntVar(&o.keys, "keys", 10000, "key space the puts pick keys from")
	flag.DurationVar(&o.duration, "duration", 4*time.Second, "measured time per put run")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured warm-up before each put run")
	flag.StringVar(&o.target, "target", "leader", "where puts go: leader, or all (round-robin over every member)")
	flag.IntVar(&o.trials, "trials", 10, "leader failover trials per system (0 skips them)")
	flag.DurationVar(&o.attempt, "attempt-timeout", 100*time.Millisecond, "timeout of one write attempt after a leader is killed")
	flag.StringVar(&foFsync, "failover-fsync", "on", "fsync setting for the failover trials (on, off)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of each put run to `prefix`-<system>-fsync<on|off>-c<clients>.pprof")
	flag.Parse()

	var err error
	o.systems = strings.Split(systems, ",")
	for _, s := range o.systems {
		if s != "klab" && s != "etcd" {
			return fmt.Errorf("-systems: unknown system %q (want klab or etcd)", s)
		}
	}
	if o.fsync, err = parseOnOff("-fsync", fsync); err != nil {
		return err
	}
	fo, err := parseOnOff("-failover-fsync", foFsync)
	if err != nil {
		return err
	}
	if len(fo) != 1 {
		return fmt.Errorf("-failover-fsync: want exactly one of on, off, got %q", foFsync)
	}
	o.foFsync = fo[0]
	for _, s := range strings.Split(clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-clients: %q is not a positive number", s)
		}
		o.clients = append(o.clients, n)
	}
	if o.target != "leader" && o.target != "all" {
		return fmt.Errorf("-target: want leader or all, got %q", o.target)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	fmt.Printf("## etcd benchmark: klab member vs etcd (embedded), %d members\n\n", o.members)
	fmt.Printf("Command: `%s`  \n", commandLine())
	fmt.Printf("Machine: %s/%s, %d CPUs (GOMAXPROCS %d), %s, %s  \n", runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("Both: heartbeat 100 ms, election 1000 ms, loopback, one process; each system's other settings are its defaults.  \n")
	fmt.Printf("Puts: %d B values, random keys from %d, target %s, %v measured after %v warm-up; latency per put, percentiles by nearest rank.\n\n",
		o.value, o.keys, o.target, o.duration, o.warmup)

	var rows []etcdbench.ThroughputRow
	for _, fs := range o.fsync {
		for _, sys := range o.systems {
			r, err := putRuns(ctx, o, sys, fs)
			rows = append(rows, r...)
			if err != nil {
				return err
			}
		}
	}
	if len(rows) > 0 {
		etcdbench.WriteThroughputTable(os.Stdout, rows)
		fmt.Println()
	}

	if o.trials > 0 {
		var frows []etcdbench.FailoverRow
		for _, sys := range o.systems {
			res, name, err := failover(ctx, o, sys)
			if err != nil {
				return err
			}
			frows = append(frows, etcdbench.FailoverRow{System: name, Fsync: o.foFsync, Result: res})
		}
		fmt.Printf("Failover: kill the leader abruptly (klab: Member.Kill; etcd: EtcdServer.HardStop, then its listeners closed). "+
			"\"write ok\": from the start of the kill until a put through the two survivors succeeds, retried with %v per attempt "+
			"(so its resolution is about that); \"new leader\": until the survivors agree on a new leader, polled every 10 ms. "+
			"The killed member is restarted and rejoins between trials.\n\n", o.attempt)
		etcdbench.WriteFailoverTable(os.Stdout, frows)
	}
	return nil
}

func parseOnOff(flagName, v string) ([]bool, error) {
	var out []bool
	for _, s := range strings.Split(v, ",") {
		switch strings.TrimSpace(s) {
		case "on":
			out = append(out, true)
		case "off":
			out = append(out, false)
		default:
			return nil, fmt.Errorf("%s: want on or off, got %q", flagName, s)
		}
	}
	return out, nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func commandLine() string {
	args := append([]string{"go run ./bench/etcd/cmd/etcdbench"}, os.Args[1:]...)
	return strings.Join(args, " ")
}

// startCluster starts a cluster of the named system; stop stops it and
// removes its data.
func startCluster(o options, sys string, fsync bool) (c etcdbench.Cluster, stop func(), err error) {
	if sys == "etcd" {
		e, err := etcdbench.StartEmbed(o.members, !fsync)
		if err != nil {
			return nil, nil, err
		}
		return e, e.Close, nil
	}
	tb := &runTB{name: "etcdbench-klab"}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatalError)
			if !ok {
				panic(r)
			}
			tb.runCleanups()
			c, stop, err = nil, nil, fmt.Errorf("start klab cluster: %w", f)
		}
	}()
	k := etcdbench.StartKlab(tb, o.members, !fsync)
	return k, tb.runCleanups, nil
}

// putRuns measures one system with one fsync setting, one run per client
// count, on one cluster.
func putRuns(ctx context.Context, o options, sys string, fsync bool) ([]etcdbench.ThroughputRow, error) {
	c, stop, err := startCluster(o, sys, fsync)
	if err != nil {
		return nil, err
	}
	defer stop()
	var rows []etcdbench.ThroughputRow
	for _, n := range o.clients {
		eps := etcdbench.Endpoints(c)
		if o.target == "leader" {
			l, err := etcdbench.WaitLeader(ctx, c, 10*time.Second)
			if err != nil {
				return rows, err
			}
			eps = etcdbench.Endpoints(c, l)
		}
		spec := etcdbench.LoadSpec{
			Endpoints: eps, Clients: n, Conns: o.conns, ValueSize: o.value, KeySpace: o.keys,
			Duration: o.duration, Warmup: o.warmup,
		}
		stopProfile, err := startProfile(o, c.System(), fsync, n)
		if err != nil {
			return rows, err
		}
		res, err := etcdbench.RunPuts(ctx, spec)
		stopProfile()
		if err != nil {
			return rows, fmt.Errorf("%s put run with %d clients: %w", c.System(), n, err)
		}
		rows = append(rows, etcdbench.ThroughputRow{System: c.System(), Fsync: fsync, Clients: n, Conns: max(1, min(o.conns, n)), Result: res})
		fmt.Fprintf(os.Stderr, "etcdbench: %s fsync %s, %d clients: %.0f ops/s\n", c.System(), onOff(fsync), n, res.Throughput())
	}
	return rows, nil
}

// startProfile starts a CPU profile of one put run if -cpuprofile is set.
// The profile covers the whole process (both the servers and the load).
func startProfile(o options, system string, fsync bool, clients int) (stop func(), err error) {
	if o.cpuprofile == "" {
		return func() {}, nil
	}
	name := fmt.Sprintf("%s-%s-fsync%v-c%d.pprof", o.cpuprofile, strings.Fields(system)[0], onOff(fsync), clients)
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// failover runs the failover trials on a fresh cluster of the system.
func failover(ctx context.Context, o options, sys string) (etcdbench.FailoverResult, string, error) {
	c, stop, err := startCluster(o, sys, o.foFsync)
	if err != nil {
		return etcdbench.FailoverResult{}, sys, err
	}
	defer stop()
	res, err := etcdbench.Failover(ctx, c, etcdbench.FailoverSpec{
		Trials: o.trials, AttemptTimeout: o.attempt, RetryPause: 5 * time.Millisecond,
	})
	if err != nil {
		return res, c.System(), err
	}
	fmt.Fprintf(os.Stderr, "etcdbench: %s failover: mean %v over %d trials\n", c.System(), etcdbench.Mean(res.Recovery), len(res.Recovery))
	return res, c.System(), nil
}
