package live

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/proxy/traffic"
	"github.com/klab-dev/klab/lessons"
)

// TestFeedReportsTrafficRuns: a run recorded before Follow is history; one
// recorded after it, from whatever terminal, is reported.
func TestFeedReportsTrafficRuns(t *testing.T) {
	const name = "t-traffic-feed"
	path, err := lab.TrafficFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(path)) })
	write := func(r traffic.Report) {
		t.Helper()
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := traffic.Report{Target: "10.96.0.1:80", Requests: 5, Succeeded: 5, Pods: []traffic.PodCount{{Pod: "old", Namespace: "default", Count: 5}}}
	write(old)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// No kubeconfig, no members: only what Follow starts reports.
	f := StartFeed(ctx, &lab.Info{Name: name}, FeedOptions{NoMembers: true})
	defer f.Close()
	f.Follow(lessons.Needs{Traffic: true})
	// The poll's baseline is taken when it starts; let it start before
	// the new run is written, with a modification time of its own.
	time.Sleep(2 * trafficPoll)
	write(traffic.Report{Target: "10.96.0.1:80", Requests: 10, Succeeded: 9, Failed: 1, Pods: []traffic.PodCount{
		{Pod: "web-1", Namespace: "default", Count: 4}, {Pod: "web-2", Namespace: "default", Count: 5},
	}})
	for {
		select {
		case batch, ok := <-f.Observations():
			if !ok {
				t.Fatal("feed closed")
			}
			for _, o := range batch {
				run, ok := o.(lessons.TrafficObserved)
				if !ok {
					continue
				}
				if run.Pods["default/old"] != 0 {
					t.Fatalf("the run from before Follow was reported: %+v", run)
				}
				if run.Requests != 10 || run.Failed != 1 || len(run.Pods) != 2 || run.Pods["default/web-2"] != 5 {
					t.Fatalf("run reported as %+v", run)
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("the new run was not reported")
		}
	}
}
