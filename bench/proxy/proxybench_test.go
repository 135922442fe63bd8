package proxybench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

func TestNewCluster(t *testing.T) {
	tests := []struct {
		name                string
		services, endpoints int
		wantSlices          int
	}{
		{name: "one service, one endpoint", services: 1, endpoints: 1, wantSlices: 1},
		{name: "ten services of ten", services: 10, endpoints: 10, wantSlices: 10},
		{name: "endpoints split over slices of 100", services: 3, endpoints: 150, wantSlices: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCluster(tt.services, tt.endpoints)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Services) != tt.services || len(c.EndpointSlices) != tt.wantSlices {
				t.Fatalf("got %d services and %d slices, want %d and %d", len(c.Services), len(c.EndpointSlices), tt.services, tt.wantSlices)
			}
			snap := c.Snapshot()
			if len(snap.Skipped) > 0 {
				t.Fatalf("snapshot skipped %v", snap.Skipped)
			}
			nodePorts := map[int]bool{}
			addrs := map[string]bool{}
			for name, svc := range snap.Services {
				if svc.NodePort == 0 || nodePorts[svc.NodePort] {
					t.Errorf("%s: NodePort %d is missing or shared", name, svc.NodePort)
				}
				nodePorts[svc.NodePort] = true
				eps := snap.Endpoints[name]
				if len(eps) != tt.endpoints {
					t.Errorf("%s: %d endpoints, want %d", name, len(eps), tt.endpoints)
				}
				for _, ep := range eps {
					if !ep.Ready || addrs[ep.String()] {
						t.Errorf("%s: endpoint %s is not ready or not unique", name, ep)
					}
					addrs[ep.String()] = true
				}
			}
		})
	}
}

func TestNewClusterRejectsWhatCannotExist(t *testing.T) {
	for _, tt := range []struct {
		name                string
		services, endpoints int
	}{
		{name: "no services", services: 0, endpoints: 10},
		{name: "no endpoints", services: 10, endpoints: 0},
		{name: "more services than NodePorts", services: 35537, endpoints: 1},
		{name: "more endpoints than the pod network", services: 5000, endpoints: 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewCluster(tt.services, tt.endpoints); err == nil {
				t.Fatalf("NewCluster(%d, %d) succeeded", tt.services, tt.endpoints)
			}
		})
	}
}

func TestWithEndpointReplacedChangesOneEndpoint(t *testing.T) {
	c, err := NewCluster(5, 4)
	if err != nil {
		t.Fatal(err)
	}
	before := c.Snapshot()
	changed := c.WithEndpointReplaced().Snapshot()
	if again := c.Snapshot(); fmt.Sprint(again.Endpoints) != fmt.Sprint(before.Endpoints) {
		t.Fatal("WithEndpointReplaced modified the original cluster")
	}
	differ := 0
	for name, eps := range before.Endpoints {
		was := map[string]bool{}
		for _, ep := range eps {
			was[ep.String()] = true
		}
		for _, ep := range changed.Endpoints[name] {
			if !was[ep.String()] {
				differ++
			}
		}
		if len(changed.Endpoints[name]) != len(eps) {
			t.Errorf("%s: %d endpoints after the change, want %d", name, len(changed.Endpoints[name]), len(eps))
		}
	}
	if differ != 1 {
		t.Fatalf("%d endpoints differ, want 1", differ)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name     string
		sorted   []time.Duration
		p        int
		want     time.Duration
		wantNone bool
	}{
		{name: "empty", sorted: nil, p: 50, wantNone: true},
		{name: "one value", sorted: ms(7), p: 90, want: 7 * time.Millisecond},
		{name: "median of ten is the fifth", sorted: ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), p: 50, want: 5 * time.Millisecond},
		{name: "p90 of ten is the ninth", sorted: ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), p: 90, want: 9 * time.Millisecond},
		{name: "p90 of five is the fifth", sorted: ms(1, 2, 3, 4, 5), p: 90, want: 5 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := percentile(tt.sorted, tt.p)
			if tt.wantNone && got != 0 || !tt.wantNone && got != tt.want {
				t.Fatalf("percentile(%v, %d) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

// TestRunQuick runs the whole measurement, as the command does with -quick,
// at tiny sizes: every mode at every size must produce a row of positive
// figures, and the table must print each of them. It asserts nothing about
// how fast anything is.
func TestRunQuick(t *testing.T) {
	sizes := []int{3, 12}
	res, err := Run(Options{Services: sizes, Endpoints: 2, Modes: proxier.ModeNames, Budget: QuickBudget})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != len(proxier.ModeNames)*len(sizes) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(proxier.ModeNames)*len(sizes))
	}
	if res.BaseServices != 3 || res.LoopOverhead.NsPerOp <= 0 {
		t.Errorf("base %d services, loop overhead %v ns: want 3 and a positive cost", res.BaseServices, res.LoopOverhead.NsPerOp)
	}
	i := 0
	for _, mode := range proxier.ModeNames {
		for _, n := range sizes {
			r := res.Rows[i]
			i++
			if r.Mode != mode || r.Services != n {
				t.Fatalf("row %d is %s × %d, want %s × %d", i, r.Mode, r.Services, mode, n)
			}
			if r.Rules <= 0 || r.Sync.P50 <= 0 || r.Sync.P90 < r.Sync.P50 || r.Resync.P50 <= 0 || r.Resync.P90 < r.Resync.P50 ||
				r.Sync.Reps < QuickBudget.MinSyncs || r.Resync.Reps < QuickBudget.MinSyncs {
				t.Errorf("%s × %d: sync figures %+v %+v, %d rules", mode, n, r.Sync, r.Resync, r.Rules)
			}
			for via, l := range map[string]Lookup{"ClusterIP": r.ClusterIP, "NodePort": r.NodePort} {
				if l.NsPerOp <= 0 || l.Ops <= 0 || l.AllocsPerOp < 0 {
					t.Errorf("%s × %d: lookup via %s %+v", mode, n, via, l)
				}
			}
			if r.SyncGrowth <= 0 || r.ClusterIPGrowth <= 0 || r.NodePortGrowth <= 0 {
				t.Errorf("%s × %d: growths %v %v %v", mode, n, r.SyncGrowth, r.ClusterIPGrowth, r.NodePortGrowth)
			}
			if n == sizes[0] && (r.SyncGrowth != 1 || r.ClusterIPGrowth != 1 || r.NodePortGrowth != 1) {
				t.Errorf("%s × %d is the base size, yet its growths are %v %v %v", mode, n, r.SyncGrowth, r.ClusterIPGrowth, r.NodePortGrowth)
			}
		}
	}

	var buf bytes.Buffer
	WriteTable(&buf, res)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2+len(res.Rows) {
		t.Fatalf("table has %d lines, want a header, a rule and %d rows:\n%s", len(lines), len(res.Rows), buf.String())
	}
	header := cells(lines[0])
	for k, line := range lines[2:] {
		row := cells(line)
		if len(row) != len(header) {
			t.Fatalf("row %q has %d cells, the header %d", line, len(row), len(header))
		}
		if row[0] != res.Rows[k].Mode || row[1] != strconv.Itoa(res.Rows[k].Services) {
			t.Errorf("row %q: want %s × %d", line, res.Rows[k].Mode, res.Rows[k].Services)
		}
		for c := 1; c < len(row); c++ {
			if header[c] == "allocs/op" {
				continue // zero is a fine number of allocations
			}
			if v, ok := number(row[c]); !ok || v <= 0 {
				t.Errorf("%s × %s: %s is %q, want a positive number", row[0], row[1], header[c], row[c])
			}
		}
	}

	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(out, &back); err != nil || len(back.Rows) != len(res.Rows) {
		t.Fatalf("JSON round trip: %v, %d rows", err, len(back.Rows))
	}
}

func TestRunRejectsUnknownMode(t *testing.T) {
	_, err := Run(Options{Services: []int{1}, Endpoints: 1, Modes: []string{"ebpf"}, Budget: QuickBudget})
	if err == nil {
		t.Fatal("Run with mode ebpf succeeded")
	}
}

// cells splits a Markdown table row.
func cells(line string) []string {
	parts := strings.Split(strings.Trim(line, "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// number reads a table cell such as "12.3 ms", "480 ns" or "1.97×".
func number(cell string) (float64, bool) {
	cell = strings.TrimSuffix(cell, "×")
	for _, unit := range []string{" ns", " µs", " ms"} {
		cell = strings.TrimSuffix(cell, unit)
	}
	v, err := strconv.ParseFloat(cell, 64)
	return v, err == nil
}
