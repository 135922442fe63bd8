package uitest

import (
	"context"
	"sync"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Lab is an in-memory twin of labio.Lab: it records what the UI asked for
// and answers as a healthy cluster would, so that key handling can be
// tested without starting members.
type Lab struct {
	info  *lab.Info
	owned bool

	mu       sync.Mutex
	Requests []lab.ChaosRequest
	Clocks   []etcd.ClockRequest
	Puts     []string
	Closed   []bool // the remove argument of each Close
	ChaosFn  func(lab.ChaosRequest) (*lab.ChaosResult, error)
}

// NewLab returns a twin of a cluster described by info; owned says whether
// it runs in this process.
func NewLab(info *lab.Info, owned bool) *Lab { return &Lab{info: info, owned: owned} }

// Info returns the cluster's cluster.json.
func (l *Lab) Info() *lab.Info { return l.info }

// Owned reports whether the twin plays a cluster run by this process.
func (l *Lab) Owned() bool { return l.owned }

// Chaos records the request and resolves "leader" to master-1.
func (l *Lab) Chaos(_ context.Context, req lab.ChaosRequest) (*lab.ChaosResult, error) {
	l.mu.Lock()
	l.Requests = append(l.Requests, req)
	fn := l.ChaosFn
	l.mu.Unlock()
	if fn != nil {
		return fn(req)
	}
	res := &lab.ChaosResult{Op: req.Op}
	for _, t := range req.Targets {
		switch t {
		case lab.TargetLeader:
			res.Targets = append(res.Targets, lab.Target{Node: "master-1", Component: "etcd", Leader: true})
			res.LeaderTerm = 3
		default:
			res.Targets = append(res.Targets, lab.Target{Node: t})
		}
	}
	if req.Op == lab.OpPartition {
		res.Side = req.Targets
		for _, m := range l.info.Members {
			if m.Name != req.Targets[0] {
				res.From = append(res.From, m.Name)
			}
		}
	}
	return res, nil
}

// Components reports every member running.
func (l *Lab) Components(context.Context) ([]runtime.ComponentInfo, error) {
	return componentsOf(l.info), nil
}

// SetClock records the request.
func (l *Lab) SetClock(_ context.Context, req etcd.ClockRequest) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Clocks = append(l.Clocks, req)
	return nil
}

// Put records the key.
func (l *Lab) Put(_ context.Context, key, _ string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Puts = append(l.Puts, key)
	return nil
}

// Close records the call.
func (l *Lab) Close(_ context.Context, remove bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Closed = append(l.Closed, remove)
	return nil
}
