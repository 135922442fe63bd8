package etcd_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// A member added with MemberAdd and started with Join catches up — from a
// snapshot, since the others have compacted their logs — and then counts
// towards the quorum; MemberRemove takes it out again.
func TestMemberAddJoinAndRemove(t *testing.T) {
	c := etcdtest.New(t, 3, func(cfg *etcd.Config) {
		cfg.SnapshotCount = 20
		cfg.SnapshotCatchUp = 5
	})
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 60; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("/k%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}

	clientAddr, peerAddr := freeAddr(t), freeAddr(t)
	newPeer := etcd.Peer{Name: "m4", PeerURL: "http://" + peerAddr, ClientURL: "http://" + clientAddr}
	added, err := cli.MemberAdd(ctx, []string{newPeer.PeerURL})
	if err != nil {
		t.Fatalf("member add: %v", err)
	}
	if len(added.Members) != 4 {
		t.Fatalf("member add returned %d members, want 4", len(added.Members))
	}

	cfg := c.Config(0)
	cfg.Name = "m4"
	cfg.DataDir = filepath.Join(c.Dir, "m4")
	cfg.InitialCluster = append(append([]etcd.Peer{}, c.Peers...), newPeer)
	cfg.ClientListen, cfg.PeerListen = clientAddr, peerAddr
	cfg.Join = true
	m4, err := etcd.NewMember(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m4.Start(ctx); err != nil {
		t.Fatalf("start joining member: %v", err)
	}
	defer m4.Kill()
	if m4.ID() != added.Member.ID {
		t.Fatalf("joined member has ID %x, MemberAdd assigned %x", m4.ID(), added.Member.ID)
	}

	// It must catch up with the whole key space.
	m4cli, err := clientv3.New(clientv3.Config{Endpoints: []string{newPeer.ClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer m4cli.Close()
	waitFor(t, 15*time.Second, "the joined member to hold all 60 keys", func() bool {
		resp, err := m4cli.Get(ctx, "/k", clientv3.WithPrefix(), clientv3.WithSerializable(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 60
	})
	if st := m4.Status(); st.SnapshotIndex == 0 {
		t.Errorf("joined member caught up without a snapshot (snapshot index 0); the log was compacted, so it should have needed one")
	}

	// It serves writes like any member, and the cluster lists it.
	if _, err := m4cli.Put(ctx, "/through-m4", "ok"); err != nil {
		t.Fatalf("write through the joined member: %v", err)
	}
	list, err := cli.MemberList(ctx)
	if err != nil || len(list.Members) != 4 {
		t.Fatalf("member list: %v, %v", list, err)
	}
	if _, err := cli.MemberRemove(ctx, added.Member.ID); err != nil {
		t.Fatalf("member remove: %v", err)
	}
	list, err = cli.MemberList(ctx)
	if err != nil || len(list.Members) != 3 {
		t.Fatalf("member list after remove: %v, %v", list, err)
	}
	if _, err := cli.MemberRemove(ctx, added.Member.ID); err == nil {
		t.Fatal("removing a removed member succeeded")
	}
}
