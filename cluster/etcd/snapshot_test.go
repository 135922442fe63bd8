package etcd_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	clientsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	utlsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// The snapshot a klab member streams is judged by etcd's own tools: it is
// saved the way etcdctl snapshot save saves it, checked and restored with
// etcdutl's snapshot manager (which verifies the trailing SHA-256), and the
// restored data dir is then served by a real etcd server, which must hold
// every key that klab held.
func TestSnapshotRestoresIntoRealEtcd(t *testing.T) {
	c := etcdtest.New(t, 3, nil)
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := map[string]string{}
	for i := 0; i < 50; i++ {
		k, v := fmt.Sprintf("/registry/pods/default/web-%02d", i), fmt.Sprintf("pod %d", i)
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	if _, err := cli.Delete(ctx, "/registry/pods/default/web-00"); err != nil {
		t.Fatal(err)
	}
	delete(want, "/registry/pods/default/web-00")
	rev, err := cli.Get(ctx, "/none")
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	dbPath := filepath.Join(dir, "snap.db")
	cfg := clientv3.Config{Endpoints: c.Endpoints()[:1], DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if _, err := clientsnapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, dbPath); err != nil {
		t.Fatalf("save snapshot as etcdctl does: %v", err)
	}

	mgr := utlsnapshot.NewV3(zap.NewNop())
	st, err := mgr.Status(dbPath)
	if err != nil {
		t.Fatalf("etcdutl snapshot status: %v", err)
	}
	if st.Revision != rev.Header.Revision {
		t.Errorf("snapshot revision = %d, want %d", st.Revision, rev.Header.Revision)
	}

	peerURL := "http://127.0.0.1:0"
	restored := filepath.Join(dir, "restored")
	err = mgr.Restore(utlsnapshot.RestoreConfig{
		SnapshotPath:        dbPath,
		Name:                "restored",
		OutputDataDir:       restored,
		PeerURLs:            []string{peerURL},
		InitialCluster:      "restored=" + peerURL,
		InitialClusterToken: "restored",
	})
	if err != nil {
		t.Fatalf("etcdutl snapshot restore (verifies the SHA-256): %v", err)
	}

	ecfg := embed.NewConfig()
	ecfg.Name = "restored"
	ecfg.Dir = restored
	ecfg.LogLevel = "error"
	u, _ := url.Parse("http://127.0.0.1:0")
	ecfg.ListenClientUrls, ecfg.AdvertiseClientUrls = []url.URL{*u}, []url.URL{*u}
	ecfg.ListenPeerUrls, ecfg.AdvertisePeerUrls = []url.URL{*u}, []url.URL{*u}
	ecfg.InitialCluster = "restored=" + peerURL
	ecfg.InitialClusterToken = "restored"
	e, err := embed.StartEtcd(ecfg)
	if err != nil {
		t.Fatalf("start real etcd on the restored data dir: %v", err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(20 * time.Second):
		t.Fatal("restored etcd did not become ready")
	}
	real, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Clients[0].Addr().String()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	got, err := real.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("read from restored etcd: %v", err)
	}
	if len(got.Kvs) != len(want) {
		t.Fatalf("restored etcd holds %d keys, want %d", len(got.Kvs), len(want))
	}
	for _, kv := range got.Kvs {
		if want[string(kv.Key)] != string(kv.Value) {
			t.Errorf("restored %s = %q, want %q", kv.Key, kv.Value, want[string(kv.Key)])
		}
	}
}
