package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/timing"
)

// startManager starts a manager on node against the test cluster; it is
// killed when the test ends.
func startManager(t *testing.T, c *apiservertest.Cluster, node string, speed timing.Speed, controllers ...string) *Manager {
	t.Helper()
	if controllers == nil {
		controllers = []string{}
	}
	m, err := New(Config{
		REST:        c.Config(0, auth.KubeControllerManager),
		Identity:    node,
		Speed:       speed,
		Logger:      slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})),
		Controllers: controllers,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Kill)
	return m
}

// waitEvent waits for an event of m's stream (kept or new) that matches.
func waitEvent(t *testing.T, m *Manager, timeout time.Duration, what string, match func(Event) bool) Event {
	t.Helper()
	past, events, cancel := m.events.Subscribe(0)
	defer cancel()
	for _, e := range past {
		if match(e) {
			return e
		}
	}
	deadline := time.After(timeout)
	for {
		select {
		case e := <-events:
			if match(e) {
				return e
			}
		case <-deadline:
			t.Fatalf("%s: no such event within %v", what, timeout)
		}
	}
}

func kind(k string) func(Event) bool { return func(e Event) bool { return e.Kind == k } }

// eventually polls the API server's state: there is nothing else to wait
// on from outside.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func getStatus(t *testing.T, m *Manager) Status {
	t.Helper()
	resp, err := http.Get("http://" + m.Addr() + "/debug/klab/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLeaderElection runs two managers: one leads and runs the
// controllers; when it is killed (without releasing the lease, as
// upstream), the other takes over once the lease expires.
func TestLeaderElection(t *testing.T) {
	c := apiservertest.New(t, apiservertest.Options{})
	client := c.Client()
	const speed = 10 // lease 3 s (timing.MinLeaderLease), renew deadline 2 s, retry 400 ms
	m1 := startManager(t, c, "master-1", speed, "serviceaccount")
	m2 := startManager(t, c, "master-2", speed, "serviceaccount")

	// Whoever wins, both see it.
	first := waitEvent(t, m1, 10*time.Second, "first leader", kind(EventLeader)).Leader
	leader, follower := m1, m2
	if first == m2.Identity() {
		leader, follower = m2, m1
	}
	waitEvent(t, leader, 5*time.Second, "leader starts its controllers", kind(EventStartedLeading))
	waitEvent(t, follower, 5*time.Second, "follower sees the leader", func(e Event) bool { return e.Kind == EventLeader && e.Leader == leader.Identity() })

	lease, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := *lease.Spec.HolderIdentity; got != leader.Identity() {
		t.Errorf("lease holder %q, want %q", got, leader.Identity())
	}
	if got := *lease.Spec.LeaseDurationSeconds; got != 3 {
		t.Errorf("leaseDurationSeconds %d, want 3 (15 s / 10 is under the lab's 3 s floor)", got)
	}

	eventually(t, 5*time.Second, "leader status shows its running controller", func(context.Context) (bool, error) {
		st := getStatus(t, leader)
		return st.Leader && len(st.Controllers) == 1 && st.Controllers[0].Running && st.Controllers[0].QueueDepth != nil && st.Controllers[0].Syncs != nil, nil
	})
	st := getStatus(t, follower)
	if st.Leader || st.Holder != leader.Identity() || st.Controllers[0].Running || st.Node == "" {
		t.Errorf("follower status = %+v, want not leading, holder %s, nothing running", st, leader.Identity())
	}
	resp, err := http.Get("http://" + leader.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz = %s", resp.Status)
	}

	killed := time.Now()
	leader.Kill()
	if err := leader.Err(); err != nil {
		t.Errorf("killed manager Err = %v, want nil", err)
	}
	waitEvent(t, follower, 10*time.Second, "follower takes over", kind(EventStartedLeading))
	if took := time.Since(killed); took < 2*time.Second {
		// The lease was not released: the follower had to wait for it
		// to expire (3 s after the last renewal, at most one 400 ms
		// retry period before the kill).
		t.Errorf("took over after %v: the lease was released early", took)
	}
	lease, err = client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *lease.Spec.HolderIdentity != follower.Identity() || *lease.Spec.LeaseTransitions < 1 {
		t.Errorf("lease after failover: holder %q transitions %d, want %q and at least 1",
			*lease.Spec.HolderIdentity, *lease.Spec.LeaseTransitions, follower.Identity())
	}
}

// TestLostLeaseEndsManager stops the API server under a leader: it cannot
// renew its lease and stops with ErrLeaderElectionLost, as upstream's
// process exits.
func TestLostLeaseEndsManager(t *testing.T) {
	c := apiservertest.New(t, apiservertest.Options{})
	m := startManager(t, c, "master-1", 10)
	waitEvent(t, m, 10*time.Second, "leading", kind(EventStartedLeading))
	c.Stop(0)
	select {
	case <-m.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("manager still running 10 s after its API server stopped")
	}
	if !errors.Is(m.Err(), ErrLeaderElectionLost) {
		t.Errorf("Err = %v, want %v", m.Err(), ErrLeaderElectionLost)
	}
}

// TestServiceAccountController checks that a new namespace gets its
// default ServiceAccount, and gets it back when it is deleted.
func TestServiceAccountController(t *testing.T) {
	c := apiservertest.New(t, apiservertest.Options{})
	client := c.Client()
	m := startManager(t, c, "master-1", 10, "serviceaccount")
	waitEvent(t, m, 10*time.Second, "leading", kind(EventStartedLeading))
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lab"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var uid string
	eventually(t, 10*time.Second, "default service account created", func(ctx context.Context) (bool, error) {
		sa, err := client.CoreV1().ServiceAccounts("lab").Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		uid = string(sa.UID)
		return true, nil
	})
	if err := client.CoreV1().ServiceAccounts("lab").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "default service account recreated", func(ctx context.Context) (bool, error) {
		sa, err := client.CoreV1().ServiceAccounts("lab").Get(ctx, "default", metav1.GetOptions{})
		return err == nil && string(sa.UID) != uid, err
	})

	if err := m.Stop(); err != nil {
		t.Errorf("Stop = %v", err)
	}
	select {
	case <-m.Done():
	default:
		t.Error("Done still open after Stop")
	}
	if _, err := http.Get("http://" + m.Addr() + "/healthz"); err == nil {
		t.Error("debug server still answers after Stop")
	}
}

// TestNamespaceDeletion deletes a namespace with content: the controller
// empties it and finalizes it, and the API server removes it.
func TestNamespaceDeletion(t *testing.T) {
	c := apiservertest.New(t, apiservertest.Options{})
	client := c.Client()
	m := startManager(t, c, "master-1", 50, "namespace", "serviceaccount")
	waitEvent(t, m, 10*time.Second, "leading", kind(EventStartedLeading))
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"a": "b"}}
	if _, err := client.CoreV1().ConfigMaps("doomed").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		ns, _ := client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		var conds []string
		if ns != nil {
			for _, c := range ns.Status.Conditions {
				conds = append(conds, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
			}
			t.Fatalf("namespace still there after 10 s: phase %s, spec.finalizers %v, conditions %v (the controller removes its finalizer through namespaces/finalize)",
				ns.Status.Phase, ns.Spec.Finalizers, conds)
		}
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("doomed").Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("config map after namespace deletion: %v, want not found", err)
	}
}

// readEvents reads /debug/klab/events from the start until last matches.
func readEvents(t *testing.T, m *Manager, last func(Event) bool) []Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.Addr()+"/debug/klab/events?since=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []Event
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
		out = append(out, e)
		if last(e) {
			return out
		}
	}
	t.Fatalf("event stream ended after %d events: %v", len(out), sc.Err())
	return nil
}

func ptr[T any](v T) *T { return &v }
