//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/record"
)

// loadEnv, when set, makes uibench the busy phase's load: it writes to the
// etcd endpoints it names (comma-separated) until it is killed.
const loadEnv = "UIBENCH_LOAD"

// loadCredsEnv carries the cluster's etcd client credentials (JSON) to the
// load process: etcd accepts only clients with a certificate of its CA.
const loadCredsEnv = "UIBENCH_LOAD_ETCD"

// loadRate is the busy phase's writes per second, and loadValue each
// write's size.
const (
	loadRate  = 200
	loadValue = 1024
)

// recording measures the Recorder on the cluster left alone and busy.
func recording(info *lab.Info, dur time.Duration, dir string) error {
	for _, busy := range []bool{false, true} {
		phase := "steady"
		var stop func()
		if busy {
			phase = fmt.Sprintf("busy: %d writes/s of %d B, a Deployment scaled 0↔%d every %s", loadRate, loadValue, churnReplicas, churnEvery)
			var err error
			if stop, err = startLoad(info); err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(context.Background())
			if err := churn(ctx, info); err != nil {
				cancel()
				stop()
				return err
			}
			stopLoad := stop
			stop = func() { cancel(); stopLoad() }
		}
		alone, _, err := observe(info, dur, "")
		if err != nil {
			return err
		}
		with, res, err := observe(info, dur, filepath.Join(dir, fmt.Sprintf("events-%t.jsonl.gz", busy)))
		if stop != nil {
			stop()
		}
		if err != nil {
			return err
		}
		perMin := float64(res.bytes) / res.elapsed.Minutes()
		fmt.Printf("| recording (%s) | %s | %.1f MB/min (%d observations, %d tapes) | %+.2f %% of a core (with %.2f %%, without %.2f %%) | %.2f %% of a core inside Record and Tape |\n",
			phase, res.elapsed.Round(time.Second), perMin/1e6, res.observed, res.tapes,
			100*(with-alone), 100*with, 100*alone, 100*res.recording.Seconds()/res.elapsed.Seconds())
	}
	return nil
}

type observed struct {
	elapsed   time.Duration
	observed  int
	bytes     int64
	tapes     int
	recording time.Duration
}

// observe reads the Observer and the views' sources as the workspace does
// for dur, recording each batch and each tape to path when it is set, and
// returns this process's CPU in that time as a fraction of a core.
func observe(info *lab.Info, dur time.Duration, path string) (float64, observed, error) {
	var res observed
	var rec *record.Recorder
	if path != "" {
		var err error
		if rec, err = record.Open(path, info, time.Now()); err != nil {
			return 0, res, err
		}
		defer rec.Close()
	}
	o := lab.NewObserver(info.Members, lab.ObserverOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { o.Run(ctx); close(stopped) }()
	var stats tapeStats
	viewsDone := make(chan struct{})
	go func() { followViews(ctx, info, rec, &stats); close(viewsDone) }()
	var mu sync.Mutex
	counting := false
	read := make(chan struct{})
	go func() {
		defer close(read)
		wait := labio.WaitObservations(o.Observations(), o.News(), lab.RoutineBeat)
		for {
			msg := wait()
			if _, closed := msg.(labio.ObserverClosedMsg); closed {
				return
			}
			batch, ok := msg.(labio.ObservationsMsg)
			if !ok {
				continue
			}
			var took time.Duration
			if rec != nil {
				start := time.Now()
				rec.Record(batch.Batch)
				took = time.Since(start)
			}
			mu.Lock()
			if counting {
				res.observed += len(batch.Batch)
				res.recording += took
			}
			mu.Unlock()
		}
	}()
	time.Sleep(5 * time.Second)
	var bytesBefore int64
	if rec != nil {
		bytesBefore = rec.Bytes()
	}
	mu.Lock()
	counting = true
	mu.Unlock()
	stats.mu.Lock()
	stats.counting = true
	stats.mu.Unlock()
	before, wall := rusage(), time.Now()
	time.Sleep(dur)
	after, elapsed := rusage(), time.Since(wall)
	mu.Lock()
	counting = false
	mu.Unlock()
	stats.mu.Lock()
	stats.counting = false
	res.tapes, res.recording = stats.tapes, res.recording+stats.recording
	stats.mu.Unlock()
	if rec != nil {
		res.bytes = rec.Bytes() - bytesBefore
	}
	cancel()
	<-stopped
	<-read
	<-viewsDone
	res.elapsed = elapsed
	return (after - before).Seconds() / elapsed.Seconds(), res, nil
}

// startLoad starts the busy phase's writer in a process of its own, so that
// its CPU is not this one's.
func startLoad(info *lab.Info) (stop func(), err error) {
	var endpoints []string
	for _, m := range info.Members {
		endpoints = append(endpoints, m.ClientURL)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	creds, err := json.Marshal(info.EtcdCredentials)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(os.Environ(), loadEnv+"="+strings.Join(endpoints, ","), loadCredsEnv+"="+string(creds))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() { cmd.Process.Kill(); cmd.Wait() }, nil
}

// load writes loadRate keys a second to etcd until it is killed.
func load(endpoints string) error {
	var creds lab.EtcdCredentials
	if err := json.Unmarshal([]byte(os.Getenv(loadCredsEnv)), &creds); err != nil {
		return fmt.Errorf("%s: %w", loadCredsEnv, err)
	}
	cfg, err := creds.ClientConfig(strings.Split(endpoints, ","))
	if err != nil {
		return err
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return err
	}
	defer cli.Close()
	value := strings.Repeat("x", loadValue)
	tick := time.NewTicker(time.Second / loadRate)
	defer tick.Stop()
	for i := 0; ; i++ {
		<-tick.C
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cli.Put(ctx, fmt.Sprintf("/uibench/%d", i%1000), value)
		cancel()
	}
}
