package etcd

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/klab-dev/klab/cluster/etcd/mvcc"
	"github.com/klab-dev/klab/cluster/etcd/raftlog"
)

// clusterTokenKey records, in the identity bucket of a data dir made by
// RestoreDataDir, the initial-cluster-token the restore was given. A member
// starting on such a data dir takes its member and cluster IDs from it and
// not from its configuration, as etcd ignores --initial-cluster-* once a data
// dir exists: that is how a restored cluster gets a new cluster ID while its
// members are started with the flags they always had.
var clusterTokenKey = []byte("cluster_token")

// Snapshot problems, for callers that explain them to a user.
var (
	// ErrSnapshotMissing: the snapshot file does not exist.
	ErrSnapshotMissing = errors.New("snapshot file not found")
	// ErrSnapshotCorrupt: the file is not a whole snapshot (wrong hash,
	// not a bbolt database, or no key-value state in it).
	ErrSnapshotCorrupt = errors.New("snapshot file is corrupt")
)

// SnapshotError says which snapshot file is wrong and how.
type SnapshotError struct {
	Path   string
	Err    error // ErrSnapshotMissing or ErrSnapshotCorrupt
	Detail string
}

func (e *SnapshotError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", e.Path, e.Err, e.Detail)
}

func (e *SnapshotError) Unwrap() error { return e.Err }

// RestoreConfig describes one member's data dir to restore.
type RestoreConfig struct {
	// Snapshot is the file `etcdctl snapshot save` wrote.
	Snapshot string `json:"snapshot"`
	// Name is the member's name; it must be in InitialCluster.
	Name string `json:"name"`
	// DataDir must not exist yet, or be empty (RestoreDataDir); for
	// RestoreInPlace it is the member's data dir, kept aside.
	DataDir string `json:"dataDir"`
	// ClusterToken and InitialCluster make the new cluster's identity;
	// give a token the old cluster did not use so its ID is new.
	ClusterToken   string `json:"clusterToken"`
	InitialCluster []Peer `json:"initialCluster"`
}

// RestoreResult describes the restored data dir.
type RestoreResult struct {
	MemberID  uint64 `json:"memberID"`
	ClusterID uint64 `json:"clusterID"`
	// Revision is the MVCC revision the snapshot was taken at.
	Revision int64 `json:"revision"`
	// Index is the raft index the new cluster starts from.
	Index uint64 `json:"index"`
}

// BeforeRestoreSuffix names the old data dir RestoreInPlace keeps beside
// the new one (<data-dir>.before-restore).
const BeforeRestoreSuffix = ".before-restore"

// RestoreInPlace replaces a stopped member's data dir with one restored from
// the snapshot (RestoreDataDir), as an operator does by restoring into a new
// directory and pointing the member at it: the old data dir is kept as
// <data-dir>.before-restore (replacing an older one), so that nothing of the
// old cluster is lost until the next restore.
func RestoreInPlace(cfg RestoreConfig) (*RestoreResult, error) {
	if cfg.DataDir == "" {
		return nil, fmt.Errorf("restore member %s: no data dir given", cfg.Name)
	}
	if _, err := VerifySnapshot(cfg.Snapshot); err != nil {
		return nil, err
	}
	old := filepath.Clean(cfg.DataDir) + BeforeRestoreSuffix
	if err := os.RemoveAll(old); err != nil {
		return nil, fmt.Errorf("restore member %s: remove %s: %w", cfg.Name, old, err)
	}
	if err := os.Rename(cfg.DataDir, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("restore member %s: keep the old data dir: %w", cfg.Name, err)
	}
	return RestoreDataDir(cfg)
}

// PendingRestoreSuffix names the file beside a member's data dir that asks
// for a restore when the member next starts (<data-dir>.restore.json, a
// RestoreConfig whose snapshot is a file beside it): how a runtime whose
// members' data is out of its reach hands the restore to the member's own
// process, which runs it before it opens the data dir. The Docker runtime
// does so: the files go onto the member's volume, and the member's
// container restores at its start.
const PendingRestoreSuffix = ".restore.json"

// RestorePending runs the restore asked for beside dataDir, if there is one
// (PendingRestoreSuffix): RestoreInPlace of the config in the file, which
// must name dataDir. The request and its snapshot are removed once the new
// data dir is made. It returns nil without an error when no restore is
// pending.
func RestorePending(dataDir string) (*RestoreResult, error) {
	if dataDir == "" {
		return nil, nil // a member without a data dir keeps nothing
	}
	request := filepath.Clean(dataDir) + PendingRestoreSuffix
	data, err := os.ReadFile(request)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the pending restore %s: %w", request, err)
	}
	var cfg RestoreConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("the pending restore %s: %w", request, err)
	}
	if filepath.Clean(cfg.DataDir) != filepath.Clean(dataDir) {
		return nil, fmt.Errorf("the pending restore %s names data dir %q, not the member's %q", request, cfg.DataDir, dataDir)
	}
	res, err := RestoreInPlace(cfg)
	if err != nil {
		return nil, err
	}
	// The request goes first: without it the restore is done, and a
	// start that follows must not make it again.
	if err := os.Remove(request); err != nil {
		return nil, fmt.Errorf("restore member %s: remove the request %s: %w", cfg.Name, request, err)
	}
	os.Remove(cfg.Snapshot)
	return res, nil
}

// VerifySnapshot checks that path is a snapshot as `etcdctl snapshot save`
// writes it — a bbolt database followed by its SHA-256 — and that the
// database holds a key-value state. It returns the database's size (the file
// without its hash).
func VerifySnapshot(path string) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, &SnapshotError{Path: path, Err: ErrSnapshotMissing}
	}
	if err != nil {
		return 0, &SnapshotError{Path: path, Err: ErrSnapshotMissing, Detail: err.Error()}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, &SnapshotError{Path: path, Err: ErrSnapshotMissing, Detail: err.Error()}
	}
	if fi.IsDir() {
		return 0, &SnapshotError{Path: path, Err: ErrSnapshotCorrupt, Detail: "a directory, not a file"}
	}
	size := fi.Size()
	// A bbolt file is a whole number of pages; etcd's snapshot stream adds
	// the 32-byte hash after it (etcdutl checks the same remainder).
	if size < 512 || size%512 != sha256.Size {
		return 0, &SnapshotError{Path: path, Err: ErrSnapshotCorrupt, Detail: fmt.Sprintf("%d bytes is not a database followed by its SHA-256", size)}
	}
	dbSize := size - sha256.Size
	h := sha256.New()
	if _, err := io.CopyN(h, f, dbSize); err != nil {
		return 0, &SnapshotError{Path: path, Err: ErrSnapshotCorrupt, Detail: err.Error()}
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, want); err != nil {
		return 0, &SnapshotError{Path: path, Err: ErrSnapshotCorrupt, Detail: err.Error()}
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return 0, &SnapshotError{Path: path, Err: ErrSnapshotCorrupt, Detail: "SHA-256 mismatch (the file was cut short or changed)"}
	}
	return dbSize, nil
}

// RestoreDataDir makes a new member data dir from a snapshot, as `etcdutl
// snapshot restore` does: the key-value state (keys, leases, alarms) comes
// from the snapshot; the membership is the new initial cluster; the raft log
// starts over at term 1 with a snapshot at index len(InitialCluster) whose
// configuration has every new member as a voter. Members started on such
// data dirs form a new cluster (new cluster ID) that elects a leader in a new
// term and serves the snapshot's keys at the snapshot's revision.
func RestoreDataDir(cfg RestoreConfig) (*RestoreResult, error) {
	var self *Peer
	for i := range cfg.InitialCluster {
		if cfg.InitialCluster[i].Name == cfg.Name {
			self = &cfg.InitialCluster[i]
		}
	}
	if self == nil {
		return nil, fmt.Errorf("restore member %s: not in the initial cluster", cfg.Name)
	}
	if cfg.ClusterToken == "" {
		return nil, fmt.Errorf("restore member %s: the cluster token is empty", cfg.Name)
	}
	dbSize, err := VerifySnapshot(cfg.Snapshot)
	if err != nil {
		return nil, err
	}
	if names, err := os.ReadDir(cfg.DataDir); err == nil && len(names) > 0 {
		return nil, fmt.Errorf("restore member %s: data dir %s is not empty", cfg.Name, cfg.DataDir)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("restore member %s: create data dir: %w", cfg.Name, err)
	}
	// bbolt opens files, not streams: copy the database part out of the
	// snapshot first.
	tmp := filepath.Join(cfg.DataDir, "snap")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	srcPath := filepath.Join(tmp, "restore.db")
	defer os.RemoveAll(tmp)
	if err := copyPrefix(cfg.Snapshot, srcPath, dbSize); err != nil {
		return nil, fmt.Errorf("restore member %s: %w", cfg.Name, err)
	}
	src, err := bolt.Open(srcPath, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, &SnapshotError{Path: cfg.Snapshot, Err: ErrSnapshotCorrupt, Detail: "not a bbolt database: " + err.Error()}
	}
	defer src.Close()

	ids := make([]uint64, 0, len(cfg.InitialCluster))
	for _, p := range cfg.InitialCluster {
		ids = append(ids, MemberID(p.PeerURL, cfg.ClusterToken))
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	res := &RestoreResult{
		MemberID:  MemberID(self.PeerURL, cfg.ClusterToken),
		ClusterID: ClusterID(cfg.InitialCluster, cfg.ClusterToken),
		Index:     uint64(len(cfg.InitialCluster)),
	}
	dst, err := bolt.Open(filepath.Join(cfg.DataDir, dbFileName), 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("restore member %s: %w", cfg.Name, err)
	}
	err = src.View(func(stx *bolt.Tx) error {
		if stx.Bucket([]byte("key")) == nil || stx.Bucket([]byte("meta")) == nil {
			return &SnapshotError{Path: cfg.Snapshot, Err: ErrSnapshotCorrupt, Detail: "no etcd key-value state in it"}
		}
		return dst.Update(func(tx *bolt.Tx) error {
			for _, name := range kvBuckets {
				if bytes.Equal(name, membersBucket) || bytes.Equal(name, membersRemovedBucket) {
					continue // the old membership does not come back
				}
				b, err := tx.CreateBucketIfNotExists(name)
				if err != nil {
					return err
				}
				if sb := stx.Bucket(name); sb != nil {
					if err := sb.ForEach(func(k, v []byte) error { return b.Put(k, v) }); err != nil {
						return err
					}
				}
			}
			id, err := tx.CreateBucket(identityBucket)
			if err != nil {
				return err
			}
			for k, v := range map[string][]byte{
				string(clusterIDKey): u64(res.ClusterID), string(memberIDKey): u64(res.MemberID),
				string(memberNameKey): []byte(cfg.Name), string(clusterTokenKey): []byte(cfg.ClusterToken),
			} {
				if err := id.Put([]byte(k), v); err != nil {
					return err
				}
			}
			if err := raftlog.CreateBuckets(tx); err != nil {
				return err
			}
			if err := createMembershipBuckets(tx); err != nil {
				return err
			}
			ms := newMembership()
			for _, p := range cfg.InitialCluster {
				if err := ms.put(tx, peerMemberInfo(p, cfg.ClusterToken)); err != nil {
					return err
				}
			}
			// The new cluster's history: as if the members had bootstrapped
			// and committed their own addition, at term 1.
			index, term := res.Index, uint64(1)
			if err := mvcc.WriteConsistentIndex(tx, index, term); err != nil {
				return err
			}
			cs := &raftpb.ConfState{Voters: ids}
			snap := &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: &index, Term: &term, ConfState: cs}}
			if err := raftlog.SaveSnapshot(tx, snap); err != nil {
				return err
			}
			if err := raftlog.SaveConfState(tx, cs); err != nil {
				return err
			}
			return raftlog.Save(tx, &raftpb.HardState{Term: &term, Commit: &index}, nil)
		})
	})
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(filepath.Join(cfg.DataDir, dbFileName))
		var se *SnapshotError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, fmt.Errorf("restore member %s into %s: %w", cfg.Name, cfg.DataDir, err)
	}
	return res, nil
}

// copyPrefix copies the first n bytes of src into a new file dst.
func copyPrefix(src, dst string, n int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(out, in, n); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
