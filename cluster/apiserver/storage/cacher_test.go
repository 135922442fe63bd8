package storage

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// memCacher is a pods cacher fed by hand instead of by etcd: its
// dispatcher runs, its reflector does not.
type memCacher struct {
	*cacher
	rev int64
}

// roomyCapacity sizes a watch cache so that its watchers' inputs hold
// 1000 events: enough for a test's burst even if a reader is descheduled.
const roomyCapacity = 1000 * 75

// newMemCacher returns a pods cacher whose buffer holds capacity events.
func newMemCacher(t testing.TB, capacity int) *memCacher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := newCacher(ctx, NewWithOptions(nil, Options{WatchCacheCapacity: capacity}), lookup(t, "pods"))
	c.wc.replace(nil, 1)
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		c.dispatchEvents()
	}()
	t.Cleanup(func() {
		cancel()
		<-dispatched
		c.terminateAllWatchers()
	})
	return &memCacher{cacher: c, rev: 1}
}

func (m *memCacher) put(t testing.TB, p *corev1.Pod) int64 {
	m.rev++
	m.incoming <- m.wc.apply(podKey(m.res, p), m.rev, podElement(m.res, p, m.rev))
	return m.rev
}

func (m *memCacher) remove(t testing.TB, p *corev1.Pod) int64 {
	m.rev++
	if ev := m.wc.apply(podKey(m.res, p), m.rev, nil); ev != nil {
		m.incoming <- ev
	}
	return m.rev
}

// progress is an etcd progress notification at rev.
func (m *memCacher) progress(rev int64) {
	m.rev = rev
	m.wc.advance(rev)
	m.incoming <- &watchCacheEvent{typ: watch.Bookmark, rev: rev}
}

func (m *memCacher) watch(t testing.TB, sw scenarioWatch, opts WatchOptions) watch.Interface {
	t.Helper()
	opts.Predicate = predicate(t, m.res, sw.labels, sw.fields)
	if opts.BookmarkInterval == 0 {
		opts.BookmarkInterval = DefaultBookmarkInterval
	}
	w, err := m.cacher.watch(t.Context(), m.res.Prefix(sw.namespace), opts, watchStart{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// TestTransform: what one watcher sees of each kind of change, selector
// transitions included.
func TestTransform(t *testing.T) {
	res := lookup(t, "pods")
	w := &cacheWatcher{prefix: res.Prefix("ns"), pred: predicate(t, res, "app=web", "spec.nodeName=node-1")}
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	tests := []struct {
		name      string
		typ       watch.EventType
		prev, cur *corev1.Pod
		want      string // "" for nothing
	}{
		{name: "created, matching", typ: watch.Added, cur: testPod("ns", "a", "node-1", web), want: "ADDED ns/a@7 node=node-1"},
		{name: "created, other node", typ: watch.Added, cur: testPod("ns", "a", "node-2", web)},
		{name: "created, other namespace", typ: watch.Added, cur: testPod("ns2", "a", "node-1", web)},
		{name: "created, namespace with the same prefix", typ: watch.Added, cur: testPod("ns-x", "a", "node-1", web)},
		{name: "updated, matching before and after", typ: watch.Modified, prev: testPod("ns", "a", "node-1", web), cur: testPod("ns", "a", "node-1", web), want: "MODIFIED ns/a@7 node=node-1"},
		{name: "bound to the node", typ: watch.Modified, prev: testPod("ns", "a", "", web), cur: testPod("ns", "a", "node-1", web), want: "ADDED ns/a@7 node=node-1"},
		{name: "moved away: DELETED, last matching state", typ: watch.Modified, prev: testPod("ns", "a", "node-1", web), cur: testPod("ns", "a", "node-2", web), want: "DELETED ns/a@7 node=node-1"},
		{name: "label now selected", typ: watch.Modified, prev: testPod("ns", "a", "node-1", db), cur: testPod("ns", "a", "node-1", web), want: "ADDED ns/a@7 node=node-1"},
		{name: "label no longer selected", typ: watch.Modified, prev: testPod("ns", "a", "node-1", web), cur: testPod("ns", "a", "node-1", db), want: "DELETED ns/a@7 node=node-1"},
		{name: "updated, never matching", typ: watch.Modified, prev: testPod("ns", "a", "node-2", web), cur: testPod("ns", "a", "node-3", web)},
		{name: "deleted, matching", typ: watch.Deleted, prev: testPod("ns", "a", "node-1", web), cur: testPod("ns", "a", "node-1", web), want: "DELETED ns/a@7 node=node-1"},
		{name: "deleted, not matching", typ: watch.Deleted, prev: testPod("ns", "a", "node-2", web), cur: testPod("ns", "a", "node-2", web)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &watchCacheEvent{typ: tt.typ, key: podKey(res, tt.cur), rev: 7, cur: podElement(res, tt.cur, 7)}
			if tt.prev != nil {
				ev.prev = podElement(res, tt.prev, 5)
			}
			out, ok := w.transform(ev)
			got := ""
			if ok {
				got = describe(out)
			}
			if got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
		})
	}
}

// TestDispatchSelectors: watchers with different selectors, indexed or
// not, each see exactly their events, in order.
func TestDispatchSelectors(t *testing.T) {
	m := newMemCacher(t, roomyCapacity)
	type watching struct {
		sw scenarioWatch
		w  watch.Interface
	}
	var watches []watching
	for _, sw := range scenarioWatches() {
		w := m.watch(t, sw, WatchOptions{AllowBookmarks: true, BookmarkInterval: 10 * time.Millisecond})
		watches = append(watches, watching{sw, w})
	}
	changes := runPodScenario(t, m, 1, 400)
	m.progress(m.rev + 1)
	for _, wt := range watches {
		t.Run(wt.sw.name, func(t *testing.T) {
			want := expectedEvents(changes, wt.sw.namespace, predicate(t, m.res, wt.sw.labels, wt.sw.fields))
			got := receiveUntil(t, wt.w, m.rev, 10*time.Second)
			if !slices.Equal(got, want) {
				t.Errorf("got %d events, want %d\n got: %v\nwant: %v", len(got), len(want), got, want)
			}
		})
	}
}

// TestSlowWatcherClosed: a watcher that does not read is closed once its
// input is full and the dispatch budget is spent; another watcher gets
// every event meanwhile, without waiting for it.
func TestSlowWatcherClosed(t *testing.T) {
	// The smallest buffer, so that the slow watcher's input is small.
	m := newMemCacher(t, defaultLowerBoundCapacity)
	slow := m.watch(t, scenarioWatch{}, WatchOptions{})
	fast := m.watch(t, scenarioWatch{}, WatchOptions{})
	const n = 200
	started := time.Now()
	var want []string
	for i := range n {
		p := testPod("ns", "p", "node-1", nil)
		rev := m.put(t, p)
		typ := watch.Modified
		if i == 0 {
			typ = watch.Added
		}
		want = append(want, describe(watch.Event{Type: typ, Object: podAt(p, rev)}))
		// The fast watcher reads each event as it comes.
		if got := receive(t, fast, 1, 5*time.Second); got[0] != want[i] {
			t.Fatalf("fast watcher got %s; want %s", got[0], want[i])
		}
	}
	if took := time.Since(started); took > 2*time.Second {
		t.Errorf("dispatching took %v: the slow watcher held the other back", took)
	}
	var slowGot []string
	for ev := range slow.ResultChan() {
		slowGot = append(slowGot, describe(ev))
	}
	if len(slowGot) >= n || !slices.Equal(slowGot, want[:len(slowGot)]) {
		t.Errorf("slow watcher got %d events before it was closed: %v; want a prefix of the %d, then the end", len(slowGot), slowGot, n)
	}
}

// TestDispatchBookmarks: a watcher allowing bookmarks gets one when it is
// due, carrying the revision it has every event up to, in line with its
// events; a watcher that did not ask gets none.
func TestDispatchBookmarks(t *testing.T) {
	m := newMemCacher(t, roomyCapacity)
	everything := scenarioWatch{}
	with := m.watch(t, everything, WatchOptions{AllowBookmarks: true, BookmarkInterval: 10 * time.Millisecond})
	without := m.watch(t, everything, WatchOptions{})

	m.progress(50)
	if got := receive(t, with, 1, 5*time.Second); got[0] != "BOOKMARK @50" {
		t.Fatalf("got %v; want BOOKMARK @50", got)
	}
	rev := m.put(t, testPod("ns", "a", "", nil))
	m.progress(60)
	got := receiveUntil(t, with, 60, 5*time.Second)
	if want := []string{describe(watch.Event{Type: watch.Added, Object: podAt(testPod("ns", "a", "", nil), rev)})}; !slices.Equal(got, want) {
		t.Errorf("before the bookmark at 60: %v; want %v", got, want)
	}
	// The same two events, with no bookmark between, for the other.
	rev2 := m.put(t, testPod("ns", "b", "", nil))
	got = receive(t, without, 2, 5*time.Second)
	want := []string{
		describe(watch.Event{Type: watch.Added, Object: podAt(testPod("ns", "a", "", nil), rev)}),
		describe(watch.Event{Type: watch.Added, Object: podAt(testPod("ns", "b", "", nil), rev2)}),
	}
	if !slices.Equal(got, want) {
		t.Errorf("watcher without bookmarks got %v; want %v", got, want)
	}
}

// TestIndexFields: the fields watchers are indexed by, as upstream's
// trigger functions.
func TestIndexFields(t *testing.T) {
	for _, tt := range []struct{ resource, want string }{
		{"pods", "spec.nodeName"},
		{"nodes", "metadata.name"},
		{"configmaps", "metadata.name"},
	} {
		t.Run(tt.resource, func(t *testing.T) {
			if got := indexFieldFor(lookup(t, tt.resource)); got != tt.want {
				t.Errorf("index field %q; want %q", got, tt.want)
			}
		})
	}
}
