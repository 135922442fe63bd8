package lab

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
)

func threeMasters() []nodeComponents {
	return topologyOf([]runtime.Ref{
		{Node: "master-1", Component: "etcd"},
		{Node: "master-2", Component: "etcd"},
		{Node: "master-3", Component: "etcd"},
	})
}

// threeFullMasters also runs a scheduler on every master, and a worker.
func threeFullMasters() []nodeComponents {
	var refs []runtime.Ref
	for _, m := range []string{"master-1", "master-2", "master-3"} {
		refs = append(refs, runtime.Ref{Node: m, Component: "etcd"}, runtime.Ref{Node: m, Component: "kube-scheduler"})
	}
	return topologyOf(append(refs, runtime.Ref{Node: "worker-1", Component: "kubelet"}))
}

func TestResolveTarget(t *testing.T) {
	topo := threeMasters()
	leaderIs := func(node string) func(string) (string, error) {
		return func(c string) (string, error) {
			if c != "etcd" {
				t.Errorf("asked for the leading %s, want etcd", c)
			}
			return node, nil
		}
	}
	noLeader := func(string) (string, error) { return "", i18n.NewError("lab.err.no-leader", "demo") }
	tests := []struct {
		name    string
		target  string
		leader  func(string) (string, error)
		want    Target
		wantErr error
	}{
		{"etcd shorthand", "etcd-2", nil, Target{Node: "master-2", Component: "etcd"}, nil},
		{"component", "master-3/etcd", nil, Target{Node: "master-3", Component: "etcd"}, nil},
		{"whole node", "master-1", nil, Target{Node: "master-1"}, nil},
		{"spaces trimmed", " etcd-1 ", nil, Target{Node: "master-1", Component: "etcd"}, nil},
		{"leader", "leader", leaderIs("master-2"), Target{Node: "master-2", Component: "etcd", Leader: true}, nil},
		{"no leader", "leader", noLeader, Target{}, ErrNoLeader},
		{"etcd leader spelt out", "leader/etcd", leaderIs("master-3"), Target{Node: "master-3", Component: "etcd", Leader: true}, nil},
		{"lease leader not run here", "leader/kube-scheduler", nil, Target{}, ErrUnknownTarget},
		{"leader of a component that elects none", "leader/kubelet", nil, Target{}, ErrUnknownTarget},
		{"member out of range", "etcd-4", nil, Target{}, ErrUnknownTarget},
		{"node out of range", "master-9", nil, Target{}, ErrUnknownTarget},
		{"unknown component", "master-1/kubelet", nil, Target{}, ErrUnknownTarget},
		{"worker that does not exist", "worker-1", nil, Target{}, ErrUnknownTarget},
		{"etcd without number", "etcd", nil, Target{}, ErrUnknownTarget},
		{"empty", "", nil, Target{}, ErrUnknownTarget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leader := tt.leader
			if leader == nil {
				leader = func(string) (string, error) {
					t.Fatal("leader was asked for although the target does not name it")
					return "", nil
				}
			}
			got, err := resolveTarget(tt.target, topo, leader)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("resolveTarget(%q) error = %v, want %v", tt.target, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("resolveTarget(%q): %v", tt.target, err)
			}
			if got != tt.want {
				t.Errorf("resolveTarget(%q) = %+v, want %+v", tt.target, got, tt.want)
			}
		})
	}
}

func TestResolveLeaseLeader(t *testing.T) {
	asked := ""
	got, err := resolveTarget("leader/kube-scheduler", threeFullMasters(), func(c string) (string, error) {
		asked = c
		return "master-2", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if asked != "kube-scheduler" {
		t.Errorf("asked for the leading %q, want kube-scheduler", asked)
	}
	if want := (Target{Node: "master-2", Component: "kube-scheduler", Leader: true}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	valid := validTargets(threeFullMasters())
	if !slices.Contains(valid, "leader/kube-scheduler") || slices.Contains(valid, "leader/kube-controller-manager") {
		t.Errorf("valid targets %v: want leader/kube-scheduler (run here) and not leader/kube-controller-manager (not run)", valid)
	}
}

func TestUnknownTargetListsValidOnes(t *testing.T) {
	_, err := resolveTarget("etcd-7", threeMasters(), nil)
	msg := i18n.Localize(err, i18n.English)
	for _, want := range []string{`"etcd-7"`, "leader", "master-1", "master-1/etcd", "etcd-1", "etcd-3"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not mention %s", msg, want)
		}
	}
}

func TestValidTargets(t *testing.T) {
	got := fmt.Sprint(validTargets(threeMasters()))
	want := "[leader master-1 master-1/etcd etcd-1 master-2 master-2/etcd etcd-2 master-3 master-3/etcd etcd-3]"
	if got != want {
		t.Errorf("validTargets = %s\nwant %s", got, want)
	}
}

func TestRefsOf(t *testing.T) {
	topo := topologyOf([]runtime.Ref{
		{Node: "master-1", Component: "etcd"},
		{Node: "master-1", Component: "kube-apiserver"},
		{Node: "master-2", Component: "etcd"},
	})
	tests := []struct {
		name   string
		target Target
		want   string
	}{
		{"component", Target{Node: "master-1", Component: "etcd"}, "[master-1/etcd]"},
		{"whole node", Target{Node: "master-1"}, "[master-1/etcd master-1/kube-apiserver]"},
		{"other node", Target{Node: "master-2"}, "[master-2/etcd]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmt.Sprint(refsOf(tt.target, topo)); got != tt.want {
				t.Errorf("refsOf = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestLeaderOf(t *testing.T) {
	ans := func(state string, term uint64) memberAnswer {
		return memberAnswer{}.with(state, term)
	}
	tests := []struct {
		name    string
		answers []memberAnswer
		want    int
		ok      bool
	}{
		{"none", []memberAnswer{ans("StateFollower", 2), ans("StateCandidate", 3)}, -1, false},
		{"one", []memberAnswer{ans("StateFollower", 2), ans("StateLeader", 2)}, 1, true},
		{"stale leader in a minority loses to the newer term",
			[]memberAnswer{ans("StateLeader", 2), ans("StateLeader", 3), ans("StateFollower", 3)}, 1, true},
		{"unreachable member is ignored",
			[]memberAnswer{{err: errors.New("connection refused")}, ans("StateLeader", 4)}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := leaderOf(tt.answers)
			if got != tt.want || ok != tt.ok {
				t.Errorf("leaderOf = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func (a memberAnswer) with(state string, term uint64) memberAnswer {
	a.status.State, a.status.Term = state, term
	return a
}
