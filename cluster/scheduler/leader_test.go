package scheduler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
)

func getLease(t *testing.T, cs kubernetes.Interface) *coordinationv1.Lease {
	t.Helper()
	l, err := cs.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func isLeading(s *Scheduler) bool {
	leading, _ := s.leader()
	return leading
}

// TestLeaderElection runs schedulers against one API server: one leads and
// schedules, a killed leader's lease runs out before a standby takes over,
// a stopped leader hands its lease over at once, and a leader whose lease
// is taken stops with "leaderelection lost".
func TestLeaderElection(t *testing.T) {
	c := apiservertest.New(t, apiservertest.Options{})
	cs := c.Client()
	createNode(t, cs, "worker-1", "4", nil)
	a := startScheduler(t, c, "master-1", nil)
	b := startScheduler(t, c, "master-2", nil)

	var leader, standby *Scheduler
	eventually(t, "a leader", func() bool { return isLeading(a) || isLeading(b) })
	leader, standby = a, b
	if isLeading(b) {
		leader, standby = b, a
	}
	if isLeading(standby) {
		t.Fatal("both schedulers lead")
	}
	if got := holder(getLease(t, cs)); got != leader.identity || !strings.Contains(got, "_") {
		t.Fatalf("lease holder %q, want the leader %q (identity_uuid)", got, leader.identity)
	}
	ev := waitForEvent(t, cs, LeaseNamespace, LeaseName, "LeaderElection")
	if want := leader.identity + " became leader"; ev.Note != want {
		t.Errorf("LeaderElection event %q, want %q", ev.Note, want)
	}
	eventually(t, "the standby to see the leader", func() bool {
		_, h := standby.leader()
		return h == leader.identity
	})

	createPod(t, cs, testPod("first", ""))
	waitForPod(t, cs, "default", "first", "bound", bound)
	if len(leader.Decisions("default", "first")) != 1 || len(standby.Decisions("default", "first")) != 0 {
		t.Fatal("the pod was not decided by the leader alone")
	}

	// Kill: the lease stays with the dead leader until it expires.
	leader.Kill()
	if got := holder(getLease(t, cs)); got != leader.identity {
		t.Fatalf("after Kill the lease holder is %q; a killed scheduler must not release it", got)
	}
	if leader.Err() != nil {
		t.Fatalf("Err after Kill = %v, want nil", leader.Err())
	}
	eventually(t, "the standby to take over", func() bool { return isLeading(standby) })
	createPod(t, cs, testPod("second", ""))
	waitForPod(t, cs, "default", "second", "bound", bound)
	if len(standby.Decisions("default", "second")) != 1 {
		t.Fatal("the new leader did not decide the second pod")
	}

	// Stop: the lease is released (an update with no holder) for the next
	// standby to take at once.
	third := startScheduler(t, c, "master-3", nil)
	before := getLease(t, cs)
	w, err := cs.CoordinationV1().Leases(LeaseNamespace).Watch(context.Background(), metav1.ListOptions{
		FieldSelector: "metadata.name=" + LeaseName, ResourceVersion: before.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := standby.Stop(); err != nil {
		t.Fatal(err)
	}
	released := false
	timeout := time.After(waitTimeout)
	for !released {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("lease watch ended")
			}
			if l, isLease := e.Object.(*coordinationv1.Lease); isLease && e.Type == watch.Modified && holder(l) == "" {
				released = true
			}
		case <-timeout:
			t.Fatal("the stopped leader did not release its lease")
		}
	}
	if standby.Err() != nil {
		t.Fatalf("Err after Stop = %v, want nil", standby.Err())
	}
	eventually(t, "the third scheduler to lead", func() bool { return isLeading(third) })

	// Someone else takes the lease: the leader cannot renew it and stops.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l := getLease(t, cs)
		intruder, duration := "intruder", int32(600)
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &intruder, &duration
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err := cs.CoordinationV1().Leases(LeaseNamespace).Update(context.Background(), l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-third.Done():
	case <-time.After(waitTimeout):
		t.Fatal("the leader kept running without its lease")
	}
	if err := third.Err(); err == nil || err.Error() != "leaderelection lost" {
		t.Fatalf("Err = %v, want leaderelection lost", err)
	}
}

func TestLifecycleWithoutAPIServer(t *testing.T) {
	cfg := Config{REST: &rest.Config{Host: "https://127.0.0.1:1"}, Identity: "master-1", Profile: testProfile()}

	t.Run("stop before start", func(t *testing.T) {
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
		<-s.Done()
		if err := s.Start(context.Background()); err == nil {
			t.Fatal("Start after Stop succeeded")
		}
	})
	t.Run("start twice, then kill", func(t *testing.T) {
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s.Addr() == "" {
			t.Fatal("no debug address after Start")
		}
		if err := s.Start(context.Background()); err == nil {
			t.Fatal("second Start succeeded")
		}
		s.Kill()
		<-s.Done()
		if s.Err() != nil {
			t.Fatalf("Err after Kill = %v", s.Err())
		}
	})
	t.Run("bad config", func(t *testing.T) {
		for name, bad := range map[string]Config{
			"no REST":    {Profile: testProfile()},
			"no plugins": {REST: cfg.REST},
			"duplicate":  {REST: cfg.REST, Profile: append(testProfile(), testProfile()...)},
		} {
			if _, err := New(bad); err == nil {
				t.Errorf("%s: New succeeded", name)
			}
		}
	})
	t.Run("debug address in use", func(t *testing.T) {
		first, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := first.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer first.Kill()
		busy := cfg
		busy.DebugListen = first.Addr()
		s, err := New(busy)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "debug listener") {
			t.Fatalf("Start on a busy address: %v", err)
		}
		select {
		case <-s.Done():
		default:
			t.Fatal("Done not closed after a failed Start")
		}
		if errors.Is(s.Err(), errLeaderElectionLost) {
			t.Fatal("a failed start reported a lost lease")
		}
	})
}
