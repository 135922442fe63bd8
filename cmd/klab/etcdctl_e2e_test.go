package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestRealEtcdctlSession drives the real etcdctl (through klab etcdctl, each
// command in a process of its own, as from a shell) through everything a
// student does with it in the etcd lessons, against a 3-member cluster.
func TestRealEtcdctlSession(t *testing.T) {
	testenv.EndToEnd(t)
	testHome(t)
	t.Setenv("ETCDCTL_ENDPOINTS", "")
	i18n.SetLang(i18n.English)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := lab.Up(ctx, lab.Spec{Name: "ctl", Masters: 3, Speed: 1, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background(), nil)
	t.Setenv("KLAB_CLUSTER", "ctl")

	run := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := klabProcess(t, append([]string{"etcdctl"}, args...)...)
		if code != 0 {
			t.Fatalf("etcdctl %s exited %d: %s %s", strings.Join(args, " "), code, stdout, stderr)
		}
		return stdout
	}
	fail := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := klabProcess(t, append([]string{"etcdctl"}, args...)...)
		if code == 0 {
			t.Fatalf("etcdctl %s succeeded, want a failure: %s", strings.Join(args, " "), stdout)
		}
		return stdout + stderr
	}

	// put / get / del, and the /registry listing.
	run("put", "/registry/namespaces/default", "ns")
	run("put", "/registry/pods/default/web", "pod")
	if out := run("get", "/", "--prefix", "--keys-only"); !strings.Contains(out, "/registry/namespaces/default") || !strings.Contains(out, "/registry/pods/default/web") {
		t.Errorf("get / --prefix --keys-only:\n%s", out)
	}
	if out := run("del", "/registry/pods/default/web"); strings.TrimSpace(out) != "1" {
		t.Errorf("del printed %q, want 1", out)
	}
	if out := run("get", "/registry/pods/default/web"); strings.TrimSpace(out) != "" {
		t.Errorf("deleted key still readable: %q", out)
	}

	// member list and endpoint status: one leader, one term everywhere.
	if out := run("member", "list"); strings.Count(out, "started") != 3 {
		t.Errorf("member list:\n%s", out)
	}
	var statuses []struct {
		Endpoint string `json:"Endpoint"`
		Status   struct {
			Header struct {
				MemberID uint64 `json:"member_id"`
			} `json:"header"`
			Leader   uint64 `json:"leader"`
			RaftTerm uint64 `json:"raftTerm"`
		} `json:"Status"`
	}
	if err := json.Unmarshal([]byte(run("endpoint", "status", "-w", "json")), &statuses); err != nil {
		t.Fatal(err)
	}
	leaders, leaderEndpoint := map[uint64]bool{}, ""
	var followerID uint64
	for _, s := range statuses {
		leaders[s.Status.Leader] = true
		if s.Status.RaftTerm != statuses[0].Status.RaftTerm {
			t.Errorf("terms differ: %+v", statuses)
		}
		if s.Status.Header.MemberID == s.Status.Leader {
			leaderEndpoint = s.Endpoint
		} else {
			followerID = s.Status.Header.MemberID
		}
	}
	if len(statuses) != 3 || len(leaders) != 1 || leaderEndpoint == "" {
		t.Fatalf("endpoint status: want 3 members agreeing on one leader: %+v", statuses)
	}
	if out := run("endpoint", "health"); strings.Count(out, "is healthy") != 3 {
		t.Errorf("endpoint health:\n%s", out)
	}

	// A lease with a key attached: keep-alive, then revoke deletes the key.
	grant := run("lease", "grant", "60")
	fields := strings.Fields(grant) // lease <id> granted with TTL(60s)
	if len(fields) < 2 {
		t.Fatalf("lease grant printed %q", grant)
	}
	id := fields[1]
	run("put", "/leased", "v", "--lease="+id)
	if out := run("lease", "keep-alive", "--once", id); !strings.Contains(out, "keepalived with TTL(60)") {
		t.Errorf("lease keep-alive --once: %q", out)
	}
	if out := run("lease", "timetolive", id, "--keys"); !strings.Contains(out, "/leased") {
		t.Errorf("lease timetolive --keys: %q", out)
	}
	run("lease", "revoke", id)
	if out := run("get", "/leased"); strings.TrimSpace(out) != "" {
		t.Errorf("key of a revoked lease still there: %q", out)
	}

	// snapshot save: etcdctl itself checks the trailing SHA-256.
	snap := filepath.Join(t.TempDir(), "snap.db")
	run("snapshot", "save", snap)

	// move-leader, asked of the leader.
	target := strconv.FormatUint(followerID, 16)
	if out := run("--endpoints", leaderEndpoint, "move-leader", target); !strings.Contains(out, "Leadership transferred") {
		t.Errorf("move-leader: %q", out)
	}

	// watch: a running watch sees a put; after a compaction, a watch from a
	// compacted revision fails with the compacted error.
	watch := exec.Command(os.Args[0], "etcdctl", "watch", "/w")
	watch.Env = append(os.Environ(), "KLAB_TEST_MAIN=1")
	out, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer watch.Process.Kill()
	seen := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		var got strings.Builder
		for {
			n, err := out.Read(buf)
			got.Write(buf[:n])
			if strings.Contains(got.String(), "watched-value") || err != nil {
				seen <- got.String()
				return
			}
		}
	}()
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var watched string
	for watched == "" {
		select {
		case s := <-seen:
			watched = s
		case <-tick.C:
			// The watch may not be registered yet: keep writing until it
			// reports one.
			run("put", "/w", "watched-value")
		case <-deadline:
			t.Fatal("etcdctl watch saw no put")
		}
	}
	if !strings.Contains(watched, "PUT") || !strings.Contains(watched, "/w") {
		t.Errorf("watch printed %q", watched)
	}
	var rev struct {
		Header struct {
			Revision int64 `json:"revision"`
		} `json:"header"`
	}
	if err := json.Unmarshal([]byte(run("get", "/w", "-w", "json")), &rev); err != nil {
		t.Fatal(err)
	}
	run("compaction", strconv.FormatInt(rev.Header.Revision, 10))
	if msg := fail("watch", "/w", "--rev", "2"); !strings.Contains(msg, "required revision has been compacted") {
		t.Errorf("watch from a compacted revision: %q", msg)
	}
}
