package app

import (
	"sync/atomic"
	"testing"
	"time"
)

type cpuCounter struct{ ns atomic.Int64 }

func (c *cpuCounter) AddCPU(d time.Duration) { c.ns.Add(int64(d)) }

func TestBurnCPUAccountsWhatItUsed(t *testing.T) {
	var c cpuCounter
	burnCPU(20*time.Millisecond, &c, nil)
	if got := time.Duration(c.ns.Load()); got < 20*time.Millisecond {
		t.Errorf("accounted %v, want at least the 20ms asked for", got)
	}
	burnCPU(0, &c, nil) // off
	stop := make(chan struct{})
	close(stop)
	before := c.ns.Load()
	burnCPU(time.Hour, &c, stop) // a request that went away stops the work
	if got := time.Duration(c.ns.Load() - before); got > time.Second {
		t.Errorf("stopped burn accounted %v", got)
	}
}

func TestCPUPerRequestFlag(t *testing.T) {
	cfg, err := parseConfig([]string{"--cpu-per-request=50ms"}, nil, discard{})
	if err != nil || cfg.cpuPerRequest != 50*time.Millisecond {
		t.Fatalf("cpuPerRequest = %v, %v; want 50ms", cfg.cpuPerRequest, err)
	}
	if _, err := parseConfig(nil, map[string]string{"CPU_PER_REQUEST": "-1"}, discard{}); err == nil {
		t.Error("negative CPU_PER_REQUEST accepted")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
