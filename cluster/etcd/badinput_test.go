package etcd_test

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// TestBadRequests sends malformed requests straight to the gRPC KV service
// (no client-side checks in between) and expects etcd's own errors, with
// their codes and messages, and no change to what is stored.
func TestBadRequests(t *testing.T) {
	c := etcdtest.New(t, 1, fastTicks(10*time.Millisecond))
	cli := c.Client()
	kv := pb.NewKVClient(cli.ActiveConnection())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/kept", "v"); err != nil {
		t.Fatal(err)
	}
	before := status(c, 0)

	put := func(k, v string) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte(v)}}}
	}
	manyPuts := func(n int) []*pb.RequestOp {
		ops := make([]*pb.RequestOp, n)
		for i := range ops {
			ops[i] = put("/many/"+strings.Repeat("x", i+1), "v")
		}
		return ops
	}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"put with empty key", func() error {
			_, err := kv.Put(ctx, &pb.PutRequest{Value: []byte("v")})
			return err
		}, rpctypes.ErrGRPCEmptyKey},
		{"range with empty key", func() error {
			_, err := kv.Range(ctx, &pb.RangeRequest{})
			return err
		}, rpctypes.ErrGRPCEmptyKey},
		{"delete with empty key", func() error {
			_, err := kv.DeleteRange(ctx, &pb.DeleteRangeRequest{})
			return err
		}, rpctypes.ErrGRPCEmptyKey},
		{"put with ignore_value and a value", func() error {
			_, err := kv.Put(ctx, &pb.PutRequest{Key: []byte("/kept"), Value: []byte("v"), IgnoreValue: true})
			return err
		}, rpctypes.ErrGRPCValueProvided},
		{"txn putting one key twice", func() error {
			_, err := kv.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{put("/dup", "1"), put("/dup", "2")}})
			return err
		}, rpctypes.ErrGRPCDuplicateKey},
		{"txn putting a key it deletes", func() error {
			del := &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("/dup/"), RangeEnd: []byte("/dup0")}}}
			_, err := kv.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{put("/dup/a", "1"), del}})
			return err
		}, rpctypes.ErrGRPCDuplicateKey},
		{"txn with too many operations", func() error {
			_, err := kv.Txn(ctx, &pb.TxnRequest{Success: manyPuts(129)})
			return err
		}, rpctypes.ErrGRPCTooManyOps},
		{"range with an unknown sort order", func() error {
			_, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("/kept"), SortOrder: pb.RangeRequest_SortOrder(7)})
			return err
		}, rpctypes.ErrGRPCInvalidSortOption},
		{"range with an unknown sort target", func() error {
			_, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("/kept"), SortTarget: pb.RangeRequest_SortTarget(9)})
			return err
		}, rpctypes.ErrGRPCInvalidSortOption},
		{"request larger than the limit", func() error {
			big := make([]byte, etcd.DefaultMaxRequestBytes+1024)
			_, err := kv.Put(ctx, &pb.PutRequest{Key: []byte("/big"), Value: big})
			return err
		}, rpctypes.ErrGRPCRequestTooLarge},
		{"range at a future revision", func() error {
			_, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("/kept"), Revision: 1 << 40})
			return err
		}, rpctypes.ErrGRPCFutureRev},
		{"compact to a future revision", func() error {
			_, err := kv.Compact(ctx, &pb.CompactionRequest{Revision: 1 << 40})
			return err
		}, rpctypes.ErrGRPCFutureRev},
		{"put with a lease that does not exist", func() error {
			_, err := kv.Put(ctx, &pb.PutRequest{Key: []byte("/leased"), Value: []byte("v"), Lease: 12345})
			return err
		}, rpctypes.ErrGRPCLeaseNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			got, want := grpcstatus.Convert(err), grpcstatus.Convert(tt.want)
			if err == nil || got.Code() != want.Code() || got.Message() != want.Message() {
				t.Errorf("got %v, want %v (code %s)", err, tt.want, want.Code())
			}
		})
	}

	after := status(c, 0)
	if after.Revision != before.Revision {
		t.Errorf("rejected requests changed the store: revision %d → %d", before.Revision, after.Revision)
	}
	resp, err := cli.Get(ctx, "/", clientv3.WithPrefix())
	if err != nil || resp.Count != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Errorf("after the bad requests the store holds %v (err %v), want only /kept=v", resp, err)
	}
}

// soloConfig is a one-member cluster's configuration on fresh ports.
func soloConfig(t *testing.T, dir string) etcd.Config {
	client, peer := freeAddr(t), freeAddr(t)
	return etcd.Config{
		Name:           "solo",
		DataDir:        dir,
		ClusterToken:   "badinput",
		InitialCluster: []etcd.Peer{{Name: "solo", PeerURL: "http://" + peer, ClientURL: "http://" + client}},
		ClientListen:   client,
		PeerListen:     peer,
		TickInterval:   10 * time.Millisecond,
	}
}

// startMember creates and starts a member, stopping it again if it started.
func startMember(cfg etcd.Config) error {
	m, err := etcd.NewMember(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		return err
	}
	m.Kill()
	return nil
}

func fileSum(t *testing.T, path string) [32]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestDataDirRefused starts members on data dirs that are not theirs. Each
// must refuse to start with a message naming the path, and leave the data
// dir as it was.
func TestDataDirRefused(t *testing.T) {
	// A real member of another cluster, stopped, leaves its data dir behind.
	other := etcdtest.New(t, 1, fastTicks(10*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := other.Client().Put(ctx, "/other", "data"); err != nil {
		t.Fatal(err)
	}
	other.Kill(0)
	otherDir := other.Config(0).DataDir

	tests := []struct {
		name string
		// setup returns the config to start with and the path the error
		// must name.
		setup func(t *testing.T) (etcd.Config, string)
		want  string
	}{
		{"directory with other files", func(t *testing.T) (etcd.Config, string) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
				t.Fatal(err)
			}
			return soloConfig(t, dir), dir
		}, "is not a klab etcd data dir"},
		{"a regular file", func(t *testing.T) (etcd.Config, string) {
			path := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			return soloConfig(t, path), path
		}, "is not a directory"},
		{"unreadable directory", func(t *testing.T) (etcd.Config, string) {
			dir := filepath.Join(t.TempDir(), "locked")
			if err := os.Mkdir(dir, 0o000); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o700) })
			if f, err := os.Open(dir); err == nil {
				f.Close()
				t.Skip("this process can read a chmod 000 directory (running as root?), so an unreadable data dir cannot be made")
			}
			return soloConfig(t, dir), dir
		}, "is unreadable"},
		{"garbage database file", func(t *testing.T) (etcd.Config, string) {
			dir := t.TempDir()
			path := filepath.Join(dir, "member.db")
			if err := os.WriteFile(path, []byte(strings.Repeat("not a bbolt file ", 1000)), 0o600); err != nil {
				t.Fatal(err)
			}
			return soloConfig(t, dir), path
		}, "not a usable klab etcd database"},
		{"database of an upstream etcd", func(t *testing.T) (etcd.Config, string) {
			dir := t.TempDir()
			path := filepath.Join(dir, "member.db")
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("key"))
				if err != nil {
					return err
				}
				return b.Put([]byte("rev"), []byte("kv"))
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			return soloConfig(t, dir), path
		}, "klab did not create"},
		{"data dir of another cluster's member", func(t *testing.T) (etcd.Config, string) {
			cfg := soloConfig(t, otherDir)
			return cfg, otherDir
		}, "belongs to member"},
		{"own data dir, but the cluster is another", func(t *testing.T) (etcd.Config, string) {
			cfg := other.Config(0)
			cfg.InitialCluster = append(cfg.InitialCluster, etcd.Peer{Name: "extra", PeerURL: "http://127.0.0.1:1", ClientURL: "http://127.0.0.1:2"})
			return cfg, otherDir
		}, "belongs to cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, path := tt.setup(t)
			db := filepath.Join(otherDir, "member.db")
			sum := fileSum(t, db)
			err := startMember(cfg)
			if err == nil {
				t.Fatalf("member started on %s", cfg.DataDir)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q should name %s and say %q", err, path, tt.want)
			}
			if fileSum(t, db) != sum {
				t.Errorf("refused start changed %s", db)
			}
		})
	}

	// Refusing others did not hurt the rightful owner.
	if err := other.Start(0); err != nil {
		t.Fatalf("restart the owner of %s: %v", otherDir, err)
	}
	resp, err := other.Client().Get(ctx, "/other")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "data" {
		t.Errorf("owner's data after the refusals: %v (err %v), want /other=data", resp, err)
	}
}

// TestStrayMemberRejected replaces a follower with a member of another
// cluster (another ClusterToken) on the very same addresses, as a leftover
// process of an earlier lab would be. Raft messages in both directions carry
// mismatched cluster IDs and are refused before they reach raft: the stray
// never joins, never learns the cluster's leader, and does not disturb it;
// when the real member comes back it rejoins.
func TestStrayMemberRejected(t *testing.T) {
	c := etcdtest.New(t, 3, fastTicks(20*time.Millisecond))
	lead := c.WaitLeader(5 * time.Second)
	leadSt := status(c, lead)
	victim := (lead + 1) % 3
	c.Kill(victim)

	cfg := c.Config(victim)
	cfg.ClusterToken = "stray-" + c.Token
	cfg.DataDir = t.TempDir()
	stray, err := etcd.NewMember(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := stray.Start(ctx); err != nil {
		t.Fatalf("start stray: %v", err)
	}
	defer stray.Kill()
	strayID := stray.Status().ID
	if stray.Status().ClusterID == leadSt.ClusterID {
		t.Fatalf("stray has the cluster's ID %s", leadSt.ClusterID)
	}
	leaderEvents := followEvents(t, c.Peers[lead].PeerURL)
	strayEvents := followEvents(t, stray.PeerURL())

	// Let the stray try to get elected a few times (pre-votes sent to the
	// cluster's addresses) while the cluster heartbeats the stray's
	// address.
	preVotes := 0
	waitEvent(t, strayEvents, 10*time.Second, func(e etcd.Event) bool {
		if e.Kind == etcd.EventRecv {
			t.Errorf("stray stepped a message from %s (%s): the cluster's messages reached its raft", e.Msg.FromName, e.Msg.Type)
		}
		if e.Kind == etcd.EventSend && e.Msg.Type == "MsgPreVote" {
			preVotes++
		}
		return preVotes >= 3*2 // three rounds, to two peers each
	})
	fence := time.Now()
	if _, err := c.Client(c.Peers[lead].ClientURL).Put(ctx, "/after-stray", "x"); err != nil {
		t.Fatalf("the cluster stopped committing with a stray around: %v", err)
	}
	// Everything the leader stepped before the fence is on its stream
	// once an event after the fence arrives.
	var lastSeq uint64
	waitEvent(t, leaderEvents, 10*time.Second, func(e etcd.Event) bool {
		if lastSeq != 0 && e.Seq != lastSeq+1 {
			t.Errorf("leader event stream skipped from %d to %d: the check may have missed messages", lastSeq, e.Seq)
		}
		lastSeq = e.Seq
		if e.Kind == etcd.EventRecv && e.Msg.From == strayID {
			t.Errorf("leader stepped a %s from the stray %s", e.Msg.Type, strayID)
		}
		return e.Time.After(fence)
	})

	st := status(c, lead)
	if st.State != "StateLeader" || st.Term != leadSt.Term {
		t.Errorf("the stray disturbed the leader: %s is %s in term %d, was leader in term %d", st.Name, st.State, st.Term, leadSt.Term)
	}
	if s := stray.Status(); s.Leader != "0" || s.State == "StateLeader" {
		t.Errorf("stray is %s with leader %s, want a follower without leader", s.State, s.Leader)
	}
	ml, err := c.Client(c.Peers[lead].ClientURL).MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ml.Members) != 3 {
		t.Errorf("member list has %d members, want 3", len(ml.Members))
	}
	for _, m := range ml.Members {
		if hexID(m.ID) == strayID {
			t.Errorf("the stray %s is in the cluster's member list", strayID)
		}
	}
	resp, err := c.Client(c.Peers[victim].ClientURL).Get(ctx, "/after-stray", clientv3.WithSerializable())
	if err != nil || len(resp.Kvs) != 0 {
		t.Errorf("stray serves the cluster's data: %v (err %v)", resp, err)
	}

	// The real member comes back to its address and rejoins.
	stray.Kill()
	if err := c.Start(victim); err != nil {
		t.Fatalf("restart %s: %v", c.Peers[victim].Name, err)
	}
	waitConverged(t, c, 10*time.Second)
	if got := memberKVs(t, c, victim, "/after-stray"); got["/after-stray"] != "x" {
		t.Errorf("%s after rejoining: %v, want /after-stray=x", c.Peers[victim].Name, got)
	}
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }
