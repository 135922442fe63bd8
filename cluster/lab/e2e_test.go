package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/internal/testenv"
)

// waitFor polls the cluster's status every 30 ms until cond holds: members
// report through their status endpoint only, so there is no event to await.
func waitFor(t *testing.T, name, what string, cond func(*ClusterStatus) bool) *ClusterStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last *ClusterStatus
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := Status(ctx, name)
		cancel()
		if err == nil {
			last = st
			if cond(st) {
				return st
			}
		}
		time.Sleep(30 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; last status: %+v", what, last)
	return nil
}

func leaderTerm(st *ClusterStatus) uint64 {
	for _, m := range st.Members {
		if m.Name == st.Leader {
			return m.Term
		}
	}
	return 0
}

func memberNamed(st *ClusterStatus, name string) MemberStatus {
	for _, m := range st.Members {
		if m.Name == name {
			return m
		}
	}
	return MemberStatus{}
}

func TestClusterEndToEnd(t *testing.T) {
	testenv.EndToEnd(t)
	home := testHome(t)
	suffix := make([]byte, 3)
	rand.Read(suffix)
	name := "e2e-" + hex.EncodeToString(suffix)
	spec := Spec{Name: name, Masters: 3, Speed: 1, Runtime: RuntimeLocal, NoFsync: true}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var done, failed int
	c, err := Up(ctx, spec, Options{Progress: func(ev StepEvent) {
		switch ev.Phase {
		case StepDone:
			done++
		case StepFailed:
			failed++
		}
	}})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close(context.Background(), nil)
		}
	}()
	// nodes, LB node, etcd PKI, etcd, leader, PKI, API servers, LB,
	// kubeconfig, schedulers and controller managers, kubelets,
	// kube-proxies, cluster DNS, nodes Ready, cluster.json.
	if done != 15 || failed != 0 {
		t.Errorf("steps done/failed = %d/%d, want 15/0", done, failed)
	}

	// cluster.json describes the cluster as it runs.
	info, err := LoadInfo(name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != name || info.Runtime != RuntimeLocal || len(info.Members) != 3 || len(info.EtcdEndpoints) != 3 {
		t.Fatalf("cluster.json = %+v", info)
	}
	for i, m := range info.Members {
		if want := fmt.Sprintf("master-%d", i+1); m.Name != want {
			t.Errorf("member %d is %s, want %s", i, m.Name, want)
		}
		if want := fmt.Sprintf("%x", etcd.MemberID(m.PeerURL, info.ClusterToken)); m.ID != want {
			t.Errorf("member %s ID %s, want %s", m.Name, m.ID, want)
		}
		if info.EtcdEndpoints[i] != m.ClientURL {
			t.Errorf("endpoint %d = %s, want %s", i, info.EtcdEndpoints[i], m.ClientURL)
		}
	}
	assertNoTempFiles(t, c.Dir())

	st := waitFor(t, name, "three members agreeing on a leader", func(st *ClusterStatus) bool {
		return st.Running && st.Answering() == 3 && st.Leader != ""
	})
	leaders := 0
	for _, m := range st.Members {
		if m.IsLeader {
			leaders++
		}
	}
	if leaders != 1 {
		t.Errorf("%d members report themselves leader, want 1: %+v", leaders, st.Members)
	}

	client, err := Connect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Chaos(ctx, ChaosRequest{Op: OpKill, Targets: []string{"etcd-9"}}); !errors.Is(err, ErrUnknownTarget) {
		t.Errorf("kill etcd-9 = %v, want ErrUnknownTarget", err)
	}
	if _, err := Up(ctx, spec, Options{}); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Up = %v, want ErrAlreadyRunning", err)
	}

	// Kill the leader: the two others elect a new one in a higher term.
	res, err := client.Chaos(ctx, ChaosRequest{Op: OpKill, Targets: []string{TargetLeader}})
	if err != nil {
		t.Fatalf("kill leader: %v", err)
	}
	if len(res.Targets) != 1 || !res.Targets[0].Leader || res.LeaderTerm == 0 {
		t.Fatalf("kill leader result = %+v", res)
	}
	killed, oldTerm := res.Targets[0].Node, res.LeaderTerm
	st = waitFor(t, name, "a new leader after the kill", func(st *ClusterStatus) bool {
		return st.Leader != "" && st.Leader != killed && leaderTerm(st) > oldTerm
	})
	if m := memberNamed(st, killed); m.State != "killed" || m.Health != HealthUnreachable {
		t.Errorf("killed member shows as %+v", m)
	}

	// Restart it: it comes back as a follower on its data.
	if _, err := client.Chaos(ctx, ChaosRequest{Op: OpRestart, Targets: []string{killed}}); err != nil {
		t.Fatalf("restart %s: %v", killed, err)
	}
	st = waitFor(t, name, "the restarted member following", func(st *ClusterStatus) bool {
		m := memberNamed(st, killed)
		return st.Answering() == 3 && m.State == "follower" && m.Health == HealthHealthy
	})

	// Partition the leader away: the majority elects another, and after the
	// heal the old leader follows the new term.
	isolated, term := st.Leader, leaderTerm(st)
	res, err = client.Chaos(ctx, ChaosRequest{Op: OpPartition, Targets: []string{TargetLeader}})
	if err != nil {
		t.Fatalf("partition leader: %v", err)
	}
	// The other side is every other node: the two masters and the load
	// balancer's node.
	if len(res.Side) != 1 || res.Side[0] != isolated || len(res.From) != 3 {
		t.Errorf("partition result = %+v, want %s against the two other masters and the lb", res, isolated)
	}
	waitFor(t, name, "a leader on the majority side", func(st *ClusterStatus) bool {
		return st.Leader != "" && st.Leader != isolated && leaderTerm(st) > term
	})
	if _, err := client.Chaos(ctx, ChaosRequest{Op: OpHeal}); err != nil {
		t.Fatalf("heal: %v", err)
	}
	st = waitFor(t, name, "the old leader following after the heal", func(st *ClusterStatus) bool {
		if st.Answering() != 3 || st.Leader == "" {
			return false
		}
		for _, m := range st.Members {
			if m.Term != leaderTerm(st) || (m.Name != st.Leader && m.State != "follower") {
				return false
			}
		}
		return true
	})

	// Pause and resume a follower.
	var follower string
	for _, m := range st.Members {
		if !m.IsLeader {
			follower = m.Name
			break
		}
	}
	if _, err := client.Chaos(ctx, ChaosRequest{Op: OpPause, Targets: []string{follower}}); err != nil {
		t.Fatalf("pause %s: %v", follower, err)
	}
	cs, err := client.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ci := range cs.Components {
		if ci.Ref.Node == follower && ci.State != "paused" {
			t.Errorf("%s is %s after pause", ci.Ref, ci.State)
		}
	}
	if _, err := client.Chaos(ctx, ChaosRequest{Op: OpResume, Targets: []string{follower}}); err != nil {
		t.Fatalf("resume %s: %v", follower, err)
	}

	// Stop it as Ctrl-C does: the data stays, and Up starts the same
	// cluster again on it.
	if err := c.Close(ctx, nil); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := Connect(ctx, name); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Connect after Close = %v, want ErrNotRunning", err)
	}
	c, err = Up(ctx, spec, Options{})
	if err != nil {
		t.Fatalf("Up on kept data: %v", err)
	}
	again, err := LoadInfo(name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range info.Members {
		if again.Members[i] != info.Members[i] {
			t.Errorf("member %d changed across restart: %+v, was %+v", i, again.Members[i], info.Members[i])
		}
	}

	// klab down from "another process": the running cluster is asked to
	// stop, and its state dir goes.
	go func() {
		<-c.ShutdownRequested()
		c.Close(context.Background(), nil)
	}()
	closed = true
	res2, err := Down(ctx, name, false, nil)
	if err != nil {
		t.Fatalf("Down: %v", err)
	}
	if !res2.WasRunning || !res2.Removed {
		t.Errorf("Down = %+v, want it to stop and remove the cluster", res2)
	}
	if _, err := os.Stat(filepath.Join(home, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir still there after Down: %v", err)
	}
}
