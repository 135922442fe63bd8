package storage

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

var testRegistry = registry.New()

func lookup(t testing.TB, resource string) *registry.Resource {
	t.Helper()
	res, ok := testRegistry.Lookup(schema.GroupVersionResource{Version: "v1", Resource: resource})
	if !ok {
		t.Fatalf("no resource %s", resource)
	}
	return res
}

func testPod(ns, name, node string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// podAt returns a copy of p with resourceVersion rev.
func podAt(p *corev1.Pod, rev int64) *corev1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = strconv.FormatInt(rev, 10)
	return p
}

func podElement(res *registry.Resource, p *corev1.Pod, rev int64) *storeElement {
	p = podAt(p, rev)
	return newStoreElement(res, "spec.nodeName", res.Key(p.Namespace, p.Name), p)
}

// predicate parses selectors for res; "" selects everything.
func predicate(t testing.TB, res *registry.Resource, labelSelector, fieldSelector string) *Predicate {
	t.Helper()
	ls, err := labels.Parse(labelSelector)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := fields.ParseSelector(fieldSelector)
	if err != nil {
		t.Fatal(err)
	}
	pred, err := NewPredicate(res, ls, fs)
	if err != nil {
		t.Fatal(err)
	}
	return pred
}

// describe renders an event as "TYPE ns/name@rv node=N", or for a
// bookmark "BOOKMARK @rv" (with " end" for the initial-events-end one).
func describe(ev watch.Event) string {
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return fmt.Sprintf("%s %T", ev.Type, ev.Object)
	}
	if ev.Type == watch.Bookmark {
		s := fmt.Sprintf("BOOKMARK @%s", m.GetResourceVersion())
		if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			s += " end"
		}
		return s
	}
	s := fmt.Sprintf("%s %s/%s@%s", ev.Type, m.GetNamespace(), m.GetName(), m.GetResourceVersion())
	if p, ok := ev.Object.(*corev1.Pod); ok {
		s += " node=" + p.Spec.NodeName
	}
	return s
}

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) step(d time.Duration) { c.t = c.t.Add(d) }

// receive reads n events from w, failing after timeout.
func receive(t testing.TB, w watch.Interface, n int, timeout time.Duration) []string {
	t.Helper()
	var got []string
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for len(got) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d of %d events: %v", len(got), n, got)
			}
			got = append(got, describe(ev))
		case <-deadline.C:
			t.Fatalf("got %d of %d events in %v: %v", len(got), n, timeout, got)
		}
	}
	return got
}
