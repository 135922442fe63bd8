package lab

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestSnapshotRestoreBringsDeploymentBack is the CKA task "back up and
// restore etcd" on a real local cluster of three masters and three workers:
// a Deployment is created, a snapshot saved with the Maintenance Snapshot
// RPC, the Deployment deleted, the snapshot restored through the control
// socket as `klab snapshot restore` does. The Deployment is back and its
// pods run; the etcd cluster is a new one (new cluster ID, raft started over
// in a new term); the restore's time is logged for BENCHMARKS.md.
func TestSnapshotRestoreBringsDeploymentBack(t *testing.T) {
	testenv.EndToEnd(t)
	f := startLoopCluster(t, 3, 3, 10)
	ctx, client := f.ctx, f.client
	deploys := client.AppsV1().Deployments("default")
	if _, err := deploys.Create(ctx, deployment("web", 3, "klab/app:v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitRunning("app=web", 3, 90*time.Second)

	path, err := SaveSnapshot(ctx, f.name, "before-delete")
	if err != nil {
		t.Fatalf("SaveSnapshot: %v", err)
	}
	list, err := ListSnapshots(f.name)
	if err != nil || len(list) != 1 || list[0].Path != path || list[0].Name != "before-delete" {
		t.Fatalf("ListSnapshots = %+v, %v; want the one saved at %s", list, err, path)
	}
	before, err := Status(ctx, f.name)
	if err != nil {
		t.Fatal(err)
	}
	oldTerm := leaderTerm(before)

	if err := deploys.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(60*time.Second, "web gone", func() (bool, error) {
		_, err := deploys.Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})

	resolved, err := ResolveSnapshot(f.name, "before-delete")
	if err != nil || resolved != path {
		t.Fatalf("ResolveSnapshot(before-delete) = %q, %v; want %s", resolved, err, path)
	}
	res, err := Restore(ctx, f.name, resolved)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	t.Logf("restore of a 3+3 local cluster took %v (new cluster %s, was %s, term %d, was %d)", res.Elapsed, res.ClusterID, res.OldClusterID, res.Term, oldTerm)
	if res.ClusterID == "" || res.ClusterID == res.OldClusterID {
		t.Errorf("cluster ID after restore = %q, before = %q: want a new cluster", res.ClusterID, res.OldClusterID)
	}
	after, err := Status(ctx, f.name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range after.Members {
		if m.Error != "" {
			t.Errorf("member %s does not answer after the restore: %s", m.Name, m.Error)
		}
		// The new cluster's raft log starts over: index len(members)
		// plus what happened since, far below the old cluster's.
		if old := memberNamed(before, m.Name); m.RaftIndex >= old.RaftIndex {
			t.Errorf("member %s raft index %d after restore, %d before: raft did not start over", m.Name, m.RaftIndex, old.RaftIndex)
		}
	}
	if after.Leader == "" {
		t.Error("no leader after the restore")
	}
	info, err := LoadInfo(f.name)
	if err != nil {
		t.Fatal(err)
	}
	if info.ClusterToken == "klab-"+f.name {
		t.Error("cluster.json still names the old cluster token")
	}

	f.eventually(60*time.Second, "web back", func() (bool, error) {
		_, err := deploys.Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, err
		}
		return err == nil, err
	})
	f.waitRunning("app=web", 3, 2*time.Minute)
	// The restored cluster takes writes and the controllers act on them.
	if _, err := deploys.Create(ctx, deployment("after", 1, "klab/app:v1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after restore: %v", err)
	}
	f.waitRunning("app=after", 1, 90*time.Second)
}

// Bad snapshot files are refused before anything stops, naming the file.
func TestRestoreRefusesMissingAndCorruptSnapshots(t *testing.T) {
	testHome(t)
	dir := t.TempDir()
	_, err := ResolveSnapshot("nolab", filepath.Join(dir, "gone.db"))
	var e *i18n.Error
	if !errors.As(err, &e) || e.Key != "snapshot.err.missing" {
		t.Fatalf("missing file: err = %v, want snapshot.err.missing", err)
	}
	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, []byte("not a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ResolveSnapshot("nolab", bad)
	if !errors.As(err, &e) || e.Key != "snapshot.err.corrupt" {
		t.Fatalf("corrupt file: err = %v, want snapshot.err.corrupt", err)
	}
	for _, l := range []i18n.Lang{i18n.English, i18n.Korean} {
		if msg := e.In(l); !strings.Contains(msg, bad) {
			t.Errorf("%s message %q does not name %s", l, msg, bad)
		}
	}
}
