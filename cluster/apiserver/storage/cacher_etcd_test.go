package storage

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// The tests below run the store against a real klab etcd member.

const etcdTestTimeout = 20 * time.Second

// modes are the two ways a store serves watches; tests of behaviour both
// must have run against each.
var modes = []struct {
	name string
	opts Options
}{
	{"watch cache", Options{}},
	{"etcd watch per watcher", Options{DisableWatchCache: true}},
}

// newEtcdStore starts an etcd member and returns a store on it.
func newEtcdStore(t *testing.T, opts Options) (*Store, *etcdtest.Cluster) {
	t.Helper()
	cluster := etcdtest.New(t, 1, nil)
	s := NewWithOptions(cluster.Client(), opts)
	t.Cleanup(s.Close)
	return s, cluster
}

// podWriterFor writes pods through s.
type storeWriter struct {
	s   *Store
	res *registry.Resource
}

func (w storeWriter) put(t testing.TB, p *corev1.Pod) int64 {
	t.Helper()
	ctx := context.Background()
	obj, err := w.s.Create(ctx, w.res, p.DeepCopy())
	if apierrors.IsAlreadyExists(err) {
		obj, err = w.s.GuaranteedUpdate(ctx, w.res, p.Namespace, p.Name, func(runtime.Object) (runtime.Object, error) {
			return p.DeepCopy(), nil
		})
	}
	if err != nil {
		t.Fatalf("write %s/%s: %v", p.Namespace, p.Name, err)
	}
	return revisionOf(t, obj)
}

func (w storeWriter) remove(t testing.TB, p *corev1.Pod) int64 {
	t.Helper()
	obj, err := w.s.Delete(context.Background(), w.res, p.Namespace, p.Name, nil)
	if err != nil {
		t.Fatalf("delete %s/%s: %v", p.Namespace, p.Name, err)
	}
	return revisionOf(t, obj)
}

func revisionOf(t testing.TB, obj runtime.Object) int64 {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", m.GetResourceVersion(), err)
	}
	return rev
}

// startWatch starts a watch of pods, stopped when the test ends.
func startWatch(t *testing.T, s *Store, sw scenarioWatch, opts WatchOptions) watch.Interface {
	t.Helper()
	res := lookup(t, "pods")
	opts.Predicate = predicate(t, res, sw.labels, sw.fields)
	w, err := s.Watch(t.Context(), res, sw.namespace, opts)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}

func currentRevision(t *testing.T, s *Store) int64 {
	t.Helper()
	rev, err := s.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func boolPtr(b bool) *bool { return &b }

// createConfigMap creates a ConfigMap (a change of another resource) and
// returns its revision.
func createConfigMap(t *testing.T, s *Store, name string) int64 {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	obj, err := s.Create(context.Background(), lookup(t, "configmaps"), cm)
	if err != nil {
		t.Fatal(err)
	}
	return revisionOf(t, obj)
}

// TestWatchersWithSelectors: many watches with different field and label
// selectors and namespaces each see exactly their events, served by the
// cache as by one etcd watch each.
func TestWatchersWithSelectors(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			opts := mode.opts
			opts.WatchCacheCapacity = roomyCapacity // the readers read after the writes
			s, _ := newEtcdStore(t, opts)
			s.progressRequestInterval = 50 * time.Millisecond
			res := lookup(t, "pods")
			from := strconv.FormatInt(currentRevision(t, s), 10)
			type watching struct {
				sw scenarioWatch
				w  watch.Interface
			}
			var watches []watching
			for _, sw := range scenarioWatches() {
				w := startWatch(t, s, sw, WatchOptions{ResourceVersion: from, AllowBookmarks: true, BookmarkInterval: 20 * time.Millisecond})
				watches = append(watches, watching{sw, w})
			}
			changes := runPodScenario(t, storeWriter{s, res}, 2, 150)
			// A change elsewhere, so that every watch gets a bookmark after
			// its last event (the per-watcher etcd path sends one only when
			// etcd's revision passes the last change of the resource).
			last := createConfigMap(t, s, "after-the-scenario")
			for _, wt := range watches {
				t.Run(wt.sw.name, func(t *testing.T) {
					want := expectedEvents(changes, wt.sw.namespace, predicate(t, res, wt.sw.labels, wt.sw.fields))
					got := receiveUntil(t, wt.w, last, etcdTestTimeout)
					if !slices.Equal(got, want) {
						t.Errorf("got %d events, want %d\n got: %v\nwant: %v", len(got), len(want), got, want)
					}
				})
			}
		})
	}
}

// TestSelectorTransitions: a pod that moves from one node to another is
// DELETED for the first node's kubelet (its last state there) and ADDED
// for the second's; its deletion carries its last state.
func TestSelectorTransitions(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newEtcdStore(t, mode.opts)
			res := lookup(t, "pods")
			writer := storeWriter{s, res}
			from := strconv.FormatInt(currentRevision(t, s), 10)
			onA := startWatch(t, s, scenarioWatch{fields: "spec.nodeName=node-a"}, WatchOptions{ResourceVersion: from})
			onB := startWatch(t, s, scenarioWatch{fields: "spec.nodeName=node-b"}, WatchOptions{ResourceVersion: from})

			p := testPod("ns", "mover", "node-a", nil)
			created := writer.put(t, p)
			moved := testPod("ns", "mover", "node-b", nil)
			movedRev := writer.put(t, moved)
			deleted := writer.remove(t, moved)

			wantA := []string{"ADDED ns/mover@" + itoa(created) + " node=node-a", "DELETED ns/mover@" + itoa(movedRev) + " node=node-a"}
			wantB := []string{"ADDED ns/mover@" + itoa(movedRev) + " node=node-b", "DELETED ns/mover@" + itoa(deleted) + " node=node-b"}
			if got := receive(t, onA, 2, etcdTestTimeout); !slices.Equal(got, wantA) {
				t.Errorf("node-a's kubelet got %v; want %v", got, wantA)
			}
			if got := receive(t, onB, 2, etcdTestTimeout); !slices.Equal(got, wantB) {
				t.Errorf("node-b's kubelet got %v; want %v", got, wantB)
			}
		})
	}
}

func itoa(rev int64) string { return strconv.FormatInt(rev, 10) }

// TestResumeFromBuffer: a watch from a revision the buffer still reaches
// back to gets exactly the changes since; one from an older revision gets
// 410 Expired, "too old resource version".
func TestResumeFromBuffer(t *testing.T) {
	t.Parallel()
	s, _ := newEtcdStore(t, Options{WatchCacheCapacity: 8})
	res := lookup(t, "pods")
	writer := storeWriter{s, res}
	p := testPod("ns", "a", "node-1", nil)
	start := writer.put(t, p)
	// Start the cache at start.
	startWatch(t, s, scenarioWatch{}, WatchOptions{ResourceVersion: itoa(start)})
	var revs []int64
	for i := range 6 {
		p.Labels = map[string]string{"step": itoa(int64(i))}
		revs = append(revs, writer.put(t, p))
	}
	modified := func(revs []int64) []string {
		var out []string
		for _, rev := range revs {
			out = append(out, "MODIFIED ns/a@"+itoa(rev)+" node=node-1")
		}
		return out
	}
	tests := []struct {
		name string
		from int64
		want []string
	}{
		{name: "from where the cache started", from: start, want: modified(revs)},
		{name: "from inside the buffer", from: revs[2], want: modified(revs[3:])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := startWatch(t, s, scenarioWatch{}, WatchOptions{ResourceVersion: itoa(tt.from)})
			if got := receive(t, w, len(tt.want), etcdTestTimeout); !slices.Equal(got, tt.want) {
				t.Errorf("got %v; want %v", got, tt.want)
			}
		})
	}

	// Six more changes push the first ones out of the eight-event buffer.
	for i := range 6 {
		p.Labels = map[string]string{"step": itoa(int64(10 + i))}
		revs = append(revs, writer.put(t, p))
	}
	// A list not older than the last change waits for the cache to have it.
	if _, err := s.List(context.Background(), res, "", ListOptions{ResourceVersion: itoa(revs[len(revs)-1])}); err != nil {
		t.Fatal(err)
	}
	t.Run("older than the buffer", func(t *testing.T) {
		w := startWatch(t, s, scenarioWatch{}, WatchOptions{ResourceVersion: itoa(revs[2])})
		ev, ok := <-w.ResultChan()
		wantExpired(t, ev, ok)
		if _, ok := <-w.ResultChan(); ok {
			t.Error("the watch goes on after its error")
		}
	})
	t.Run("the oldest revision still in the buffer", func(t *testing.T) {
		// The buffer holds the last eight changes; a watch from the
		// revision before the oldest of them gets all eight.
		from := revs[len(revs)-9]
		w := startWatch(t, s, scenarioWatch{}, WatchOptions{ResourceVersion: itoa(from)})
		if got, want := receive(t, w, 8, etcdTestTimeout), modified(revs[len(revs)-8:]); !slices.Equal(got, want) {
			t.Errorf("got %v; want %v", got, want)
		}
	})
}

// wantExpired checks that ev is upstream's 410 for a watch too far back.
func wantExpired(t *testing.T, ev watch.Event, ok bool) {
	t.Helper()
	if !ok {
		t.Fatal("watch closed without an event")
	}
	st, isStatus := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !isStatus {
		t.Fatalf("event %s %T; want ERROR with a Status", ev.Type, ev.Object)
	}
	if st.Code != 410 || st.Reason != metav1.StatusReasonExpired || !strings.HasPrefix(st.Message, "too old resource version: ") {
		t.Errorf("status %d %s %q; want 410 Expired \"too old resource version: ...\"", st.Code, st.Reason, st.Message)
	}
}

// TestCacheStartsWhereTheWatchResumes: a cache started by a watch at
// revision N lists at N, so the watch gets the changes since N; if etcd
// has compacted N, the watch gets 410.
func TestCacheStartsWhereTheWatchResumes(t *testing.T) {
	t.Parallel()
	s, cluster := newEtcdStore(t, Options{})
	res := lookup(t, "pods")
	writer := storeWriter{s, res}
	p := testPod("ns", "a", "node-1", nil)
	listed := writer.put(t, p) // a client lists here...
	p.Spec.NodeName = "node-2"
	changed := writer.put(t, p) // ...and this happens before it watches
	w := startWatch(t, s, scenarioWatch{}, WatchOptions{ResourceVersion: itoa(listed)})
	if got, want := receive(t, w, 1, etcdTestTimeout), []string{"MODIFIED ns/a@" + itoa(changed) + " node=node-2"}; !slices.Equal(got, want) {
		t.Errorf("got %v; want %v", got, want)
	}

	// A second store (another API server) whose first watch asks for a
	// revision etcd has compacted.
	if _, err := cluster.Client().Compact(context.Background(), changed); err != nil {
		t.Fatal(err)
	}
	other := NewWithOptions(cluster.Client(), Options{})
	t.Cleanup(other.Close)
	w2 := startWatch(t, other, scenarioWatch{}, WatchOptions{ResourceVersion: itoa(listed)})
	ev, ok := <-w2.ResultChan()
	wantExpired(t, ev, ok)
}

// TestSlowWatcherDropped: a watch whose client does not read is closed;
// another watch of the same pods gets every change meanwhile.
func TestSlowWatcherDropped(t *testing.T) {
	t.Parallel()
	s, _ := newEtcdStore(t, Options{})
	res := lookup(t, "pods")
	writer := storeWriter{s, res}
	from := itoa(currentRevision(t, s))
	slow := startWatch(t, s, scenarioWatch{fields: "spec.nodeName=node-1"}, WatchOptions{ResourceVersion: from})
	fast := startWatch(t, s, scenarioWatch{fields: "spec.nodeName=node-1"}, WatchOptions{ResourceVersion: from})
	const n = 60
	var want []string
	p := testPod("ns", "a", "node-1", nil)
	for i := range n {
		p.Labels = map[string]string{"step": itoa(int64(i))}
		rev := writer.put(t, p)
		typ := "MODIFIED"
		if i == 0 {
			typ = "ADDED"
		}
		want = append(want, typ+" ns/a@"+itoa(rev)+" node=node-1")
		if got := receive(t, fast, 1, etcdTestTimeout); got[0] != want[i] {
			t.Fatalf("fast watcher got %s; want %s", got[0], want[i])
		}
	}
	var slowGot []string
	for ev := range slow.ResultChan() {
		slowGot = append(slowGot, describe(ev))
	}
	if len(slowGot) >= n || !slices.Equal(slowGot, want[:len(slowGot)]) {
		t.Errorf("slow watcher got %d events, then the end: %v; want a prefix of the %d", len(slowGot), slowGot, n)
	}
}

// TestBookmarks: the watch-list protocol's initial events end with the
// k8s.io/initial-events-end bookmark; then idle watches get bookmarks
// whose revision follows etcd's even while their resource is quiet.
func TestBookmarks(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newEtcdStore(t, mode.opts)
			s.progressRequestInterval = 50 * time.Millisecond
			res := lookup(t, "pods")
			writer := storeWriter{s, res}
			var want []string
			for _, name := range []string{"c", "a", "b"} {
				writer.put(t, testPod("ns", name, "node-1", nil))
			}
			for _, name := range []string{"a", "b", "c"} {
				obj, err := s.Get(context.Background(), res, "ns", name)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, describe(watch.Event{Type: watch.Added, Object: obj}))
			}
			listed := currentRevision(t, s)
			w := startWatch(t, s, scenarioWatch{}, WatchOptions{SendInitialEvents: boolPtr(true), AllowBookmarks: true, BookmarkInterval: 50 * time.Millisecond})
			got := receive(t, w, 4, etcdTestTimeout)
			if !slices.Equal(got[:3], want) || !strings.HasSuffix(got[3], " end") {
				t.Fatalf("watch-list sent %v; want %v, then the initial-events-end bookmark", got, want)
			}
			if rev, _ := strconv.ParseInt(strings.Fields(got[3])[1][1:], 10, 64); rev < listed {
				t.Errorf("initial events end at %d, before the revision %d they must include", rev, listed)
			}

			// A change elsewhere moves etcd's revision; the pods watch
			// learns it from bookmarks.
			if got := receiveUntil(t, w, createConfigMap(t, s, "elsewhere"), etcdTestTimeout); len(got) != 0 {
				t.Errorf("events besides bookmarks: %v", got)
			}
		})
	}
}

// TestConsistentReads: a watch at resourceVersion "" starts from etcd's
// current state, even when a change was made through another store (API
// server) a moment before and this cache has not seen it yet; a list at N
// is not older than N.
func TestConsistentReads(t *testing.T) {
	t.Parallel()
	s, cluster := newEtcdStore(t, Options{})
	res := lookup(t, "pods")
	startWatch(t, s, scenarioWatch{}, WatchOptions{ResourceVersion: "0"}) // the cache runs
	other := NewWithOptions(cluster.Client(), Options{DisableWatchCache: true})
	for i := range 5 {
		name := "p" + itoa(int64(i))
		rev := storeWriter{other, res}.put(t, testPod("ns", name, "node-1", nil))

		w := startWatch(t, s, scenarioWatch{namespace: "ns", fields: "metadata.name=" + name}, WatchOptions{})
		if got, want := receive(t, w, 1, etcdTestTimeout), "ADDED ns/"+name+"@"+itoa(rev)+" node=node-1"; got[0] != want {
			t.Errorf("watch at \"\" began with %v; want %s", got, want)
		}
		list, err := s.List(context.Background(), res, "ns", ListOptions{ResourceVersion: itoa(rev), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(list.(*corev1.PodList).Items); n != i+1 {
			t.Errorf("list not older than %d has %d pods; want %d", rev, n, i+1)
		}
	}
}

// TestListFromCache: lists that accept a stale state are answered from
// the cache with what etcd answers; the others still read etcd.
func TestListFromCache(t *testing.T) {
	t.Parallel()
	s, _ := newEtcdStore(t, Options{})
	res := lookup(t, "pods")
	writer := storeWriter{s, res}
	for _, p := range []*corev1.Pod{
		testPod("ns-a", "p1", "node-1", map[string]string{"app": "web"}),
		testPod("ns-a", "p2", "node-2", map[string]string{"app": "db"}),
		testPod("ns-b", "p3", "node-1", map[string]string{"app": "web"}),
		testPod("ns-b", "p4", "", nil),
	} {
		writer.put(t, p)
	}
	// Make sure the cache is up: a watch starts it and waits for it.
	startWatch(t, s, scenarioWatch{}, WatchOptions{})
	tests := []struct {
		name           string
		namespace      string
		labels, fields string
	}{
		{name: "everything"},
		{name: "one namespace", namespace: "ns-b"},
		{name: "label selector", labels: "app=web"},
		{name: "a node's pods", fields: "spec.nodeName=node-1"},
		{name: "unscheduled pods", fields: "spec.nodeName="},
		{name: "namespace, labels and fields", namespace: "ns-a", labels: "app", fields: "spec.nodeName!=node-1"},
	}
	names := func(list runtime.Object) []string {
		var out []string
		for _, p := range list.(*corev1.PodList).Items {
			out = append(out, p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pred := predicate(t, res, tt.labels, tt.fields)
			opts := ListOptions{Labels: pred.labels, Fields: pred.fields}
			fromEtcd, err := s.List(context.Background(), res, tt.namespace, opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.ResourceVersion, opts.Limit = "0", 1 // a limit at "0" is ignored, as upstream
			fromCache, err := s.List(context.Background(), res, tt.namespace, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := names(fromCache), names(fromEtcd); !slices.Equal(got, want) {
				t.Errorf("from the cache %v; etcd has %v", got, want)
			}
		})
	}
	t.Run("a limited consistent list still pages through etcd", func(t *testing.T) {
		list, err := s.List(context.Background(), res, "", ListOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if n, cont := len(list.(*corev1.PodList).Items), list.(*corev1.PodList).Continue; n != 1 || cont == "" {
			t.Errorf("%d items, continue %q; want one item and a continue token", n, cont)
		}
	})
}

// TestTooLargeResourceVersion: a watch from a revision etcd has not
// reached fails after upstream's three seconds with its timeout error.
func TestTooLargeResourceVersion(t *testing.T) {
	t.Parallel()
	s, _ := newEtcdStore(t, Options{})
	res := lookup(t, "pods")
	future := currentRevision(t, s) + 1000
	_, err := s.Watch(t.Context(), res, "", WatchOptions{ResourceVersion: itoa(future)})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Fatalf("error %v; want a timeout with cause ResourceVersionTooLarge", err)
	}
	if msg := status.Status().Message; !strings.Contains(msg, "Too large resource version: "+itoa(future)) {
		t.Errorf("message %q", msg)
	}
}

// TestCloseEndsWatches: closing the store ends the watches its caches
// serve.
func TestCloseEndsWatches(t *testing.T) {
	t.Parallel()
	s, _ := newEtcdStore(t, Options{})
	w := startWatch(t, s, scenarioWatch{}, WatchOptions{})
	s.Close()
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Error("an event after Close; want the end of the watch")
		}
	case <-time.After(etcdTestTimeout):
		t.Error("the watch did not end")
	}
}
