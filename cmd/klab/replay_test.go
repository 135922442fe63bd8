package main

import (
	"strings"
	"testing"
)

// klab replay draws every view of a recording with no cluster: the
// Scheduler's decision and the Events of a pod appear only once the
// recording reaches them, and an unknown view or moment is refused by
// name.
func TestReplayDrawsEveryView(t *testing.T) {
	testHome(t)
	const file = "../../ui/record/testdata/pod-scheduled.jsonl"
	for _, tc := range []struct {
		view, at, want, absent string
	}{
		{"scheduler", "5s", "default/web-1", ""},
		{"scheduler", "1s", "No scheduling decision yet", "default/web-1"},
		{"events", "5s", "pod/web-1", ""},
		{"events", "1s", "No events yet", "pod/web-1"},
		{"overview", "5s", "1 pods", ""},
		{"proxy", "5s", "default/web", ""},
		{"raft", "5s", "leader master-1, term 2", ""},
	} {
		code, out, errOut := klab(t, "replay", file, "--frame", "--view", tc.view, "--at", tc.at, "--width", "100", "--height", "20")
		if code != 0 {
			t.Fatalf("replay --view %s --at %s: exit %d: %s", tc.view, tc.at, code, errOut)
		}
		if !strings.Contains(out, tc.want) || tc.absent != "" && strings.Contains(out, tc.absent) {
			t.Errorf("replay --view %s --at %s: want %q and not %q:\n%s", tc.view, tc.at, tc.want, tc.absent, out)
		}
	}
	code, _, errOut := klab(t, "replay", file, "--frame", "--view", "nodes")
	if code == 0 || !strings.Contains(errOut, `"nodes"`) {
		t.Errorf("replay --view nodes: exit %d, %q; want an error naming the view", code, errOut)
	}
}
