// Command proxybench measures klab's kube-proxy modes as the cluster grows
// and prints a Markdown table: for each mode and each number of services, a
// full rule sync and a resync after one endpoint changed (median and p90),
// the rules programmed, and the cost of finding the endpoint of one new
// connection through a ClusterIP and through a NodePort, with the growth of
// both over the smallest size.
//
//	go run ./bench/proxy/cmd/proxybench [-services 10,100,1000,5000] [-endpoints 10] [-modes ...] [-quick] [-o json]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	proxybench "github.com/klab-dev/klab/bench/proxy"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// machine is where and how a run was made.
type machine struct {
	Command    string `json:"command"`
	GoVersion  string `json:"go_version"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Time       string `json:"time"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "proxybench:", err)
		os.Exit(1)
	}
}

func run() error {
	services := flag.String("services", "10,100,1000,5000", "cluster sizes in services, comma-separated")
	endpoints := flag.Int("endpoints", 10, "ready endpoints per service")
	modes := flag.String("modes", strings.Join(proxier.ModeNames, ","), "proxy modes to measure, comma-separated")
	quick := flag.Bool("quick", false, "a few repetitions only, for smoke tests (figures are not stable)")
	output := flag.String("o", "table", "output format: table (Markdown) or json")
	quiet := flag.Bool("q", false, "no progress lines on stderr")
	flag.Parse()

	o := proxybench.Options{Endpoints: *endpoints, Budget: proxybench.FullBudget, Progress: os.Stderr}
	if *quick {
		o.Budget = proxybench.QuickBudget
	}
	if *quiet {
		o.Progress = nil
	}
	for _, s := range strings.Split(*services, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-services: %q is not a positive number", s)
		}
		o.Services = append(o.Services, n)
	}
	for _, m := range strings.Split(*modes, ",") {
		o.Modes = append(o.Modes, strings.TrimSpace(m))
	}
	if *output != "table" && *output != "json" {
		return fmt.Errorf("-o: want table or json, got %q", *output)
	}

	m := machine{
		Command:   commandLine(),
		GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Time: time.Now().UTC().Format(time.RFC3339),
	}
	res, err := proxybench.Run(o)
	if err != nil {
		return err
	}

	if *output == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Machine machine `json:"machine"`
			*proxybench.Result
		}{m, res})
	}
	fmt.Printf("## kube-proxy modes: sync and lookup as services grow\n\n")
	fmt.Printf("Command: `%s`  \n", m.Command)
	fmt.Printf("Machine: %s/%s, %d CPUs (GOMAXPROCS %d), %s, %s  \n", m.GOOS, m.GOARCH, m.CPUs, m.GOMAXPROCS, m.GoVersion, m.Time)
	fmt.Printf("Cluster: NodePort Services (one TCP port, also reached on its ClusterIP), %d ready endpoints each on 4 nodes.  \n", res.Endpoints)
	fmt.Printf("Sync: wall time of Mode.Sync, heap collected before each; \"sync\" is a fresh mode, \"resync\" a synced one after " +
		"one endpoint of one service was replaced; p50/p90 by nearest rank.  \n")
	fmt.Printf("Lookup: ns per Pick for a new connection to a service drawn uniformly at random (ClusterIP from a pod, NodePort from "+
		"outside), median of %d rounds; includes the loop's own %.0f ns. × is over the same mode at %d services.\n\n",
		o.Budget.LookupRounds, res.LoopOverhead.NsPerOp, res.BaseServices)
	proxybench.WriteTable(os.Stdout, res)
	return nil
}

func commandLine() string {
	return strings.Join(append([]string{"go run ./bench/proxy/cmd/proxybench"}, os.Args[1:]...), " ")
}
