package storage

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// revisions returns the revisions of events.
func revisions(events []*watchCacheEvent) []int64 {
	out := []int64{}
	for _, ev := range events {
		out = append(out, ev.rev)
	}
	return out
}

// TestEventsSince: a watch resumes from any revision the buffer still
// leads on from, and gets 410 "too old resource version" before that.
func TestEventsSince(t *testing.T) {
	res := lookup(t, "pods")
	tests := []struct {
		name     string
		capacity int
		since    int64
		want     []int64
		wantErr  string
	}{
		{name: "from the list revision, nothing evicted", capacity: 8, since: 10, want: []int64{11, 12, 13, 14, 15, 16}},
		{name: "before the list revision", capacity: 8, since: 9, wantErr: "too old resource version: 9 (10)"},
		{name: "from inside the buffer", capacity: 8, since: 13, want: []int64{14, 15, 16}},
		{name: "from the newest revision", capacity: 8, since: 16, want: []int64{}},
		{name: "from the newest evicted revision", capacity: 4, since: 12, want: []int64{13, 14, 15, 16}},
		{name: "older than the buffer", capacity: 4, since: 11, wantErr: "too old resource version: 11 (12)"},
		{name: "the list revision after evictions", capacity: 4, since: 10, wantErr: "too old resource version: 10 (12)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			wc := newWatchCache(tt.capacity, tt.capacity, clock.now)
			wc.replace(nil, 10)
			for rev := int64(11); rev <= 16; rev++ {
				wc.apply(res.Key("ns", "a"), rev, podElement(res, testPod("ns", "a", "", nil), rev))
			}
			got, err := wc.eventsSinceLocked(tt.since)
			if tt.wantErr != "" {
				if !apierrors.IsResourceExpired(err) || err.Error() != tt.wantErr {
					t.Fatalf("error %v; want 410 Expired %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(revisions(got), tt.want) {
				t.Errorf("events at %v; want %v", revisions(got), tt.want)
			}
		})
	}
}

// TestEventsSinceSharedRevision: when one of two changes written in the
// same etcd transaction leaves the buffer, a watch from just before that
// revision would miss it, so it is too old.
func TestEventsSinceSharedRevision(t *testing.T) {
	res := lookup(t, "pods")
	wc := newWatchCache(3, 3, newFakeClock().now)
	wc.replace(nil, 10)
	wc.apply(res.Key("ns", "a"), 11, podElement(res, testPod("ns", "a", "", nil), 11))
	wc.apply(res.Key("ns", "b"), 11, podElement(res, testPod("ns", "b", "", nil), 11))
	wc.apply(res.Key("ns", "a"), 12, podElement(res, testPod("ns", "a", "n", nil), 12))
	wc.apply(res.Key("ns", "a"), 13, podElement(res, testPod("ns", "a", "m", nil), 13))

	if _, err := wc.eventsSinceLocked(10); !apierrors.IsResourceExpired(err) {
		t.Errorf("since 10: %v; want 410 Expired", err)
	}
	got, err := wc.eventsSinceLocked(11)
	if err != nil || !slices.Equal(revisions(got), []int64{12, 13}) {
		t.Errorf("since 11: %v, %v; want [12 13]", revisions(got), err)
	}
}

// TestApply: each change becomes the event its watchers need, with the
// previous state, and the store and its index follow.
func TestApply(t *testing.T) {
	res := lookup(t, "pods")
	key := res.Key("ns", "a")
	type step struct {
		name      string
		node      string // "-" deletes
		rev       int64
		wantType  watch.EventType // "" for no event
		wantObj   string          // node and resourceVersion of the event's object
		wantPrev  string          // of its previous object, "" if none
		wantIndex map[string][]string
	}
	steps := []step{
		{name: "create", node: "node-1", rev: 11, wantType: watch.Added, wantObj: "node-1@11",
			wantIndex: map[string][]string{"node-1": {key}}},
		{name: "update", node: "node-1", rev: 12, wantType: watch.Modified, wantObj: "node-1@12", wantPrev: "node-1@11",
			wantIndex: map[string][]string{"node-1": {key}}},
		{name: "move to another node", node: "node-2", rev: 13, wantType: watch.Modified, wantObj: "node-2@13", wantPrev: "node-1@12",
			wantIndex: map[string][]string{"node-2": {key}}},
		{name: "delete: the last state at the deletion's revision", node: "-", rev: 14, wantType: watch.Deleted, wantObj: "node-2@14", wantPrev: "node-2@13",
			wantIndex: map[string][]string{}},
		{name: "delete of an unknown object", node: "-", rev: 15, wantIndex: map[string][]string{}},
	}
	wc := newWatchCache(8, 8, newFakeClock().now)
	wc.replace(nil, 10)
	render := func(e *storeElement) string {
		if e == nil {
			return ""
		}
		p := e.obj.(*corev1.Pod)
		return p.Spec.NodeName + "@" + p.ResourceVersion
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			var cur *storeElement
			if s.node != "-" {
				cur = podElement(res, testPod("ns", "a", s.node, nil), s.rev)
			}
			ev := wc.apply(key, s.rev, cur)
			switch {
			case s.wantType == "" && ev != nil:
				t.Errorf("event %s; want none", ev.typ)
			case s.wantType != "" && ev == nil:
				t.Errorf("no event; want %s", s.wantType)
			case ev != nil:
				if ev.typ != s.wantType || render(ev.cur) != s.wantObj || render(ev.prev) != s.wantPrev {
					t.Errorf("event %s %s (prev %q); want %s %s (prev %q)", ev.typ, render(ev.cur), render(ev.prev), s.wantType, s.wantObj, s.wantPrev)
				}
			}
			if wc.rev != s.rev {
				t.Errorf("cache at revision %d; want %d", wc.rev, s.rev)
			}
			gotIndex := map[string][]string{}
			for value, byKey := range wc.byIndex {
				for k := range byKey {
					gotIndex[value] = append(gotIndex[value], k)
				}
			}
			if fmt.Sprint(gotIndex) != fmt.Sprint(s.wantIndex) {
				t.Errorf("index %v; want %v", gotIndex, s.wantIndex)
			}
		})
	}
}

// TestBufferResize: the buffer grows while the events it would drop are
// fresh, and shrinks when even its newest quarter is stale.
func TestBufferResize(t *testing.T) {
	res := lookup(t, "pods")
	tests := []struct {
		name string
		// run appends events through add, moving the clock.
		run          func(add func(), clock *fakeClock)
		wantCapacity int
		wantSize     int
	}{
		{name: "grows while events are fresh", run: func(add func(), clock *fakeClock) {
			for range 12 {
				add()
				clock.step(time.Second)
			}
		}, wantCapacity: 16, wantSize: 12},
		{name: "stops at the upper bound", run: func(add func(), clock *fakeClock) {
			for range 20 {
				add()
				clock.step(time.Second)
			}
		}, wantCapacity: 16, wantSize: 16},
		{name: "does not grow to keep stale events", run: func(add func(), clock *fakeClock) {
			for range 4 {
				add()
			}
			clock.step(2 * eventFreshDuration)
			add()
		}, wantCapacity: 4, wantSize: 4},
		{name: "shrinks when the newest quarter is stale", run: func(add func(), clock *fakeClock) {
			for range 16 {
				add()
			}
			clock.step(2 * eventFreshDuration)
			add()
		}, wantCapacity: 8, wantSize: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			wc := newWatchCache(4, 16, clock.now)
			wc.replace(nil, 10)
			rev := int64(10)
			add := func() {
				rev++
				wc.apply(res.Key("ns", "a"), rev, podElement(res, testPod("ns", "a", "", nil), rev))
			}
			tt.run(add, clock)
			if wc.capacity() != tt.wantCapacity || wc.size() != tt.wantSize {
				t.Errorf("capacity %d, size %d; want %d, %d", wc.capacity(), wc.size(), tt.wantCapacity, tt.wantSize)
			}
			// Whatever was dropped, the buffer still leads on without gaps
			// from the oldest revision it admits.
			events, err := wc.eventsSinceLocked(wc.oldestRevisionLocked())
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != wc.size() || events[len(events)-1].rev != rev {
				t.Errorf("from the oldest revision: %v; want the %d newest events up to %d", revisions(events), wc.size(), rev)
			}
			for i := 1; i < len(events); i++ {
				if events[i].rev != events[i-1].rev+1 {
					t.Errorf("gap in the buffer: %v", revisions(events))
					break
				}
			}
		})
	}
}

// TestSnapshot: the initial events of a watch, from the whole store or
// from the index when the selector pins the indexed field.
func TestSnapshot(t *testing.T) {
	res := lookup(t, "pods")
	wc := newWatchCache(8, 8, newFakeClock().now)
	var elems []*storeElement
	for i, p := range []*corev1.Pod{
		testPod("ns-a", "p1", "node-1", map[string]string{"app": "web"}),
		testPod("ns-a", "p2", "node-2", map[string]string{"app": "db"}),
		testPod("ns-b", "p3", "node-1", map[string]string{"app": "web"}),
		testPod("ns-b", "p4", "", nil),
	} {
		elems = append(elems, podElement(res, p, int64(i+2)))
	}
	wc.replace(elems, 10)
	tests := []struct {
		name           string
		namespace      string
		labels, fields string
		indexed        bool
		indexValue     string
		want           []string
	}{
		{name: "everything", want: []string{"ns-a/p1", "ns-a/p2", "ns-b/p3", "ns-b/p4"}},
		{name: "one namespace", namespace: "ns-b", want: []string{"ns-b/p3", "ns-b/p4"}},
		{name: "label selector", labels: "app=web", want: []string{"ns-a/p1", "ns-b/p3"}},
		{name: "by the index", fields: "spec.nodeName=node-1", indexed: true, indexValue: "node-1", want: []string{"ns-a/p1", "ns-b/p3"}},
		{name: "unscheduled pods by the index", fields: "spec.nodeName=", indexed: true, indexValue: "", want: []string{"ns-b/p4"}},
		{name: "index, namespace and labels", namespace: "ns-a", labels: "app=web", fields: "spec.nodeName=node-1", indexed: true, indexValue: "node-1", want: []string{"ns-a/p1"}},
		{name: "index value nobody has", fields: "spec.nodeName=node-9", indexed: true, indexValue: "node-9", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wc.snapshotLocked(res.Prefix(tt.namespace), predicate(t, res, tt.labels, tt.fields), tt.indexValue, tt.indexed)
			sortByKey(got)
			var names []string
			for _, e := range got {
				p := e.obj.(*corev1.Pod)
				names = append(names, p.Namespace+"/"+p.Name)
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("snapshot %v; want %v", names, tt.want)
			}
		})
	}
}

// TestTimeBudget: the dispatcher's allowance for blocked watchers.
func TestTimeBudget(t *testing.T) {
	clock := newFakeClock()
	b := newTimeBudget(clock.now)
	steps := []struct {
		name    string
		elapsed time.Duration
		unused  time.Duration
		want    time.Duration
	}{
		{name: "full at the start", want: maxDispatchBudget},
		{name: "what was given back", unused: 30 * time.Millisecond, want: 30 * time.Millisecond},
		{name: "refilled by a second", elapsed: time.Second, want: dispatchBudgetPerSecond},
		{name: "never above the maximum", elapsed: time.Minute, unused: maxDispatchBudget, want: maxDispatchBudget},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			b.returnUnused(s.unused)
			clock.step(s.elapsed)
			if got := b.takeAvailable(); got != s.want {
				t.Errorf("available %v; want %v", got, s.want)
			}
		})
	}
}
