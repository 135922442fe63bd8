package etcdbench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
	"go.etcd.io/etcd/api/v3/version"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// EmbedCluster is a cluster of real etcd servers started in this process
// with go.etcd.io/etcd/server/v3/embed, each on its own loopback ports.
type EmbedCluster struct {
	dir     string
	token   string
	noFsync bool
	lg      *zap.Logger
	names   []string
	client  []string // client URLs
	peer    []string // peer URLs

	mu      sync.Mutex
	etcds   []*embed.Etcd
	closing sync.WaitGroup // background Close calls of killed members
}

// startTimeout bounds how long a member may take to become ready.
const startTimeout = 20 * time.Second

// StartEmbed starts n real etcd members with the same timings as klab's
// (heartbeat 100 ms, election 1000 ms), data dirs in a fresh temporary
// directory, and waits until they serve clients and agree on a leader.
// noFsync sets UnsafeNoFsync. The logger is at error level: etcd logs a lot.
func StartEmbed(n int, noFsync bool) (*EmbedCluster, error) {
	dir, err := os.MkdirTemp("", "etcdbench-embed-")
	if err != nil {
		return nil, fmt.Errorf("embed cluster: %w", err)
	}
	e := &EmbedCluster{
		dir:     dir,
		token:   "etcdbench-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		noFsync: noFsync,
		lg:      errorLogger(),
		etcds:   make([]*embed.Etcd, n),
	}
	for i := 0; i < n; i++ {
		ca, err := etcdtest.FreeAddr()
		if err != nil {
			e.Close()
			return nil, err
		}
		pa, err := etcdtest.FreeAddr()
		if err != nil {
			e.Close()
			return nil, err
		}
		e.names = append(e.names, fmt.Sprintf("m%d", i+1))
		e.client = append(e.client, "http://"+ca)
		e.peer = append(e.peer, "http://"+pa)
	}
	// Members of a new cluster wait for each other before they are ready,
	// so they must start together.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = e.Restart(i)
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		e.Close()
		return nil, err
	}
	if _, err := WaitLeader(context.Background(), e, startTimeout); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// errorLogger returns a zap logger that only writes errors, to stderr.
func errorLogger() *zap.Logger {
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(zapcore.ErrorLevel)
	cfg.OutputPaths = []string{"stderr"}
	cfg.ErrorOutputPaths = []string{"stderr"}
	cfg.DisableStacktrace = true
	lg, err := cfg.Build(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return quietStop{c} }))
	if err != nil {
		return zap.NewNop()
	}
	return lg
}

// serveFailedMsg is what embed logs, at error level, for every listener
// that stops accepting, including on every ordinary Close. A failure to
// serve while starting also reaches StartEtcd's caller or Etcd.Err, which
// Restart reports, so dropping the message loses nothing.
const serveFailedMsg = "setting up serving from embedded etcd failed."

// quietStop drops serveFailedMsg and passes everything else on.
type quietStop struct{ zapcore.Core }

func (q quietStop) With(fields []zapcore.Field) zapcore.Core { return quietStop{q.Core.With(fields)} }

func (q quietStop) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Message == serveFailedMsg {
		return ce
	}
	return q.Core.Check(e, ce)
}

// config builds member i's embed configuration. A fresh one per start:
// StartEtcd fills in fields of the config it is given.
func (e *EmbedCluster) config(i int) (*embed.Config, error) {
	cfg := embed.NewConfig()
	cfg.Name = e.names[i]
	cfg.Dir = filepath.Join(e.dir, e.names[i])
	cu, err := url.Parse(e.client[i])
	if err != nil {
		return nil, fmt.Errorf("embed member %s: client url: %w", e.names[i], err)
	}
	pu, err := url.Parse(e.peer[i])
	if err != nil {
		return nil, fmt.Errorf("embed member %s: peer url: %w", e.names[i], err)
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	parts := make([]string, len(e.names))
	for j := range e.names {
		parts[j] = e.names[j] + "=" + e.peer[j]
	}
	cfg.InitialCluster = strings.Join(parts, ",")
	cfg.InitialClusterToken = e.token
	// "new" is right on a restart too: a member with a WAL ignores the
	// initial cluster and restarts from its own data.
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.TickMs = 100
	cfg.ElectionMs = 1000
	cfg.UnsafeNoFsync = e.noFsync
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(e.lg.With(zap.String("member", e.names[i])))
	return cfg, nil
}

// System implements Cluster.
func (e *EmbedCluster) System() string { return "etcd v" + version.Version }

// Size implements Cluster.
func (e *EmbedCluster) Size() int { return len(e.names) }

// Endpoint implements Cluster.
func (e *EmbedCluster) Endpoint(i int) string { return e.client[i] }

func (e *EmbedCluster) member(i int) *embed.Etcd {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.etcds[i]
}

// Leader implements Cluster: every running member must report the same
// leader and term, and the leader must be one of the running members.
func (e *EmbedCluster) Leader() int {
	idx := -1
	var lead, term uint64
	first := true
	for i := range e.names {
		m := e.member(i)
		if m == nil {
			continue
		}
		l, t := uint64(m.Server.Leader()), m.Server.Term()
		if l == 0 || (!first && (l != lead || t != term)) {
			return -1
		}
		lead, term, first = l, t, false
		if uint64(m.Server.MemberID()) == l {
			idx = i
		}
	}
	return idx
}

// Kill implements Cluster. Etcd.Close is a graceful stop that first hands
// leadership to a follower, which would make a leader's death look free.
// EtcdServer.HardStop stops the raft loop and the peer transport without
// telling anyone, as a crash would; the listeners are closed straight after,
// and the rest of the cleanup (Etcd.Close) runs in the background so that it
// does not slow down whatever is being measured.
func (e *EmbedCluster) Kill(i int) error {
	e.mu.Lock()
	m := e.etcds[i]
	e.etcds[i] = nil
	e.mu.Unlock()
	if m == nil {
		return nil
	}
	m.Server.HardStop()
	for _, l := range m.Peers {
		l.Close()
	}
	for _, l := range m.Clients {
		l.Close()
	}
	e.closing.Add(1)
	go func() {
		defer e.closing.Done()
		m.Close()
	}()
	return nil
}

// Restart implements Cluster; it also starts members the first time.
func (e *EmbedCluster) Restart(i int) error {
	// The previous incarnation must have let go of its ports and files.
	e.closing.Wait()
	cfg, err := e.config(i)
	if err != nil {
		return err
	}
	m, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start embed member %s: %w", e.names[i], err)
	}
	select {
	case <-m.Server.ReadyNotify():
	case err := <-m.Err():
		m.Close()
		return fmt.Errorf("embed member %s failed while starting: %w", e.names[i], err)
	case <-time.After(startTimeout):
		m.Close()
		return fmt.Errorf("embed member %s not ready within %v", e.names[i], startTimeout)
	}
	e.mu.Lock()
	e.etcds[i] = m
	e.mu.Unlock()
	return nil
}

// Close implements Cluster.
func (e *EmbedCluster) Close() {
	var wg sync.WaitGroup
	for i := range e.etcds {
		e.mu.Lock()
		m := e.etcds[i]
		e.etcds[i] = nil
		e.mu.Unlock()
		if m == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Close()
		}()
	}
	wg.Wait()
	e.closing.Wait()
	_ = e.lg.Sync()
	os.RemoveAll(e.dir)
}
