package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// A restore left beside a stopped member's data dir (what the Docker runtime
// copies onto a member's volume) is made by RestorePending before the member
// opens its data: the member starts in the new cluster with the snapshot's
// keys, the request and its snapshot are gone, the old data dir is kept, and
// a second call finds nothing to do.
func TestRestorePendingRestoresBeforeTheMemberStarts(t *testing.T) {
	c := etcdtest.New(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Client().Put(ctx, "/registry/pods/default/kept", "v"); err != nil {
		t.Fatal(err)
	}
	dataDir := c.Config(0).DataDir
	snap := dataDir + ".restore.db"
	cfg := clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if _, err := clientsnapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, snap); err != nil {
		t.Fatalf("save snapshot: %v", err)
	}
	if _, err := c.Client().Put(ctx, "/registry/pods/default/later", "v"); err != nil {
		t.Fatal(err)
	}
	oldCluster := c.Member(0).ClusterID()
	c.Close()

	if res, err := etcd.RestorePending(dataDir); err != nil || res != nil {
		t.Fatalf("RestorePending with no request = %v, %v; want nothing done", res, err)
	}
	req := dataDir + etcd.PendingRestoreSuffix
	// A request for another data dir is refused, naming both.
	bad := fmt.Sprintf(`{"snapshot":%q,"name":%q,"dataDir":"/elsewhere","clusterToken":"t2","initialCluster":[{"name":%q,"peerURL":%q}]}`, snap, c.Peers[0].Name, c.Peers[0].Name, c.Peers[0].PeerURL)
	if err := os.WriteFile(req, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := etcd.RestorePending(dataDir); err == nil || !strings.Contains(err.Error(), "/elsewhere") {
		t.Fatalf("RestorePending of a request for another data dir: %v", err)
	}
	good := fmt.Sprintf(`{"snapshot":%q,"name":%q,"dataDir":%q,"clusterToken":"t2","initialCluster":[{"name":%q,"peerURL":%q}]}`, snap, c.Peers[0].Name, dataDir, c.Peers[0].Name, c.Peers[0].PeerURL)
	if err := os.WriteFile(req, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := etcd.RestorePending(dataDir)
	if err != nil || res == nil {
		t.Fatalf("RestorePending = %v, %v", res, err)
	}
	if res.ClusterID == oldCluster {
		t.Errorf("restored cluster ID %x is the old one", res.ClusterID)
	}
	for _, gone := range []string{req, snap} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after the restore (%v)", gone, err)
		}
	}
	if _, err := os.Stat(dataDir + etcd.BeforeRestoreSuffix); err != nil {
		t.Errorf("the old data dir is not kept: %v", err)
	}
	if res, err := etcd.RestorePending(dataDir); err != nil || res != nil {
		t.Fatalf("a second RestorePending = %v, %v; want nothing done", res, err)
	}
	if err := c.Start(0); err != nil {
		t.Fatalf("start the restored member: %v", err)
	}
	if c.WaitLeader(20*time.Second) < 0 {
		t.Fatal("the restored member elected no leader")
	}
	if got := c.Member(0).ClusterID(); got != res.ClusterID {
		t.Errorf("member's cluster ID = %x, want the restore's %x", got, res.ClusterID)
	}
	got, err := c.Client().Get(ctx, "/registry/pods/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 1 || string(got.Kvs[0].Key) != "/registry/pods/default/kept" {
		t.Errorf("restored keys = %v, want only the snapshot's /registry/pods/default/kept", got.Kvs)
	}
}
