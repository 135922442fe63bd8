package proxybench

import (
	"fmt"
	"io"
	"slices"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// Options say what one run measures.
type Options struct {
	// Services are the cluster sizes, in services; Endpoints the ready
	// endpoints of each service.
	Services  []int
	Endpoints int
	// Modes are the proxy modes measured, by name.
	Modes  []string
	Budget Budget
	// Progress, when set, receives one line per figure as the run goes.
	Progress io.Writer
}

// Row is one mode at one cluster size.
type Row struct {
	Mode     string `json:"mode"`
	Services int    `json:"services"`
	// Rules is what the mode's SyncResult counted.
	Rules int `json:"rules"`
	// Sync is a full sync of a fresh mode; Resync the sync after one
	// endpoint of one service changed.
	Sync   Durations `json:"sync"`
	Resync Durations `json:"resync"`
	// ClusterIP and NodePort are one new connection through each entry.
	ClusterIP Lookup `json:"lookup_cluster_ip"`
	NodePort  Lookup `json:"lookup_node_port"`
	// The growths are this row's figure over the same mode's at the
	// smallest size of the run (Result.BaseServices): full sync p50 and
	// lookup ns/op.
	SyncGrowth      float64 `json:"sync_growth"`
	ClusterIPGrowth float64 `json:"lookup_cluster_ip_growth"`
	NodePortGrowth  float64 `json:"lookup_node_port_growth"`
}

// Result is everything one run measured.
type Result struct {
	Endpoints    int `json:"endpoints_per_service"`
	BaseServices int `json:"growth_base_services"`
	// LoopOverhead is what the lookup loop costs around a Pick that does
	// nothing (at the smallest size); every lookup figure includes it.
	LoopOverhead Lookup `json:"lookup_loop_overhead"`
	Rows         []Row  `json:"rows"`
}

// Run measures every mode at every size, one size at a time (the objects of
// a size are built once and shared by the modes). Rows come out by mode,
// then by size.
func Run(o Options) (*Result, error) {
	if len(o.Services) == 0 || len(o.Modes) == 0 {
		return nil, fmt.Errorf("nothing to measure: give at least one size and one mode")
	}
	for _, mode := range o.Modes {
		if _, err := proxier.New(mode, ProxyConfig()); err != nil {
			return nil, err
		}
	}
	sizes := slices.Clone(o.Services)
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	res := &Result{Endpoints: o.Endpoints, BaseServices: sizes[0]}

	for _, n := range sizes {
		cluster, err := NewCluster(n, o.Endpoints)
		if err != nil {
			return nil, err
		}
		snap, changed := cluster.Snapshot(), cluster.WithEndpointReplaced().Snapshot()
		if len(snap.Skipped) > 0 {
			return nil, fmt.Errorf("%d services: the snapshot skipped objects: %v", n, snap.Skipped[0])
		}
		if len(snap.Services) != n {
			return nil, fmt.Errorf("%d services: the snapshot holds %d service ports", n, len(snap.Services))
		}
		names := snap.ServiceNames()
		if n == sizes[0] {
			res.LoopOverhead = MeasureLoopOverhead(names, o.Budget)
		}
		for _, mode := range o.Modes {
			row, err := measureMode(o, mode, n, snap, changed, names)
			if err != nil {
				return nil, fmt.Errorf("%s, %d services: %w", mode, n, err)
			}
			res.Rows = append(res.Rows, row)
		}
	}

	slices.SortStableFunc(res.Rows, func(a, b Row) int {
		return slices.Index(o.Modes, a.Mode) - slices.Index(o.Modes, b.Mode)
	})
	base := map[string]Row{}
	for _, r := range res.Rows {
		if r.Services == res.BaseServices {
			base[r.Mode] = r
		}
	}
	for i := range res.Rows {
		r, b := &res.Rows[i], base[res.Rows[i].Mode]
		r.SyncGrowth = ratio(float64(r.Sync.P50), float64(b.Sync.P50))
		r.ClusterIPGrowth = ratio(r.ClusterIP.NsPerOp, b.ClusterIP.NsPerOp)
		r.NodePortGrowth = ratio(r.NodePort.NsPerOp, b.NodePort.NsPerOp)
	}
	return res, nil
}

func measureMode(o Options, mode string, n int, snap, changed *proxier.Snapshot, names []proxier.ServicePortName) (Row, error) {
	row := Row{Mode: mode, Services: n}
	var err error
	if row.Sync, row.Rules, err = MeasureFullSync(mode, snap, o.Budget); err != nil {
		return row, err
	}
	o.progress("%-9s %5d services: sync p50 %v over %d, %d rules", mode, n, row.Sync.P50, row.Sync.Reps, row.Rules)
	if row.Resync, err = MeasureResync(mode, snap, changed, o.Budget); err != nil {
		return row, err
	}
	o.progress("%-9s %5d services: resync p50 %v over %d", mode, n, row.Resync.P50, row.Resync.Reps)

	m, err := proxier.New(mode, ProxyConfig())
	if err != nil {
		return row, err
	}
	m.Sync(snap)
	if row.ClusterIP, err = MeasureLookup(m, names, proxier.ViaClusterIP, o.Budget); err != nil {
		return row, fmt.Errorf("lookup via ClusterIP: %w", err)
	}
	if row.NodePort, err = MeasureLookup(m, names, proxier.ViaNodePort, o.Budget); err != nil {
		return row, fmt.Errorf("lookup via NodePort: %w", err)
	}
	o.progress("%-9s %5d services: lookup %.0f ns (ClusterIP), %.0f ns (NodePort)", mode, n, row.ClusterIP.NsPerOp, row.NodePort.NsPerOp)
	return row, nil
}

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
