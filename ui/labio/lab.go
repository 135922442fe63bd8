// Package labio is where the TUI touches the cluster: starting or
// attaching to one, chaos operations, the raft clock, writes, and the
// Observer's stream, each as a Bubble Tea command so that no I/O ever runs
// in Update or View.
package labio

import (
	"context"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Lab is the cluster the workspace shows and acts on: one this process
// runs, or one a `klab up` process runs that the TUI attached to.
type Lab interface {
	// Info is the cluster's cluster.json.
	Info() *lab.Info
	// Owned reports whether the cluster runs inside this process, and so
	// stops when klab quits.
	Owned() bool
	Chaos(ctx context.Context, req lab.ChaosRequest) (*lab.ChaosResult, error)
	// Components reports the runtime's view of each component.
	Components(ctx context.Context) ([]runtime.ComponentInfo, error)
	// SetClock changes the raft clock of every member.
	SetClock(ctx context.Context, req etcd.ClockRequest) error
	// Put writes a key through the etcd v3 API, as any client would.
	Put(ctx context.Context, key, value string) error
	// Close stops an owned cluster, removing its data when remove is set;
	// for an attached one it does nothing, the cluster keeps running.
	Close(ctx context.Context, remove bool) error
}

// owned is a cluster started by this process.
type owned struct{ c *lab.Cluster }

// Owned wraps a cluster this process started.
func Owned(c *lab.Cluster) Lab { return owned{c} }

func (o owned) Info() *lab.Info { return o.c.Info() }
func (o owned) Owned() bool     { return true }
func (o owned) Chaos(ctx context.Context, req lab.ChaosRequest) (*lab.ChaosResult, error) {
	return o.c.Chaos(ctx, req)
}
func (o owned) Components(ctx context.Context) ([]runtime.ComponentInfo, error) {
	return o.c.Runtime().List(ctx)
}
func (o owned) SetClock(ctx context.Context, req etcd.ClockRequest) error {
	return setClock(ctx, o.c.Info().Members, req)
}
func (o owned) Put(ctx context.Context, key, value string) error {
	return put(ctx, o.c.Info(), key, value)
}

func (o owned) Close(ctx context.Context, remove bool) error {
	if o.c.Detached() && !remove {
		// A Docker cluster lives in its containers, which closing this
		// process would leave running: stop them, as klab stop does.
		return lab.Stop(ctx, o.c.Spec().Name, nil)
	}
	err := o.c.Close(ctx, nil)
	if remove {
		// The control socket is closed now, so Down finds nothing running
		// and only removes the state dir.
		_, derr := lab.Down(ctx, o.c.Spec().Name, false, nil)
		err = errors.Join(err, derr)
	}
	return err
}

// inEngine is a Docker cluster that another klab command created: it lives
// in the engine's containers, which the workspace acts on through the engine
// as klab chaos does, and it keeps running when klab quits.
type inEngine struct{ owned }

// InEngine wraps a Docker cluster attached through the engine (lab.Attach).
func InEngine(c *lab.Cluster) Lab { return inEngine{owned{c}} }

func (inEngine) Owned() bool                       { return false }
func (inEngine) Close(context.Context, bool) error { return nil }

// attached is a cluster a `klab up` process runs.
type attached struct {
	c    *lab.Client
	info *lab.Info
}

// Attached wraps a connection to a running cluster.
func Attached(c *lab.Client, info *lab.Info) Lab { return attached{c, info} }

func (a attached) Info() *lab.Info { return a.info }
func (a attached) Owned() bool     { return false }
func (a attached) Chaos(ctx context.Context, req lab.ChaosRequest) (*lab.ChaosResult, error) {
	return a.c.Chaos(ctx, req)
}
func (a attached) Components(ctx context.Context) ([]runtime.ComponentInfo, error) {
	st, err := a.c.Status(ctx)
	if err != nil {
		return nil, err
	}
	return st.Components, nil
}
func (a attached) SetClock(ctx context.Context, req etcd.ClockRequest) error {
	return setClock(ctx, a.info.Members, req)
}
func (a attached) Put(ctx context.Context, key, value string) error {
	return put(ctx, a.info, key, value)
}
func (a attached) Close(context.Context, bool) error { return nil }

// setClock changes every member's clock through the lab, as klab clock
// does.
func setClock(ctx context.Context, members []lab.MemberInfo, req etcd.ClockRequest) error {
	_, err := lab.SetClock(ctx, members, req)
	return err
}

// put writes one key with a fresh clientv3 client: writes are rare (a key
// press), and a fresh client never carries a stale connection to a member
// that was killed in between.
func put(ctx context.Context, info *lab.Info, key, value string) error {
	cfg, err := info.EtcdCredentials.ClientConfig(info.EtcdEndpoints)
	if err != nil {
		return i18n.Wrap(err, "ui.err.write", key)
	}
	cfg.DialTimeout = 2 * time.Second
	cli, err := clientv3.New(cfg)
	if err != nil {
		return i18n.Wrap(err, "ui.err.write", key)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, key, value); err != nil {
		return i18n.Wrap(err, "ui.err.write", key)
	}
	return nil
}
