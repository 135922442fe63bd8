package app

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// CPUAccounter is told of the CPU time the app spends on purpose
// (--cpu-per-request), after it spent it. A runtime whose containers are
// not processes of their own (the in-process one) reports it as the
// container's CPU usage, where the Docker runtime reads the container's
// cgroup.
type CPUAccounter interface {
	// AddCPU records d more CPU time, as the kernel measured it.
	AddCPU(d time.Duration)
}

// burnCheckEvery is how many rounds of busy work the app does between two
// looks at the CPU time its thread has used: often enough to stop close to
// the target, rarely enough that reading the clock costs little.
const burnCheckEvery = 20000

// burnCPU keeps one CPU busy until the calling thread has used d of CPU
// time, as a request to php-apache in upstream's HPA walkthrough does, and
// reports what it used to accounter. The goroutine is locked to its
// thread so that the thread's CPU clock (/proc/thread-self/schedstat, the
// kernel's own count) measures exactly this work; where that clock cannot
// be read, wall time stands in for it.
func burnCPU(d time.Duration, accounter CPUAccounter, stop <-chan struct{}) {
	if d <= 0 {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	clock := threadCPUTime
	if _, ok := clock(); !ok {
		wallStart := time.Now()
		clock = func() (time.Duration, bool) { return time.Since(wallStart), true }
	}
	start, _ := clock()
	used := time.Duration(0)
	x := uint64(1)
	for used < d {
		select {
		case <-stop:
			d = 0
		default:
		}
		for i := 0; i < burnCheckEvery; i++ {
			x = x*6364136223846793005 + 1442695040888963407 // an LCG step: work the compiler keeps
		}
		now, _ := clock()
		used = now - start
	}
	burnSink = x
	if accounter != nil {
		accounter.AddCPU(used)
	}
}

// burnSink keeps the busy loop's result alive.
var burnSink uint64

// threadCPUTime returns the CPU time the calling thread has used, from
// the first field of /proc/thread-self/schedstat (nanoseconds on a CPU).
func threadCPUTime() (time.Duration, bool) {
	data, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0, false
	}
	field, _, _ := strings.Cut(string(data), " ")
	ns, err := strconv.ParseInt(strings.TrimSpace(field), 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ns), true
}
