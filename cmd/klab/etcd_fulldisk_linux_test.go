package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/internal/testenv"
)

// limitFileSize lowers the largest file process pid may write, as a disk
// that fills up would: a write or a truncate past it fails with EFBIG (Go
// ignores the SIGXFSZ that comes with it), the same failure a full disk
// gives bbolt when it grows its file.
func limitFileSize(t *testing.T, pid int, limit uint64) {
	t.Helper()
	lim := [2]uint64{limit, limit} // soft, hard
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_FSIZE),
		uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	if errno != 0 {
		t.Skipf("cannot limit the member's file size (prlimit: %v)", errno)
	}
}

// TestEtcdMemberWithAFullDisk runs an etcd member (klab component etcd,
// fsync on) under a write load and takes away its room to grow its
// database. The member must stop with an error that says so, and start
// again on the same data dir with every acknowledged write in place — seen
// by the first linearizable read, although the commit index of the last
// writes never reached the disk.
func TestEtcdMemberWithAFullDisk(t *testing.T) {
	testenv.EndToEnd(t)
	dir := t.TempDir()
	client, peer := freeAddr(t), freeAddr(t)
	spec := runtime.EtcdSpec{
		Name: "master-1", DataDir: filepath.Join(dir, "etcd"), InitialClusterToken: "full",
		InitialCluster: []etcd.Peer{{Name: "master-1", PeerURL: "http://" + peer}},
		ListenClient:   client, ListenPeer: peer,
	}
	member := startSpecComponent(t, nil, runtime.ComponentEtcd, "master-1", spec)
	member.waitLine(t, "master-1/etcd running")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// "running" means the member serves; a lone member still has to elect
	// itself before it takes a write, and a put refused with "no leader"
	// was never acknowledged, so it is not part of this test.
	waitLeader(t, cli, "http://"+client)

	acked := map[string]string{}
	put := func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		k, v := fmt.Sprintf("/k/%05d", i), fmt.Sprintf("%d-%s", i, strings.Repeat("v", 4000))
		_, err := cli.Put(ctx, k, v)
		if err == nil {
			acked[k] = v
		}
		return err
	}
	for i := 0; i < 20; i++ {
		if err := put(i); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(spec.DataDir, "member.db")
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	limitFileSize(t, member.cmd.Process.Pid, uint64(fi.Size()))

	var putErr error
	for i := 20; i < 5000 && putErr == nil; i++ {
		putErr = put(i)
	}
	select {
	case <-member.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("member still runs with a full disk (last put: %v):\n%s", putErr, member.log())
	}
	log := member.log()
	if member.cmd.ProcessState.ExitCode() == 0 || !strings.Contains(log, "is the disk full?") || !strings.Contains(log, "file too large") {
		t.Fatalf("member with a full disk: exit %d, want a failure naming the disk; log:\n%s", member.cmd.ProcessState.ExitCode(), log)
	}
	t.Logf("%d writes acknowledged; the member stopped with: %s", len(acked), lastLines(log, 2))

	// Room again: the same data dir opens, and holds every acknowledged write.
	again := startSpecComponent(t, nil, runtime.ComponentEtcd, "master-1", spec)
	again.waitLine(t, "master-1/etcd running")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/k/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("read after restart: %v\n%s", err, again.log())
	}
	got := map[string]string{}
	for _, kv := range resp.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	for k, v := range acked {
		if got[k] != v {
			t.Errorf("acknowledged %s missing from a linearizable read after the restart (got %d bytes)", k, len(got[k]))
		}
	}
	if _, err := cli.Put(ctx, "/after", "ok"); err != nil {
		t.Errorf("put after restart: %v", err)
	}
}

// waitLeader waits until the member at endpoint knows a leader.
func waitLeader(t *testing.T, cli *clientv3.Client, endpoint string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, endpoint)
		cancel()
		if err == nil && st.Leader != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("member at %s has no leader after 15 s (last status error: %v)", endpoint, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lastLines returns the last n non-empty lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
