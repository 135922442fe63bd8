package apiserver_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// --- what an informer's handler is told ---

// What an informer's event handler was told, per object.
const (
	evAdd    = "ADD"
	evUpdate = "UPDATE" // a change: the resourceVersion moved
	evDelete = "DELETE"
	// evDeleteUnknown is a deletion the informer only inferred from a
	// relist (cache.DeletedFinalStateUnknown): it never saw the event.
	evDeleteUnknown = "DELETE?"
	// evSync is an update whose old and new resourceVersions are equal: a
	// relist re-delivering an unchanged object. It is not a change.
	evSync = "SYNC"
)

type observed struct{ typ, rv string }

func (o observed) String() string { return o.typ + "@" + o.rv }

// recorder is a ConfigMap informer's event handler that keeps, per
// object, what it was told.
type recorder struct {
	mu     sync.Mutex
	byName map[string][]observed
	wake   *notifier
}

func newRecorder() *recorder { return &recorder{byName: map[string][]observed{}, wake: newNotifier()} }

func (r *recorder) add(name string, o observed) {
	r.mu.Lock()
	r.byName[name] = append(r.byName[name], o)
	r.mu.Unlock()
	r.wake.poke()
}

func (r *recorder) OnAdd(obj any, _ bool) {
	cm := obj.(*corev1.ConfigMap)
	r.add(cm.Name, observed{evAdd, cm.ResourceVersion})
}

func (r *recorder) OnUpdate(oldObj, newObj any) {
	old, cur := oldObj.(*corev1.ConfigMap), newObj.(*corev1.ConfigMap)
	typ := evUpdate
	if old.ResourceVersion == cur.ResourceVersion {
		typ = evSync
	}
	r.add(cur.Name, observed{typ, cur.ResourceVersion})
}

func (r *recorder) OnDelete(obj any) {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		r.add(o.Name, observed{evDelete, ""})
	case cache.DeletedFinalStateUnknown:
		_, name, _ := cache.SplitMetaNamespaceKey(o.Key)
		r.add(name, observed{evDeleteUnknown, ""})
	}
}

// changes returns what the handler was told about name, leaving out
// relist re-deliveries of unchanged objects.
func (r *recorder) changes(name string) []observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []observed
	for _, o := range r.byName[name] {
		if o.typ != evSync {
			out = append(out, o)
		}
	}
	return out
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(r.byName)) {
		fmt.Fprintf(&b, "\n  %s: %v", name, r.byName[name])
	}
	return b.String()
}

// state is what the handler was told, replayed: name → resourceVersion
// of each object whose last event was not a deletion.
func (r *recorder) state() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for name, events := range r.byName {
		if last := events[len(events)-1]; last.typ != evDelete && last.typ != evDeleteUnknown {
			out[name] = last.rv
		}
	}
	return out
}

// lastIs reports whether the last event about name is want.
func (r *recorder) lastIs(name string, want observed) bool {
	ch := r.changes(name)
	return len(ch) > 0 && ch[len(ch)-1] == want
}

// --- an informer on a cluster with two API servers ---

// informerFixture is a cluster with two API servers and a ConfigMap
// informer pointed at server 0.
type informerFixture struct {
	c        *apiservertest.Cluster
	cs0, cs1 kubernetes.Interface
	ns       string
	rec      *recorder
	informer cache.SharedIndexInformer
}

func newInformerFixture(ctx context.Context, t *testing.T) *informerFixture {
	t.Helper()
	c := apiservertest.New(t, apiservertest.Options{APIServers: 2})
	f := &informerFixture{c: c, cs0: adminClient(t, c), cs1: clientFor(t, c, 1, auth.AdminUser), ns: "informed", rec: newRecorder()}
	createNamespace(ctx, t, f.cs0, f.ns)
	return f
}

// start runs the informer (client-go's default: the streaming watch-list)
// until the test ends and waits for its first sync.
func (f *informerFixture) start(ctx context.Context, t *testing.T) {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(f.cs0, 0, informers.WithNamespace(f.ns))
	f.informer = factory.Core().V1().ConfigMaps().Informer()
	if _, err := f.informer.AddEventHandler(f.rec); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), f.informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
}

// create, update and remove write through cs and return the new
// resourceVersion.
func (f *informerFixture) create(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(f.ns).Create(ctx, configMap(f.ns, name, map[string]string{"v": "0"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return cm.ResourceVersion
}

func (f *informerFixture) update(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(f.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	cm.Data["v"] += "+"
	cm, err = cs.CoreV1().ConfigMaps(f.ns).Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
	return cm.ResourceVersion
}

func (f *informerFixture) remove(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if err := cs.CoreV1().ConfigMaps(f.ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
}

// cacheState returns the informer cache as name → resourceVersion.
func (f *informerFixture) cacheState() map[string]string {
	out := map[string]string{}
	for _, obj := range f.informer.GetStore().List() {
		cm := obj.(*corev1.ConfigMap)
		out[cm.Name] = cm.ResourceVersion
	}
	return out
}

// apiState lists the namespace through server 1 as name → resourceVersion.
func (f *informerFixture) apiState(ctx context.Context, t *testing.T) map[string]string {
	t.Helper()
	list, err := f.cs1.CoreV1().ConfigMaps(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		out[cm.Name] = cm.ResourceVersion
	}
	return out
}

// waitCache waits until the informer cache equals want and its event
// handler has been told (handlers are called after the cache changes).
func (f *informerFixture) waitCache(ctx context.Context, t *testing.T, what string, want map[string]string) {
	t.Helper()
	f.rec.wake.waitUntil(ctx, t, what, func() bool { return maps.Equal(f.cacheState(), want) && maps.Equal(f.rec.state(), want) },
		func() string { return fmt.Sprintf("cache %v, want %v; events:%s", f.cacheState(), want, f.rec) })
}

// wantChanges checks the exact list of changes the handler saw for name.
func (f *informerFixture) wantChanges(t *testing.T, name string, want ...observed) {
	t.Helper()
	if got := f.rec.changes(name); !slices.Equal(got, want) {
		t.Errorf("%s: handler saw %v; want %v", name, got, want)
	}
}

// downtime stops server 0, lets change make its writes through server 1
// and starts server 0 again; then waits for the informer to catch up.
func (f *informerFixture) downtime(ctx context.Context, t *testing.T, change func()) {
	t.Helper()
	f.c.Stop(0)
	change()
	f.c.Start(0)
	f.waitCache(ctx, t, "the informer to catch up after the restart", f.apiState(ctx, t))
}

// --- tests ---

// TestInformerAcrossRestart: a shared informer (watch-list protocol) on
// server 0 sees every change; when server 0 stops and others write through
// server 1 meanwhile, it catches up after the restart — by resuming its
// watch from its last resourceVersion or by relisting; which one is
// client-go's choice, so for objects changed while it was away only the
// final state and one notification per change it could see are asserted.
// Changes made after it caught up arrive exactly once each, in order.
func TestInformerAcrossRestart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, testTimeout)
	f := newInformerFixture(ctx, t)
	stableRV := f.create(ctx, t, f.cs0, "stable")
	changedRV := f.create(ctx, t, f.cs0, "changed-while-down")
	doomedRV := f.create(ctx, t, f.cs0, "deleted-while-down")
	f.start(ctx, t)

	liveRV1 := f.create(ctx, t, f.cs0, "live")
	liveRV2 := f.update(ctx, t, f.cs0, "live")
	f.waitCache(ctx, t, "the live changes", f.apiState(ctx, t))

	var bornRV, changedRV2 string
	f.downtime(ctx, t, func() {
		bornRV = f.create(ctx, t, f.cs1, "created-while-down")
		changedRV2 = f.update(ctx, t, f.cs1, "changed-while-down")
		f.remove(ctx, t, f.cs1, "deleted-while-down")
	})

	// Through the restarted server: the informer is connected again.
	afterRV1 := f.create(ctx, t, f.cs0, "after")
	afterRV2 := f.update(ctx, t, f.cs0, "after")
	afterRV3 := f.update(ctx, t, f.cs1, "after")
	f.remove(ctx, t, f.cs0, "after")
	keptRV := f.create(ctx, t, f.cs1, "after-kept")
	f.rec.wake.waitUntil(ctx, t, "the changes after the restart",
		func() bool {
			return f.rec.lastIs("after-kept", observed{evAdd, keptRV}) && f.rec.lastIs("after", observed{evDelete, ""})
		},
		f.rec.String)

	if got, want := f.cacheState(), f.apiState(ctx, t); !maps.Equal(got, want) {
		t.Errorf("informer cache %v; the API has %v", got, want)
	}
	f.wantChanges(t, "stable", observed{evAdd, stableRV})
	f.wantChanges(t, "live", observed{evAdd, liveRV1}, observed{evUpdate, liveRV2})
	f.wantChanges(t, "created-while-down", observed{evAdd, bornRV})
	f.wantChanges(t, "changed-while-down", observed{evAdd, changedRV}, observed{evUpdate, changedRV2})
	doomed := f.rec.changes("deleted-while-down")
	if len(doomed) != 2 || doomed[0] != (observed{evAdd, doomedRV}) || (doomed[1].typ != evDelete && doomed[1].typ != evDeleteUnknown) {
		t.Errorf("deleted-while-down: handler saw %v; want ADD@%s then one deletion", doomed, doomedRV)
	} else if doomed[1].typ == evDelete {
		t.Log("the informer resumed its watch after the restart")
	} else {
		t.Log("the informer relisted after the restart")
	}
	f.wantChanges(t, "after", observed{evAdd, afterRV1}, observed{evUpdate, afterRV2}, observed{evUpdate, afterRV3}, observed{evDelete, ""})
	f.wantChanges(t, "after-kept", observed{evAdd, keptRV})
}

// TestInformerRelistsAfterCompaction: while server 0 is down, etcd is
// compacted past the informer's last resourceVersion. Its watch cannot
// resume (410 Gone), so client-go relists: the cache converges, and the
// object deleted meanwhile is reported as a deletion the informer inferred
// (DeletedFinalStateUnknown), the proof that it relisted.
func TestInformerRelistsAfterCompaction(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, testTimeout)
	f := newInformerFixture(ctx, t)
	f.create(ctx, t, f.cs0, "stable")
	doomedRV := f.create(ctx, t, f.cs0, "deleted-while-down")
	changedRV := f.create(ctx, t, f.cs0, "changed-while-down")
	f.start(ctx, t)

	var changedRV2 string
	f.downtime(ctx, t, func() {
		changedRV2 = f.update(ctx, t, f.cs1, "changed-while-down")
		f.remove(ctx, t, f.cs1, "deleted-while-down")
		f.create(ctx, t, f.cs1, "created-while-down")
		compactNow(ctx, t, f.c)
	})

	f.wantChanges(t, "deleted-while-down", observed{evAdd, doomedRV}, observed{evDeleteUnknown, ""})
	f.wantChanges(t, "changed-while-down", observed{evAdd, changedRV}, observed{evUpdate, changedRV2})

	// The relisted informer keeps following.
	afterRV := f.create(ctx, t, f.cs0, "after")
	f.remove(ctx, t, f.cs1, "stable")
	f.rec.wake.waitUntil(ctx, t, "changes after the relist",
		func() bool {
			return f.rec.lastIs("after", observed{evAdd, afterRV}) && f.rec.lastIs("stable", observed{evDelete, ""})
		},
		f.rec.String)
	if got, want := f.cacheState(), f.apiState(ctx, t); !maps.Equal(got, want) {
		t.Errorf("informer cache %v; the API has %v", got, want)
	}
}

// compactNow compacts etcd at its current revision and returns it.
func compactNow(ctx context.Context, t *testing.T, c *apiservertest.Cluster) int64 {
	t.Helper()
	cli := c.Etcd.Client()
	resp, err := cli.Get(ctx, "/registry/klab-test-compact")
	if err != nil {
		t.Fatal(err)
	}
	rev := resp.Header.Revision
	if _, err := cli.Compact(ctx, rev); err != nil {
		t.Fatalf("compact at %d: %v", rev, err)
	}
	return rev
}

// TestCompactedResourceVersions: a watch or a continued list from a
// revision etcd has compacted away ends in 410 Gone, reason Expired.
func TestCompactedResourceVersions(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := adminClient(t, c)
	ctx := testContext(t, testTimeout)
	const ns = "compacted"
	createNamespace(ctx, t, cs, ns)
	first, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "a", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b", "c", "d"} {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, name, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "e", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	compactNow(ctx, t, c)

	t.Run("watch", func(t *testing.T) {
		w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		defer w.Stop()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed without an event")
			}
			if ev.Type != watch.Error {
				t.Fatalf("first event %s %T; want ERROR", ev.Type, ev.Object)
			}
			st, ok := ev.Object.(*metav1.Status)
			if !ok {
				t.Fatalf("error event carries %T; want *v1.Status", ev.Object)
			}
			if st.Code != 410 || st.Reason != metav1.StatusReasonExpired || !strings.HasPrefix(st.Message, "too old resource version: ") {
				t.Errorf("status %d %s %q; want 410 Expired \"too old resource version: ...\"", st.Code, st.Reason, st.Message)
			}
		case <-ctx.Done():
			t.Fatal("no event from a watch at a compacted revision")
		}
	})
	t.Run("continue", func(t *testing.T) {
		_, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 2, Continue: page.Continue})
		wantStatus(t, err, 410, metav1.StatusReasonExpired, "")
	})
	t.Run("watch from now", func(t *testing.T) {
		// The current revision is still good to watch from.
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		created, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "f", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if ev.Type != watch.Added || !ok || cm.Name != "f" || cm.ResourceVersion != created.ResourceVersion {
				t.Errorf("event %s %v; want ADDED f@%s", ev.Type, ev.Object, created.ResourceVersion)
			}
		case <-ctx.Done():
			t.Fatal("no event for f")
		}
	})
}
