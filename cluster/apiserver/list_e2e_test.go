package apiserver_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
)

// TestSelectors: label selectors, and the field selectors upstream
// supports for pods (spec.nodeName, status.phase, ...).
func TestSelectors(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := adminClient(t, c)
	ctx := testContext(t, testTimeout)
	const ns = "selectors"
	createNamespace(ctx, t, cs, ns)

	for name, labels := range map[string]map[string]string{
		"web-1": {"app": "web", "tier": "frontend"},
		"web-2": {"app": "web"},
		"db-1":  {"app": "db", "tier": "backend"},
		"plain": nil,
	} {
		cm := configMap(ns, name, nil)
		cm.Labels = labels
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Pods: on node-1, on node-2, unscheduled; one of them Running.
	for _, p := range []*corev1.Pod{pod(ns, "p-node1", "node-1"), pod(ns, "p-node2", "node-2"), pod(ns, "p-pending", "")} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	running, err := cs.CoreV1().Pods(ns).Get(ctx, "p-node2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running.Status.Phase = corev1.PodRunning
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, running, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}

	t.Run("labels", func(t *testing.T) {
		for _, tc := range []struct {
			selector string
			want     []string
		}{
			{"app=web", []string{"web-1", "web-2"}},
			{"app in (web,db)", []string{"db-1", "web-1", "web-2"}},
			{"app!=web", []string{"db-1", "plain"}},
			{"tier", []string{"db-1", "web-1"}},
			{"!tier", []string{"plain", "web-2"}},
			{"app=web,tier=frontend", []string{"web-1"}},
			{"app notin (web),tier", []string{"db-1"}},
			{"app=nothing", []string{}},
		} {
			t.Run(tc.selector, func(t *testing.T) {
				list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: tc.selector})
				if err != nil {
					t.Fatal(err)
				}
				if got := names(ptrs(list.Items)); !equalStrings(got, tc.want) {
					t.Errorf("got %v; want %v", got, tc.want)
				}
			})
		}
		_, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=(web"})
		wantStatus(t, err, 400, metav1.StatusReasonBadRequest, "")
	})

	t.Run("fields", func(t *testing.T) {
		for _, tc := range []struct {
			selector string
			want     []string
		}{
			{"spec.nodeName=node-1", []string{"p-node1"}},
			{"spec.nodeName=", []string{"p-pending"}},
			{"spec.nodeName!=node-1", []string{"p-node2", "p-pending"}},
			{"status.phase=Running", []string{"p-node2"}},
			{"status.phase=Pending", []string{"p-node1", "p-pending"}},
			{"status.phase!=Running,spec.nodeName!=", []string{"p-node1"}},
			{"metadata.name=p-pending", []string{"p-pending"}},
			{"metadata.namespace=" + ns, []string{"p-node1", "p-node2", "p-pending"}},
		} {
			t.Run(tc.selector, func(t *testing.T) {
				list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: tc.selector})
				if err != nil {
					t.Fatal(err)
				}
				if got := names(ptrs(list.Items)); !equalStrings(got, tc.want) {
					t.Errorf("got %v; want %v", got, tc.want)
				}
			})
		}
		// Across namespaces, as a kubelet lists its pods.
		all, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-2"})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(ptrs(all.Items)); !equalStrings(got, []string{"p-node2"}) {
			t.Errorf("all namespaces, spec.nodeName=node-2: %v; want [p-node2]", got)
		}
		for _, tc := range []struct{ resource, selector, field string }{
			{"pods", "spec.foo=bar", "spec.foo"},
			{"configmaps", "data.k=v", "data.k"},
		} {
			t.Run("unsupported "+tc.resource, func(t *testing.T) {
				var err error
				if tc.resource == "pods" {
					_, err = cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: tc.selector})
				} else {
					_, err = cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{FieldSelector: tc.selector})
				}
				wantStatus(t, err, 400, metav1.StatusReasonBadRequest, "field label not supported: "+tc.field)
			})
		}
	})
}

// TestPaging: limit/continue returns every object exactly once, from one
// consistent snapshot even while objects come and go between pages.
func TestPaging(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := adminClient(t, c)
	ctx := testContext(t, testTimeout)
	const ns, total, limit = "paging", 25, 7
	createNamespace(ctx, t, cs, ns)
	var want []string
	for i := range total {
		name := fmt.Sprintf("cm-%02d", i)
		want = append(want, name)
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, name, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var got []string
	seen := map[string]int{}
	opts := metav1.ListOptions{Limit: limit}
	snapshot := ""
	for page := 1; ; page++ {
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if page == 1 {
			snapshot = list.ResourceVersion
			// Changes after the first page are not in this list.
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "cm-late", nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "cm-20", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		} else if list.ResourceVersion != snapshot {
			t.Errorf("page %d resourceVersion %s; want the first page's %s", page, list.ResourceVersion, snapshot)
		}
		if len(list.Items) > limit {
			t.Errorf("page %d has %d items; limit %d", page, len(list.Items), limit)
		}
		for _, cm := range list.Items {
			got = append(got, cm.Name)
			seen[cm.Name]++
		}
		remaining := total - len(got)
		if list.Continue == "" {
			if list.RemainingItemCount != nil {
				t.Errorf("last page has remainingItemCount %d", *list.RemainingItemCount)
			}
			break
		}
		if list.RemainingItemCount == nil || *list.RemainingItemCount != int64(remaining) {
			t.Errorf("page %d remainingItemCount = %v; want %d", page, list.RemainingItemCount, remaining)
		}
		if page > total {
			t.Fatal("paging does not end")
		}
		opts.Continue = list.Continue
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", name, n)
		}
	}
	if !equalStrings(got, want) {
		t.Errorf("paged list = %v\nwant %v", got, want)
	}

	// A continue token with a resourceVersion is refused, as upstream.
	first, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: limit, Continue: first.Continue, ResourceVersion: first.ResourceVersion})
	wantStatus(t, err, 400, metav1.StatusReasonBadRequest, "specifying resource version is not allowed when using continue")

	// A fresh list sees the changes.
	fresh, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	freshNames := names(ptrs(fresh.Items))
	if len(freshNames) != total || freshNames[total-1] != "cm-late" {
		t.Errorf("fresh list = %v; want cm-20 gone and cm-late there", freshNames)
	}
	for _, n := range freshNames {
		if n == "cm-20" {
			t.Errorf("fresh list still holds cm-20")
		}
	}
}
