package etcd

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/klab-dev/klab/cluster/etcd/lease"
	"github.com/klab-dev/klab/cluster/etcd/mvcc"
	"github.com/klab-dev/klab/cluster/etcd/raftlog"
)

// identityBucket records whose data this is, so that a member never starts on
// another member's or another cluster's data.
var (
	identityBucket = []byte("klab_member")
	clusterIDKey   = []byte("cluster_id")
	memberIDKey    = []byte("member_id")
	memberNameKey  = []byte("name")
)

// bootState is what openStorage found on disk.
type bootState struct {
	raft    *raftlog.State
	applied uint64
	fresh   bool
}

func (m *Member) openStorage(ctx context.Context) (*bootState, error) {
	path := m.dbPath()
	// A defragmentation that did not finish left its copy behind; the
	// original is whole (the copy replaces it only once complete).
	os.Remove(m.defragPath())
	db, err := bolt.Open(path, 0o600, m.boltOptions())
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return nil, fmt.Errorf("data dir %s is in use by another process", m.cfg.DataDir)
	case err != nil:
		return nil, fmt.Errorf("open %s: not a usable klab etcd database: %w", path, err)
	}
	m.db = db
	bs := &bootState{}
	err = db.Update(func(tx *bolt.Tx) error {
		fresh := tx.Bucket(identityBucket) == nil
		if fresh && tx.Bucket([]byte("key")) != nil {
			return fmt.Errorf("%s holds an etcd database that klab did not create; refusing to start on it", path)
		}
		if err := m.checkIdentity(ctx, tx, fresh); err != nil {
			return err
		}
		if err := raftlog.CreateBuckets(tx); err != nil {
			return err
		}
		if err := createMembershipBuckets(tx); err != nil {
			return err
		}
		m.lessor = lease.NewLessor(m.minLeaseTTL(), m.lg)
		if err := m.lessor.Open(tx); err != nil {
			return fmt.Errorf("open leases: %w", err)
		}
		store, err := mvcc.Open(tx, m.lg)
		if err != nil {
			return fmt.Errorf("open key-value store: %w", err)
		}
		m.store = store
		m.store.SetLessor(m.lessor)
		if err := m.members.load(tx); err != nil {
			return err
		}
		if err := m.alarms.load(tx); err != nil {
			return fmt.Errorf("load alarms: %w", err)
		}
		st, err := raftlog.Load(tx)
		if err != nil {
			return fmt.Errorf("load raft log from %s: %w", path, err)
		}
		bs.raft = st
		bs.fresh = st.Empty()
		bs.applied, _ = mvcc.ReadConsistentIndex(tx)
		return nil
	})
	if err != nil {
		db.Close()
		m.db = nil
		return nil, err
	}
	return bs, nil
}

// boltOptions are the options member.db is opened with.
func (m *Member) boltOptions() *bolt.Options {
	return &bolt.Options{
		Timeout:        time.Second,
		NoSync:         m.cfg.NoFsync,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	}
}

// checkIdentity compares the identity stored in the data dir with this
// member's, or records it in a fresh data dir.
func (m *Member) checkIdentity(ctx context.Context, tx *bolt.Tx, fresh bool) error {
	if fresh {
		if m.cfg.Join {
			id, err := m.fetchClusterID(ctx)
			if err != nil {
				return err
			}
			m.clusterID = id
		}
		b, err := tx.CreateBucket(identityBucket)
		if err != nil {
			return err
		}
		if err := b.Put(clusterIDKey, u64(m.clusterID)); err != nil {
			return err
		}
		if err := b.Put(memberIDKey, u64(m.id)); err != nil {
			return err
		}
		return b.Put(memberNameKey, []byte(m.cfg.Name))
	}
	b := tx.Bucket(identityBucket)
	if tok := b.Get(clusterTokenKey); tok != nil && string(tok) != m.cfg.ClusterToken {
		// A data dir restored from a snapshot belongs to the new cluster
		// the restore made: like etcd, which ignores --initial-cluster-token
		// once a data dir exists, take the identity from the data dir.
		m.cfg.ClusterToken = string(tok)
		m.id = MemberID(m.self.PeerURL, m.cfg.ClusterToken)
		m.clusterID = ClusterID(m.cfg.InitialCluster, m.cfg.ClusterToken)
	}
	cid, mid := b.Get(clusterIDKey), b.Get(memberIDKey)
	if len(cid) != 8 || len(mid) != 8 {
		return fmt.Errorf("data dir %s: identity record is damaged", m.cfg.DataDir)
	}
	storedCluster, storedMember := binary.BigEndian.Uint64(cid), binary.BigEndian.Uint64(mid)
	if storedMember != m.id {
		return fmt.Errorf("data dir %s belongs to member %s (%x), not to %s (%x)", m.cfg.DataDir, b.Get(memberNameKey), storedMember, m.cfg.Name, m.id)
	}
	if storedCluster != m.clusterID && !m.cfg.Join {
		return fmt.Errorf("data dir %s belongs to cluster %x, not to cluster %x", m.cfg.DataDir, storedCluster, m.clusterID)
	}
	m.clusterID = storedCluster
	return nil
}

// fetchClusterID asks the existing members which cluster a joining member is
// joining.
func (m *Member) fetchClusterID(ctx context.Context) (uint64, error) {
	var errs []error
	for _, p := range m.cfg.InitialCluster {
		if p.Name == m.cfg.Name {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.PeerURL+"/klab/cluster", nil)
		if err != nil {
			return 0, err
		}
		resp, err := m.peerHTTP.Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var ci clusterInfo
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ci)
		resp.Body.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.PeerURL, err))
			continue
		}
		id, err := strconv.ParseUint(ci.ClusterID, 16, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: bad cluster id %q", p.PeerURL, ci.ClusterID))
			continue
		}
		return id, nil
	}
	return 0, fmt.Errorf("join: no existing member answered: %w", errors.Join(errs...))
}

// clusterInfo is what GET /klab/cluster on the peer port returns.
type clusterInfo struct {
	ClusterID string `json:"clusterID"`
	MemberID  string `json:"memberID"`
}

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// minLeaseTTL is etcd's minimum lease TTL: long enough to survive a leader
// election (1.5 election timeouts, rounded up to a second).
func (m *Member) minLeaseTTL() int64 {
	d := time.Duration(m.cfg.ElectionTicks) * m.cfg.TickInterval * 3 / 2
	return int64((d + time.Second - 1) / time.Second)
}

// electionTimeout is the configured (not randomised) election timeout.
func (m *Member) electionTimeout() time.Duration {
	return time.Duration(m.cfg.ElectionTicks) * m.cfg.TickInterval
}

// requestTimeout bounds one proposal, as etcd's ReqTimeout does.
func (m *Member) requestTimeout() time.Duration {
	return 5*time.Second + 2*m.electionTimeout()
}
