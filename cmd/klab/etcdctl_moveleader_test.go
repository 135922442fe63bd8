package main

import (
	"testing"

	"github.com/klab-dev/klab/cluster/lab"
)

func TestMoveLeaderTarget(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"move-leader", "master-2"}, 1},
		{[]string{"--endpoints", "x", "move-leader", "master-2"}, 3},
		{[]string{"move-leader", "-w", "master-2"}, 2},
		{[]string{"move-leader", "--", "master-2"}, 2},
		{[]string{"move-leader"}, -1},
		{[]string{"move-leader", "--"}, -1},
		{[]string{"member", "list"}, -1},
	} {
		if got := moveLeaderTarget(tc.args); got != tc.want {
			t.Errorf("moveLeaderTarget(%q) = %d, want %d", tc.args, got, tc.want)
		}
	}
}

func TestMemberIDs(t *testing.T) {
	ids := memberIDs([]lab.MemberStatus{{Name: "master-1", ID: "a2579602affa62d2"}, {Name: "master-2", ID: "b959be93b27c181e"}, {Name: "master-3"}})
	want := map[string]string{"master-1": "a2579602affa62d2", "etcd-1": "a2579602affa62d2", "master-2": "b959be93b27c181e", "etcd-2": "b959be93b27c181e"}
	if len(ids) != len(want) {
		t.Fatalf("memberIDs = %v, want %v", ids, want)
	}
	for k, v := range want {
		if ids[k] != v {
			t.Errorf("memberIDs[%s] = %q, want %q", k, ids[k], v)
		}
	}
}
