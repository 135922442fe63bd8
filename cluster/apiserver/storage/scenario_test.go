package storage

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// A pod scenario is a seeded series of creations, updates (a pod bound to
// a node, moved, relabelled, its phase changed) and deletions. Tests run it
// against the watch cache (in memory or on etcd) and against the old
// per-watcher etcd path, and check every watcher's events against what
// expectedEvents works out from the same changes with Predicate.Matches:
// an independent reckoning that uses neither the cache's index nor its
// precomputed attributes.

const (
	scenarioNodes      = 10
	scenarioNamespaceA = "ns-a"
	scenarioNamespaceB = "ns-b"
)

// podChange is one change of a scenario: old is nil for a creation, cur
// for a deletion; both carry their resourceVersion.
type podChange struct {
	old, cur *corev1.Pod
	rev      int64
}

// podWriter writes a change and returns its revision: put creates or
// updates p, remove deletes it.
type podWriter interface {
	put(t testing.TB, p *corev1.Pod) int64
	remove(t testing.TB, p *corev1.Pod) int64
}

// runPodScenario makes n random changes through w.
func runPodScenario(t testing.TB, w podWriter, seed uint64, n int) []podChange {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0))
	live := map[string]*corev1.Pod{}
	var names []string
	node := func() string {
		if rng.IntN(4) == 0 {
			return "" // not scheduled yet
		}
		return fmt.Sprintf("node-%d", rng.IntN(scenarioNodes))
	}
	app := func() string { return []string{"web", "db"}[rng.IntN(2)] }
	var changes []podChange
	for i := 0; i < n; i++ {
		switch op := rng.IntN(10); {
		case op < 4 || len(names) == 0: // create
			ns := []string{scenarioNamespaceA, scenarioNamespaceB}[rng.IntN(2)]
			p := testPod(ns, fmt.Sprintf("pod-%d", i), node(), map[string]string{"app": app()})
			p.Status.Phase = corev1.PodPending
			rev := w.put(t, p)
			p = podAt(p, rev)
			live[ns+"/"+p.Name] = p
			names = append(names, ns+"/"+p.Name)
			changes = append(changes, podChange{cur: p, rev: rev})
		case op < 9: // update
			key := names[rng.IntN(len(names))]
			old := live[key]
			p := old.DeepCopy()
			switch rng.IntN(3) {
			case 0:
				p.Spec.NodeName = node()
			case 1:
				p.Labels = map[string]string{"app": app()}
			case 2:
				p.Status.Phase = []corev1.PodPhase{corev1.PodPending, corev1.PodRunning}[rng.IntN(2)]
			}
			p.ResourceVersion = ""
			rev := w.put(t, p)
			if strconv.FormatInt(rev, 10) == old.ResourceVersion {
				continue // etcd does not write an update that changes nothing
			}
			p = podAt(p, rev)
			live[key] = p
			changes = append(changes, podChange{old: old, cur: p, rev: rev})
		default: // delete
			j := rng.IntN(len(names))
			key := names[j]
			old := live[key]
			rev := w.remove(t, old)
			delete(live, key)
			names = append(names[:j], names[j+1:]...)
			changes = append(changes, podChange{old: old, rev: rev})
		}
	}
	return changes
}

// scenarioWatch is one watcher of a scenario.
type scenarioWatch struct {
	name           string
	namespace      string
	labels, fields string
}

// scenarioWatches covers indexed watchers (one per node, and the
// scheduler's unscheduled pods), label and unindexed field selectors,
// namespaces, and a watcher of everything.
func scenarioWatches() []scenarioWatch {
	var out []scenarioWatch
	for i := 0; i < scenarioNodes; i++ {
		out = append(out, scenarioWatch{name: fmt.Sprintf("kubelet of node-%d", i), fields: fmt.Sprintf("spec.nodeName=node-%d", i)})
	}
	return append(out,
		scenarioWatch{name: "unscheduled pods", fields: "spec.nodeName="},
		scenarioWatch{name: "not on node-1", fields: "spec.nodeName!=node-1"},
		scenarioWatch{name: "running", fields: "status.phase=Running"},
		scenarioWatch{name: "app=web", labels: "app=web"},
		scenarioWatch{name: "namespace ns-b", namespace: scenarioNamespaceB},
		scenarioWatch{name: "node-1 in ns-a, app=db", namespace: scenarioNamespaceA, labels: "app=db", fields: "spec.nodeName=node-1"},
		scenarioWatch{name: "everything"},
	)
}

// expectedEvents is what a watch of namespace with pred sees of changes.
func expectedEvents(changes []podChange, namespace string, pred *Predicate) []string {
	matches := func(p *corev1.Pod) bool {
		return p != nil && (namespace == "" || p.Namespace == namespace) && pred.Matches(p)
	}
	var out []string
	for _, ch := range changes {
		oldPasses, curPasses := matches(ch.old), matches(ch.cur)
		switch {
		case curPasses && oldPasses:
			out = append(out, describe(watch.Event{Type: watch.Modified, Object: ch.cur}))
		case curPasses:
			out = append(out, describe(watch.Event{Type: watch.Added, Object: ch.cur}))
		case oldPasses:
			out = append(out, describe(watch.Event{Type: watch.Deleted, Object: podAt(ch.old, ch.rev)}))
		}
	}
	return out
}

// receiveUntil reads w's events up to revision rev, leaving bookmarks out:
// up to an event at rev, or a bookmark at rev or later (a barrier: the
// watch has been sent every event up to it). A bookmark comes only when it
// tells the watcher something new, so the watch must allow bookmarks
// unless its last event is at rev.
func receiveUntil(t testing.TB, w watch.Interface, rev int64, timeout time.Duration) []string {
	t.Helper()
	var got []string
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v", got)
			}
			if ev.Type != watch.Bookmark {
				got = append(got, describe(ev))
			}
			if eventRevision(t, ev) >= rev {
				return got
			}
		case <-deadline.C:
			t.Fatalf("nothing at revision %d or later within %v; events so far %v", rev, timeout, got)
		}
	}
}

func eventRevision(t testing.TB, ev watch.Event) int64 {
	t.Helper()
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		t.Fatalf("%s event carries %T", ev.Type, ev.Object)
	}
	rev, err := strconv.ParseInt(p.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("%s event: resourceVersion %q: %v", ev.Type, p.ResourceVersion, err)
	}
	return rev
}

// podKey is res's key for p.
func podKey(res *registry.Resource, p *corev1.Pod) string { return res.Key(p.Namespace, p.Name) }
