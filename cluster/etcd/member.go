package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"

	"github.com/klab-dev/klab/cluster/etcd/lease"
	"github.com/klab-dev/klab/cluster/etcd/mvcc"
	"github.com/klab-dev/klab/cluster/etcd/rafthttp"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// ErrStopped is returned to requests that arrive while the member stops.
var ErrStopped = errors.New("etcd member stopped")

// Member is one etcd member: a raft node, its storage, and the etcd v3 gRPC
// API on its client port. Create it with NewMember, run it with Start.
type Member struct {
	cfg       Config
	lg        *slog.Logger
	id        uint64
	clusterID uint64
	self      Peer

	// db is replaced by a defragmentation, which the raft loop runs
	// between two Readies; other goroutines hold dbMu to use it.
	db          *bolt.DB
	dbMu        sync.RWMutex
	defragc     chan chan error
	store       *mvcc.Store
	lessor      *lease.Lessor
	raftStorage *raft.MemoryStorage
	node        raft.Node
	transport   *rafthttp.Transport
	members     *membership
	alarms      *alarmSet
	clock       *raftClock
	events      *eventstream.Hub[Event]
	// requests are the client requests served (/debug/klab/requests).
	requests *eventstream.Hub[RequestEvent]
	wait     *waitList
	reqID    atomic.Uint64

	// Raft progress as the loop last saw it.
	applied     atomic.Uint64
	appliedTerm atomic.Uint64
	snapIndex   atomic.Uint64
	term        atomic.Uint64
	lead        atomic.Uint64
	raftState   atomic.Value // raft.StateType
	// ticksSinceLeader counts ticks since this member last heard from its
	// leader: the election timer the UI draws.
	ticksSinceLeader atomic.Int64
	lastLeaderChange atomic.Int64 // unix nanoseconds

	peersMu sync.Mutex
	peers   map[uint64]string // transport peers: member ID → peer URL

	csMu sync.Mutex
	cs   *raftpb.ConfState

	appliedNotify *notifier // closed and replaced when applied advances
	// persisted is the applied index whose apply transaction has been
	// committed to the database: applied runs ahead of it while results
	// are answered before the commit (see handleReady).
	persisted       atomic.Uint64
	persistedNotify *notifier // closed and replaced when persisted advances
	leaderNotify    *notifier // closed and replaced when the leader changes
	readStatec      chan raft.ReadState
	readNotifier    atomic.Pointer[readNotifier]
	readwaitc       chan struct{}

	gate *gate // closed while running; Pause holds it shut

	// peerHTTP carries the member's own requests to its peers (the
	// cluster ID a joining member asks for, forwarded lease calls) with
	// the peer client certificate; it keeps connections for reuse.
	peerHTTP *http.Client

	grpcServer *grpc.Server
	peerServer *http.Server
	dbgServer  *http.Server
	// metricsServer serves /health in plain HTTP on MetricsListen.
	metricsServer *http.Server
	// clientL, peerL, debugL and metricsL are the listeners, nil when not
	// configured; listeners holds them all for closing.
	clientL, peerL, debugL, metricsL net.Listener
	listeners                        []net.Listener

	life    *componentbase.Lifecycle
	stopc   chan struct{} // closed to make every goroutine return
	wg      sync.WaitGroup
	started atomic.Bool // set once the member serves
}

// NewMember checks the configuration and the data dir (refusing a foreign or
// unreadable one with a message naming the path) but starts nothing.
func NewMember(cfg Config) (*Member, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	self, _ := cfg.self()
	m := &Member{
		cfg:             cfg,
		lg:              cfg.Logger.With("member", cfg.Name),
		peerHTTP:        &http.Client{Transport: &http.Transport{TLSClientConfig: cfg.PeerClientTLS, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}},
		id:              MemberID(self.PeerURL, cfg.ClusterToken),
		clusterID:       ClusterID(cfg.InitialCluster, cfg.ClusterToken),
		self:            self,
		members:         newMembership(),
		alarms:          newAlarmSet(),
		defragc:         make(chan chan error),
		clock:           newRaftClock(cfg.TickInterval),
		events:          newEventHub(),
		requests:        newRequestHub(),
		wait:            newWaitList(),
		appliedNotify:   newNotifier(),
		persistedNotify: newNotifier(),
		leaderNotify:    newNotifier(),
		readStatec:      make(chan raft.ReadState, 1),
		readwaitc:       make(chan struct{}, 1),
		gate:            newGate(),
		stopc:           make(chan struct{}),
	}
	m.life = componentbase.NewLifecycle(m.shutdown)
	m.raftState.Store(raft.StateFollower)
	m.readNotifier.Store(newReadNotifier())
	// Request IDs: the member ID's low 16 bits, then a time-seeded counter,
	// so IDs from different members and restarts do not collide.
	m.reqID.Store(uint64(time.Now().UnixNano()) & (1<<48 - 1))
	if err := checkDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	return m, nil
}

// checkDataDir makes sure the data dir is a directory this process can use.
func checkDataDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create data dir %s: %w", dir, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("data dir %s is unreadable: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("data dir %s is not a directory", dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("data dir %s is unreadable: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("data dir %s is unreadable: %w", dir, err)
	}
	for _, n := range names {
		switch n {
		case dbFileName, "snap", defragFileName:
		default:
			return fmt.Errorf("data dir %s is not a klab etcd data dir: unexpected %q (use an empty directory)", dir, n)
		}
	}
	return nil
}

const dbFileName = "member.db"

func (m *Member) dbPath() string { return filepath.Join(m.cfg.DataDir, dbFileName) }

// Name returns the member's name.
func (m *Member) Name() string { return m.cfg.Name }

// ID returns the member's raft ID.
func (m *Member) ID() uint64 { return m.id }

// ClusterID returns the ID of the cluster the member belongs to.
func (m *Member) ClusterID() uint64 { return m.clusterID }

// ClientURL returns the URL clients use (gRPC).
func (m *Member) ClientURL() string { return m.self.ClientURL }

// PeerURL returns the URL other members use (raft, debug).
func (m *Member) PeerURL() string { return m.self.PeerURL }

// Done is closed when the member has stopped, for whatever reason; Err then
// says why (nil after Stop or Kill).
func (m *Member) Done() <-chan struct{} { return m.life.Done() }

// Err returns the error that stopped the member, if any.
func (m *Member) Err() error { return m.life.Err() }

// fail stops the member because something it cannot recover from happened
// (a failed disk write). The error is kept for Err.
func (m *Member) fail(err error) {
	m.lg.Error("member failed, stopping", "err", err)
	m.life.Fail(err)
}

// Start opens storage, starts listening on the client and peer addresses and
// runs raft. It returns once the member serves; ctx only bounds the start.
func (m *Member) Start(ctx context.Context) (err error) {
	if err := m.life.Begin(); err != nil {
		return fmt.Errorf("start etcd member %s: %w", m.cfg.Name, err)
	}
	defer func() {
		if err != nil {
			m.life.Kill()
		}
	}()
	bs, err := m.openStorage(ctx)
	if err != nil {
		return fmt.Errorf("start etcd member %s: %w", m.cfg.Name, err)
	}
	if err := m.listen(); err != nil {
		return fmt.Errorf("start etcd member %s: %w", m.cfg.Name, err)
	}
	if err := m.startRaft(bs); err != nil {
		return fmt.Errorf("start etcd member %s: %w", m.cfg.Name, err)
	}
	m.serve()
	m.started.Store(true)
	if m.cfg.NoFsync {
		m.lg.Warn("fsync is off: writes are not durable across power loss (demo mode)")
	}
	m.events.Publish(Event{Member: m.cfg.Name, Kind: EventLifecycle, Detail: "started"})
	return nil
}

// Stop shuts the member down gracefully, and returns Err. Safe to call
// more than once.
func (m *Member) Stop() error { return m.life.Stop() }

// Kill stops the member abruptly, as kill -9 would: listeners close and the
// raft loop stops at once. Nothing beyond already committed bbolt
// transactions survives, which is exactly what a crash leaves behind.
func (m *Member) Kill() { m.life.Kill() }

// Pause freezes the member like docker pause: its clock stops, it stops
// handling raft messages and client requests (they wait). Resume undoes it.
func (m *Member) Pause() {
	if m.gate.shut() {
		m.clock.freeze(true)
		m.events.Publish(Event{Member: m.cfg.Name, Kind: EventLifecycle, Detail: "paused"})
	}
}

// Resume lets a paused member run again.
func (m *Member) Resume() {
	if m.gate.open() {
		m.clock.freeze(false)
		m.events.Publish(Event{Member: m.cfg.Name, Kind: EventLifecycle, Detail: "resumed"})
	}
}

// Paused reports whether the member is paused.
func (m *Member) Paused() bool { return m.gate.isShut() }

// shutdown stops the member, gracefully or not (its Lifecycle runs it
// once, also for a member that never started or whose Start failed part
// way).
func (m *Member) shutdown(graceful bool) {
	serving := m.started.Load()
	if serving {
		m.events.Publish(Event{Member: m.cfg.Name, Kind: EventLifecycle, Detail: "stopping"})
	}
	// Closing stopc first ends watch streams and fails waiting proposals
	// with ErrStopped, so that a graceful stop only has to wait for
	// requests already being answered.
	close(m.stopc)
	m.gate.open() // a paused member must be able to stop
	if graceful && serving {
		t := time.AfterFunc(time.Second, m.grpcServer.Stop)
		m.grpcServer.GracefulStop()
		t.Stop()
	}
	m.closeAll()
	m.wg.Wait()
	if m.node != nil {
		m.node.Stop()
	}
	if m.db != nil {
		if err := m.db.Close(); err != nil {
			m.lg.Warn("close db", "err", err)
		}
	}
}

// closeAll closes listeners, servers and the transport.
func (m *Member) closeAll() {
	if m.grpcServer != nil {
		m.grpcServer.Stop()
	}
	if m.peerServer != nil {
		m.peerServer.Close()
	}
	if m.metricsServer != nil {
		m.metricsServer.Close()
	}
	if m.dbgServer != nil {
		m.dbgServer.Close()
	}
	for _, l := range m.listeners {
		l.Close()
	}
	if m.transport != nil {
		m.transport.Stop()
	}
	m.peerHTTP.CloseIdleConnections()
	m.wait.failAll(ErrStopped)
}

func (m *Member) setConfState(cs *raftpb.ConfState) {
	m.csMu.Lock()
	m.cs = cs
	m.csMu.Unlock()
}

func (m *Member) confState() *raftpb.ConfState {
	m.csMu.Lock()
	defer m.csMu.Unlock()
	if m.cs == nil {
		return &raftpb.ConfState{}
	}
	return m.cs
}

func (m *Member) raftStateString() string {
	st, _ := m.raftState.Load().(raft.StateType)
	return st.String()
}
