package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestEtcdSurvivesSIGKILL is the real-crash durability test: three etcd
// members, each its own `klab component etcd` process with fsync on, take
// a write load of single puts and two-key transactions while first one
// member and then all three are killed with SIGKILL: no deferred close, no
// last commit of bbolt's batch, nothing flushed that was not flushed
// already. Restarted on the same data dirs, the cluster must hold every
// write it acknowledged, with the value it acknowledged; a write whose
// answer never came may be there or not, but a transaction is there whole
// or not at all; no key appears that nobody wrote; and the members agree
// on every key and on the revision. The low snapshot count makes the
// members snapshot and compact their logs during the run, so recovery
// reads a snapshot as well as the log.
func TestEtcdSurvivesSIGKILL(t *testing.T) {
	testenv.EndToEnd(t)
	dir := t.TempDir()
	names := []string{"master-1", "master-2", "master-3"}
	var peers []etcd.Peer
	clientAddr := map[string]string{}
	peerAddr := map[string]string{}
	for _, n := range names {
		clientAddr[n], peerAddr[n] = freeAddr(t), freeAddr(t)
		peers = append(peers, etcd.Peer{Name: n, PeerURL: "http://" + peerAddr[n], ClientURL: "http://" + clientAddr[n]})
	}
	spec := func(n string) runtime.EtcdSpec {
		return runtime.EtcdSpec{
			Name: n, DataDir: filepath.Join(dir, n), InitialClusterToken: "crash",
			InitialCluster: peers, ListenClient: clientAddr[n], ListenPeer: peerAddr[n],
			HeartbeatInterval: 50, ElectionTimeout: 500, SnapshotCount: 150,
		}
	}
	members := map[string]*componentProcess{}
	start := func(n string) {
		members[n] = startSpecComponent(t, nil, runtime.ComponentEtcd, n, spec(n))
	}
	waitRunning := func(n string) { members[n].waitLine(t, n+"/etcd running") }
	for _, n := range names {
		start(n)
	}
	for _, n := range names {
		waitRunning(n)
	}

	var endpoints []string
	for _, n := range names {
		endpoints = append(endpoints, clientAddr[n])
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	load := newCrashLoad(cli, 4)
	load.start()
	kill := func(ns ...string) {
		// Each kill is sent before any is waited for: with all three,
		// the members die within microseconds of each other, mid-write.
		for _, n := range ns {
			if err := members[n].cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("SIGKILL %s: %v", n, err)
			}
		}
		for _, n := range ns {
			select {
			case <-members[n].exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s still runs 30 s after SIGKILL", n)
			}
			if code := members[n].cmd.ProcessState.ExitCode(); code != -1 {
				t.Fatalf("%s exited %d after SIGKILL, want killed", n, code)
			}
		}
	}

	// One member dies mid-write and comes back while the others carry on.
	load.waitAcked(t, 150)
	kill("master-2")
	load.waitAcked(t, load.acked()+100)
	start("master-2")
	waitRunning("master-2")
	load.waitAcked(t, load.acked()+150)

	// Then the whole cluster dies at once, mid-write.
	kill(names...)
	load.stop()
	if load.acked() < 400 {
		t.Fatalf("only %d writes acknowledged before the crash; the load did not run", load.acked())
	}
	for _, n := range names {
		start(n)
	}
	for _, n := range names {
		waitRunning(n)
	}

	// Every member must reach the same state: read each member alone,
	// serializably, once the cluster answers a linearizable read.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var latest *clientv3.GetResponse
	for latest == nil {
		ctxRead, cancelRead := context.WithTimeout(ctx, 2*time.Second)
		resp, err := cli.Get(ctxRead, crashPrefix, clientv3.WithPrefix())
		cancelRead()
		if err == nil {
			latest = resp
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the restarted cluster answers no linearizable read: %v", err)
		}
	}
	got := map[string]string{}
	for _, kv := range latest.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	load.verify(t, got)

	for _, n := range names {
		one, err := clientv3.New(clientv3.Config{Endpoints: []string{clientAddr[n]}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		var resp *clientv3.GetResponse
		for {
			resp, err = one.Get(ctx, crashPrefix, clientv3.WithPrefix(), clientv3.WithSerializable())
			if err == nil && resp.Header.Revision >= latest.Header.Revision {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s never reached revision %d: %v", n, latest.Header.Revision, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		one.Close()
		if resp.Header.Revision != latest.Header.Revision {
			t.Errorf("%s is at revision %d, the cluster at %d", n, resp.Header.Revision, latest.Header.Revision)
		}
		if len(resp.Kvs) != len(latest.Kvs) {
			t.Errorf("%s holds %d keys, the cluster %d", n, len(resp.Kvs), len(latest.Kvs))
			continue
		}
		for i, kv := range resp.Kvs {
			if want := latest.Kvs[i]; string(kv.Key) != string(want.Key) || string(kv.Value) != string(want.Value) || kv.ModRevision != want.ModRevision {
				t.Errorf("%s holds %s=%s@%d where the cluster holds %s=%s@%d", n, kv.Key, kv.Value, kv.ModRevision, want.Key, want.Value, want.ModRevision)
			}
		}
	}
	t.Logf("%d writes acknowledged, %d unanswered; %d keys at revision %d after the crash",
		load.acked(), load.uncertain(), len(got), latest.Header.Revision)
}

const crashPrefix = "/crash/"

// crashOp is one write of the load: a put of one key, or a transaction
// putting two keys. Its outcome is acknowledged (the member answered OK),
// or uncertain (an error or no answer: it may have been applied).
type crashOp struct {
	keys  []string
	value string
	acked bool
}

// crashLoad writes from several goroutines, each its own sequence of
// keys, and remembers every attempt.
type crashLoad struct {
	cli     *clientv3.Client
	writers int

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	ops   []crashOp
	count int
	grew  chan struct{}
}

func newCrashLoad(cli *clientv3.Client, writers int) *crashLoad {
	ctx, cancel := context.WithCancel(context.Background())
	return &crashLoad{cli: cli, writers: writers, ctx: ctx, cancel: cancel, grew: make(chan struct{})}
}

func (l *crashLoad) start() {
	for w := 0; w < l.writers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for seq := 0; l.ctx.Err() == nil; seq++ {
				l.write(w, seq)
			}
		}()
	}
}

// write makes writer w's seq-th write and records its outcome; every
// third is a transaction over two keys.
func (l *crashLoad) write(w, seq int) {
	value := fmt.Sprintf("w%d-%d", w, seq)
	op := crashOp{value: value}
	ctx, cancel := context.WithTimeout(l.ctx, time.Second)
	defer cancel()
	var err error
	if seq%3 == 2 {
		a, b := fmt.Sprintf("%stxn/%d/%06d/a", crashPrefix, w, seq), fmt.Sprintf("%stxn/%d/%06d/b", crashPrefix, w, seq)
		op.keys = []string{a, b}
		var resp *clientv3.TxnResponse
		resp, err = l.cli.Txn(ctx).Then(clientv3.OpPut(a, value), clientv3.OpPut(b, value)).Commit()
		if err == nil && !resp.Succeeded {
			err = errors.New("an unconditional transaction did not succeed")
		}
	} else {
		k := fmt.Sprintf("%sput/%d/%06d", crashPrefix, w, seq)
		op.keys = []string{k}
		_, err = l.cli.Put(ctx, k, value)
	}
	op.acked = err == nil
	l.mu.Lock()
	l.ops = append(l.ops, op)
	if op.acked {
		l.count++
		close(l.grew)
		l.grew = make(chan struct{})
	}
	l.mu.Unlock()
	if err != nil && l.ctx.Err() == nil {
		// A member is down or electing: do not spin on its errors.
		time.Sleep(10 * time.Millisecond)
	}
}

func (l *crashLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

func (l *crashLoad) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

func (l *crashLoad) uncertain() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ops) - l.count
}

// waitAcked waits until n writes have been acknowledged.
func (l *crashLoad) waitAcked(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		l.mu.Lock()
		count, grew := l.count, l.grew
		l.mu.Unlock()
		if count >= n {
			return
		}
		select {
		case <-grew:
		case <-timeout:
			t.Fatalf("only %d of %d writes acknowledged in 60 s", count, n)
		}
	}
}

// verify compares what the cluster holds with what was written.
func (l *crashLoad) verify(t *testing.T, got map[string]string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	written := map[string]bool{}
	var lost, torn []string
	for _, op := range l.ops {
		present := 0
		for _, k := range op.keys {
			written[k] = true
			v, ok := got[k]
			if !ok {
				continue
			}
			if v != op.value {
				t.Errorf("%s holds %q, but the only write to it was %q", k, v, op.value)
			}
			present++
		}
		switch {
		case op.acked && present < len(op.keys):
			lost = append(lost, strings.Join(op.keys, "+"))
		case present != 0 && present != len(op.keys):
			torn = append(torn, strings.Join(op.keys, "+"))
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d acknowledged writes are lost after the crash: %s", len(lost), firstFew(lost))
	}
	if len(torn) > 0 {
		t.Errorf("%d transactions are half-applied after the crash: %s", len(torn), firstFew(torn))
	}
	var stray []string
	for k := range got {
		if !written[k] {
			stray = append(stray, k)
		}
	}
	if len(stray) > 0 {
		t.Errorf("keys nobody wrote appeared: %s", firstFew(stray))
	}
}

func firstFew(s []string) string {
	sort.Strings(s)
	if len(s) > 5 {
		return strings.Join(s[:5], ", ") + ", …"
	}
	return strings.Join(s, ", ")
}
