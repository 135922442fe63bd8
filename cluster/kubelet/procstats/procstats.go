// Package procstats reads a process's resource usage from Linux's /proc,
// as cAdvisor reads a cgroup's: cumulative CPU time from /proc/<pid>/stat
// and resident memory from /proc/<pid>/status. The in-process runtime
// reports the klab process that runs its node this way, having no cgroup
// of its own to read.
package procstats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100
// on every Linux architecture Go runs on.
const userHZ = 100

// ErrUnsupported is returned where there is no /proc to read.
var ErrUnsupported = errors.New("no /proc on this system")

// Usage is a process's CPU time so far and its resident memory.
type Usage struct {
	CPU         time.Duration
	MemoryBytes int64
}

// Self reads the calling process's usage.
func Self() (Usage, error) { return Read("self") }

// Read reads the usage of the process pid ("self" for this one).
func Read(pid string) (Usage, error) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return Usage{}, ErrUnsupported
	}
	if err != nil {
		return Usage{}, fmt.Errorf("read /proc/%s/stat: %w", pid, err)
	}
	cpu, err := parseStatCPU(stat)
	if err != nil {
		return Usage{}, fmt.Errorf("/proc/%s/stat: %w", pid, err)
	}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return Usage{}, fmt.Errorf("read /proc/%s/status: %w", pid, err)
	}
	rss, err := parseStatusRSS(status)
	if err != nil {
		return Usage{}, fmt.Errorf("/proc/%s/status: %w", pid, err)
	}
	return Usage{CPU: cpu, MemoryBytes: rss}, nil
}

// parseStatCPU returns utime+stime from a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may hold spaces, so the
// fields are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("no command name in parentheses")
	}
	fields := strings.Fields(string(stat[end+1:]))
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu time %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// parseStatusRSS returns VmRSS in bytes from /proc/<pid>/status.
func parseStatusRSS(status []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("VmRSS %q: want a number of kB", strings.TrimSpace(rest))
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS %q: %w", fields[0], err)
		}
		return kb << 10, nil
	}
	return 0, errors.New("no VmRSS line")
}
