package procstats

import (
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want time.Duration
		err  bool
	}{
		{name: "plain", stat: "42 (klab) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0", want: 3 * time.Second},
		{name: "command with spaces and parens", stat: "7 (a b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0", want: 30 * time.Millisecond},
		{name: "truncated", stat: "7 (x) R 1 2", err: true},
		{name: "no command", stat: "7 x R", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if got != tt.want {
				t.Errorf("cpu = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseStatusRSS(t *testing.T) {
	got, err := parseStatusRSS([]byte("Name:\tklab\nVmRSS:\t  2048 kB\nThreads: 9\n"))
	if err != nil || got != 2048<<10 {
		t.Fatalf("rss = %d, %v; want %d", got, err, 2048<<10)
	}
	if _, err := parseStatusRSS([]byte("Name:\tklab\n")); err == nil {
		t.Error("no VmRSS line: want an error")
	}
}

func TestSelfGrows(t *testing.T) {
	before, err := Self()
	if err == ErrUnsupported {
		t.Skip("no /proc here")
	}
	if err != nil {
		t.Fatal(err)
	}
	if before.MemoryBytes <= 0 {
		t.Errorf("resident memory %d, want > 0", before.MemoryBytes)
	}
	deadline := time.Now().Add(5 * time.Second)
	x := 1
	for time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			x = x*3 + 1
		}
		after, err := Self()
		if err != nil {
			t.Fatal(err)
		}
		if after.CPU > before.CPU {
			return
		}
	}
	t.Errorf("CPU time did not grow past %v after busy work (%d)", before.CPU, x)
}
