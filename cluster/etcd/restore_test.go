package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	clientsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// A snapshot saved the way etcdctl saves it, restored into a fresh data dir
// for every member, brings back the keys of that moment in a new cluster:
// new cluster ID, raft started over, members started with their old flags.
func TestRestoreDataDirMakesNewClusterWithSnapshotKeys(t *testing.T) {
	c := etcdtest.New(t, 3, nil)
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 20; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("/registry/deployments/default/web-%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	snap := filepath.Join(t.TempDir(), "snap.db")
	cfg := clientv3.Config{Endpoints: c.Endpoints()[:1], DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	// A snapshot is the one member's state: a follower may not have
	// applied the last put yet. A linearizable read through it waits
	// until it has, as an operator's check before saving would.
	cli0, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli0.Get(ctx, "/registry/deployments/default/web-19"); err != nil {
		t.Fatal(err)
	}
	cli0.Close()
	if _, err := clientsnapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, snap); err != nil {
		t.Fatalf("save snapshot: %v", err)
	}
	// Written after the snapshot: must not survive the restore.
	if _, err := cli.Put(ctx, "/registry/deployments/default/later", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, "/registry/deployments/default/web-00"); err != nil {
		t.Fatal(err)
	}
	oldCluster := c.Member(c.Leader()).ClusterID()
	c.Close()

	token := c.Token + "-restored"
	for i, p := range c.Peers {
		dir := c.Config(i).DataDir
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		res, err := etcd.RestoreDataDir(etcd.RestoreConfig{Snapshot: snap, Name: p.Name, DataDir: dir, ClusterToken: token, InitialCluster: c.Peers})
		if err != nil {
			t.Fatalf("restore %s: %v", p.Name, err)
		}
		if res.ClusterID == oldCluster {
			t.Fatalf("restored cluster ID %x is the old one", res.ClusterID)
		}
	}
	for i := range c.Peers {
		if err := c.Start(i); err != nil { // the old config: old token
			t.Fatalf("start restored member %d: %v", i, err)
		}
	}
	defer c.Close()
	l := c.WaitLeader(20 * time.Second)
	if l < 0 {
		t.Fatal("restored members elected no leader")
	}
	m := c.Member(l)
	if m.ClusterID() == oldCluster {
		t.Errorf("cluster ID after restore = %x, the old cluster's", m.ClusterID())
	}
	st := m.Status()
	if st.Term > 5 {
		t.Errorf("term after restore = %d, want a new cluster's low term", st.Term)
	}
	cli2 := c.Client()
	got, err := cli2.Get(ctx, "/registry/deployments/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatalf("read restored cluster: %v", err)
	}
	if len(got.Kvs) != 20 {
		t.Errorf("restored cluster holds %d keys, want the 20 of the snapshot", len(got.Kvs))
	}
	for _, kv := range got.Kvs {
		if string(kv.Key) == "/registry/deployments/default/later" {
			t.Error("a key written after the snapshot survived the restore")
		}
	}
	if _, err := cli2.Put(ctx, "/registry/after-restore", "v"); err != nil {
		t.Errorf("write to restored cluster: %v", err)
	}
	ml, err := cli2.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ml.Members) != 3 {
		t.Errorf("restored cluster has %d members, want 3", len(ml.Members))
	}
}

func TestVerifySnapshotNamesMissingAndCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.db")
	if _, err := etcd.VerifySnapshot(missing); !errors.Is(err, etcd.ErrSnapshotMissing) {
		t.Errorf("missing file: err = %v, want ErrSnapshotMissing", err)
	}
	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, make([]byte, 4096+32), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := etcd.VerifySnapshot(bad)
	if !errors.Is(err, etcd.ErrSnapshotCorrupt) {
		t.Fatalf("zeroed file: err = %v, want ErrSnapshotCorrupt", err)
	}
	var se *etcd.SnapshotError
	if !errors.As(err, &se) || se.Path != bad {
		t.Errorf("error %v does not name %s", err, bad)
	}
	short := filepath.Join(dir, "short.db")
	if err := os.WriteFile(short, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := etcd.VerifySnapshot(short); !errors.Is(err, etcd.ErrSnapshotCorrupt) {
		t.Errorf("short file: err = %v, want ErrSnapshotCorrupt", err)
	}
}
