package lab

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime/local"
)

// startingCluster serves the control API of a cluster that has not finished
// starting, which is all the API needs to be exercised without members.
func startingCluster(t *testing.T, name string) *Cluster {
	t.Helper()
	home := testHome(t)
	dir := filepath.Join(home, name)
	os.MkdirAll(dir, 0o700)
	ln, err := listenControl(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(Spec{Name: name}, dir, nil)
	c.rt = local.New(local.Options{Cluster: name, Dir: dir})
	c.ctl = serveControl(ln, c)
	t.Cleanup(c.ctl.close)
	return c
}

func TestControlAPI(t *testing.T) {
	c := startingCluster(t, "demo")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	client, err := Connect(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	st, err := client.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "demo" || st.Phase != PhaseStarting || st.PID != os.Getpid() || st.Runtime != "local" {
		t.Errorf("status = %+v", st)
	}

	// Errors cross the socket rendered in the caller's language, and still
	// match their sentinel.
	defer i18n.SetLang(i18n.Current())
	i18n.SetLang(i18n.Korean)
	_, err = client.Chaos(ctx, ChaosRequest{Op: OpKill, Targets: []string{"leader"}})
	if !errors.Is(err, ErrStarting) {
		t.Fatalf("chaos while starting = %v, want ErrStarting", err)
	}
	if !strings.Contains(err.Error(), "아직 준비되지 않았습니다") {
		t.Errorf("error %q is not in Korean", err)
	}
	i18n.SetLang(i18n.English)

	if err := client.Shutdown(ctx, "down"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.ShutdownRequested():
	case <-ctx.Done():
		t.Fatal("shutdown request did not arrive")
	}
	if c.ShutdownReason() != "down" {
		t.Errorf("reason = %q, want down", c.ShutdownReason())
	}
	c.ctl.close()
	if err := client.WaitStopped(ctx); err != nil {
		t.Fatalf("WaitStopped: %v", err)
	}
	if _, err := Connect(ctx, "demo"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Connect after close = %v, want ErrNotRunning", err)
	}
}

func TestChaosRequestValidation(t *testing.T) {
	c := startingCluster(t, "demo")
	c.phase.Store(PhaseReady)
	c.topo = threeMasters()
	ctx := context.Background()
	tests := []struct {
		name    string
		req     ChaosRequest
		wantKey string
	}{
		{"unknown op", ChaosRequest{Op: "explode", Targets: []string{"etcd-1"}}, "chaos.err.unknown-op"},
		{"no target", ChaosRequest{Op: OpKill}, "chaos.err.no-targets"},
		{"heal with targets", ChaosRequest{Op: OpHeal, Targets: []string{"etcd-1"}}, "chaos.err.heal-args"},
		{"from outside partition", ChaosRequest{Op: OpKill, Targets: []string{"etcd-1"}, From: []string{"etcd-2"}}, "chaos.err.from-only-partition"},
		{"unknown target", ChaosRequest{Op: OpPause, Targets: []string{"etcd-9"}}, "lab.err.unknown-target"},
		{"both sides", ChaosRequest{Op: OpPartition, Targets: []string{"etcd-1"}, From: []string{"master-1"}}, "chaos.err.both-sides"},
		{"nothing left", ChaosRequest{Op: OpPartition, Targets: []string{"master-1", "master-2", "master-3"}}, "chaos.err.nothing-left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Chaos(ctx, tt.req)
			if !errors.Is(err, &i18n.Error{Key: tt.wantKey}) {
				t.Fatalf("Chaos(%+v) = %v, want key %s", tt.req, err, tt.wantKey)
			}
			if statusFor(err) != 400 {
				t.Errorf("statusFor = %d, want 400", statusFor(err))
			}
		})
	}
}
