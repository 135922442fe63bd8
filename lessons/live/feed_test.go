package live

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

// TestFeedFollowsTheCluster follows a real cluster of 3 masters and a
// worker, run by another process as klab up runs it, while its members are
// killed and restarted one after the other.
func TestFeedFollowsTheCluster(t *testing.T) {
	info := shared.get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := StartFeed(ctx, info, FeedOptions{})
	defer f.Close()
	p := newPicture()

	p.awaitClosed(t, f, "the initial state", f.Synced())
	// Synced means the initial state has been read, not that it is on
	// its way.
	if len(p.members) != 3 || len(p.clocks) != 3 {
		t.Fatalf("at Synced: members %v, clocks %v; want all 3 of each", p.members, p.clocks)
	}
	if len(p.nodes) != 4 {
		t.Fatalf("at Synced: nodes %v; want 4", p.nodes)
	}
	for name, n := range p.nodes {
		if !n.Ready {
			t.Errorf("node %s is not Ready at Synced; klab up waits for every node", name)
		}
	}
	if _, ok := p.leader(); !ok {
		t.Errorf("no leader at Synced: %v", p.members)
	}

	// Refresh: every member is read again before the barrier opens.
	before := map[string]int{}
	for m, n := range p.statuses {
		before[m] = n
	}
	p.awaitClosed(t, f, "the refresh", f.Refresh())
	for _, m := range info.Members {
		if p.statuses[m.Name] <= before[m.Name] {
			t.Errorf("refresh: no new word of %s", m.Name)
		}
	}

	// Keys: the current value first (none), then every change.
	const key = "/live/feed"
	f.SetKeys([]string{key})
	p.await(t, f, "the key's initial absence", func() bool { return p.keys[key].Deleted })
	cli, err := info.EtcdClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	put := func(value string) {
		t.Helper()
		// A write right after a leader died may time out: etcdctl's
		// user would try again, and so does the test.
		for {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := cli.Put(pctx, key, value)
			cancel()
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("put %s=%s: %v", key, value, err)
			}
		}
	}
	put("v1")
	p.await(t, f, "v1", func() bool { return p.keys[key].Value == "v1" })

	// Each member dies in turn, the one the watch is on among them: the
	// watch carries on, members are seen go and come back, and the
	// leader's death is seen as an election.
	oldLeader, _ := p.leader()
	for i, m := range info.Members {
		target := "etcd-" + strconv.Itoa(i+1)
		if _, err := lab.Chaos(ctx, sharedName, lab.ChaosRequest{Op: lab.OpKill, Targets: []string{target}}); err != nil {
			t.Fatalf("kill %s: %v", target, err)
		}
		p.await(t, f, m.Name+" unreachable", func() bool { return p.members[m.Name].State == lessons.MemberUnreachable })
		value := "after-" + target
		put(value)
		p.await(t, f, value, func() bool { return p.keys[key].Value == value })
		if m.Name == oldLeader.Member {
			p.await(t, f, "a new leader", func() bool {
				l, ok := p.leader()
				return ok && l.Member != oldLeader.Member && l.Term > oldLeader.Term
			})
		}
		if _, err := lab.Chaos(ctx, sharedName, lab.ChaosRequest{Op: lab.OpRestart, Targets: []string{target}}); err != nil {
			t.Fatalf("restart %s: %v", target, err)
		}
		p.await(t, f, m.Name+" back", func() bool {
			s := p.members[m.Name].State
			return s == lessons.MemberFollower || s == lessons.MemberLeader
		})
	}
	if p.sent["MsgPreVote"] == 0 || p.sent["MsgVote"] == 0 || p.sent["MsgApp"] == 0 || p.sent["MsgHeartbeat"] == 0 {
		t.Errorf("messages seen %v; want pre-votes and votes from the election, appends and heartbeats", p.sent)
	}
	if p.sent["MsgVoteResp"] == 0 {
		t.Errorf("no MsgVoteResp among %v", p.sent)
	}

	// Pods, through the API server: added, then deleted.
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "live-feed", Labels: map[string]string{"app": "live"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app"}}},
	}
	if _, err := kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.await(t, f, "the pod running on the worker", func() bool {
		o := p.pods["default/live-feed"]
		return o.Labels["app"] == "live" && o.Phase == "Running" && o.Node == "worker-1"
	})
	if err := kube.CoreV1().Pods("default").Delete(ctx, "live-feed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p.await(t, f, "the pod gone", func() bool { return p.pods["default/live-feed"].Deleted })

	f.Close()
	for range f.Observations() {
	}
}

// TestFeedLeavesNothingRunning checks that Close ends everything a Feed
// started: the Observer, the informers and their connections, the key
// watches and the etcd client.
func TestFeedLeavesNothingRunning(t *testing.T) {
	info := shared.get(t)
	before, _ := goroutines()
	f := StartFeed(context.Background(), info, FeedOptions{})
	p := newPicture()
	p.awaitClosed(t, f, "the initial state", f.Synced())
	f.SetKeys([]string{"/live/leak-a", "/live/leak-b"})
	p.await(t, f, "the keys", func() bool { return len(p.keys) == 2 })
	f.SetKeys([]string{"/live/leak-b"})
	p.awaitClosed(t, f, "a refresh", f.Refresh())
	f.Close()
	if _, ok := <-f.Observations(); ok {
		t.Error("Observations still open after Close")
	}
	// Close is safe twice, and a Feed closed does nothing more.
	f.Close()
	f.SetKeys([]string{"/live/leak-c"})
	<-f.Refresh()
	// The Observer reads the members' status with cluster/lab's client,
	// on the process's shared etcd transport (and Go's default one), which
	// keep connections for reuse by whoever reads next: pooled on purpose,
	// not left behind by the Feed.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	lab.CloseIdleEtcdConnections()
	checkNoNewGoroutines(t, before)
}

// TestFeedWithoutMembers follows only nodes, pods and keys, as the TUI
// uses it.
func TestFeedWithoutMembers(t *testing.T) {
	info := shared.get(t)
	f := StartFeed(context.Background(), info, FeedOptions{NoMembers: true})
	defer f.Close()
	p := newPicture()
	p.awaitClosed(t, f, "the initial state", f.Synced())
	p.awaitClosed(t, f, "a refresh", f.Refresh())
	if len(p.members) != 0 || len(p.sent) != 0 {
		t.Errorf("a feed without members reported members %v, messages %v", p.members, p.sent)
	}
	if len(p.nodes) != 4 {
		t.Errorf("nodes %v; want 4", p.nodes)
	}
}
