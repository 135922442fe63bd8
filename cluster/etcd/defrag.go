package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// defragFileName is the copy a defragmentation writes before it replaces
// member.db.
const defragFileName = dbFileName + ".defrag"

func (m *Member) defragPath() string { return filepath.Join(m.cfg.DataDir, defragFileName) }

// errDefragLostDB means a defragmentation closed the database and could
// not open it again: the member cannot go on.
var errDefragLostDB = errors.New("defragment: database could not be reopened")

// Defragment rewrites the member's database compactly, as etcd's
// defragmentation does: pages freed by compaction (and by raft log
// compaction) go back to the file system, and the database size that the
// space quota counts falls to what is in use. It runs in the raft loop,
// between two Readies, so that nothing writes meanwhile; the member
// answers no raft message and applies nothing until it is done.
func (m *Member) Defragment(ctx context.Context) error {
	done := make(chan error, 1)
	select {
	case m.defragc <- done:
	case <-ctx.Done():
		return contextError(ctx.Err())
	case <-m.stopc:
		return ErrStopped
	}
	select {
	case err := <-done:
		return err
	case <-m.stopc:
		return ErrStopped
	}
}

// defragment copies the live pages of member.db into a new file, then puts
// that file in its place. Until the rename the original is untouched, so a
// crash at any point leaves a whole database (openStorage removes a copy
// left behind).
func (m *Member) defragment() error {
	start := time.Now()
	before := m.dbSize()
	tmp := m.defragPath()
	os.Remove(tmp)
	opts := *m.boltOptions()
	opts.NoSync = true // synced once, below
	dst, err := bolt.Open(tmp, 0o600, &opts)
	if err != nil {
		return fmt.Errorf("defragment: create %s: %w", tmp, err)
	}
	m.dbMu.Lock()
	defer m.dbMu.Unlock()
	err = bolt.Compact(dst, m.db, 0)
	if err == nil && !m.cfg.NoFsync {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("defragment %s (is the disk full?): %w", m.dbPath(), err)
	}
	if err := m.db.Close(); err != nil {
		m.lg.Warn("defragment: close db", "err", err)
	}
	renameErr := os.Rename(tmp, m.dbPath())
	if renameErr == nil && !m.cfg.NoFsync {
		renameErr = syncDir(m.cfg.DataDir)
	}
	db, err := bolt.Open(m.dbPath(), 0o600, m.boltOptions())
	if err != nil {
		m.db = nil
		return fmt.Errorf("%w: %s: %v", errDefragLostDB, m.dbPath(), err)
	}
	m.db = db
	if renameErr != nil {
		os.Remove(tmp)
		return fmt.Errorf("defragment: replace %s: %w", m.dbPath(), renameErr)
	}
	after := int64(0)
	_ = db.View(func(tx *bolt.Tx) error { after = tx.Size(); return nil })
	m.lg.Info("defragmented", "before", before, "after", after, "took", time.Since(start))
	m.events.Publish(Event{Member: m.cfg.Name, Kind: EventLifecycle,
		Detail: fmt.Sprintf("defragmented: database %d → %d bytes", before, after)})
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
