package namespace

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	core "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/klab-dev/klab/cluster/timing"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// discovered is what the fake discovery serves: core configmaps and pods,
// and apps deployments; bindings cannot be deleted and must be skipped.
var discovered = []*metav1.APIResourceList{
	{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "bindings", Namespaced: true, Verbs: []string{"create"}},
		{Name: "configmaps", Namespaced: true, Verbs: []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
		{Name: "pods", Namespaced: true, Verbs: []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
	}},
	{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "deployments", Namespaced: true, Verbs: []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
	}},
}

// deletingNamespace is ns1, deleted deletedAgo before t0.
func deletingNamespace(deletedAgo time.Duration, phase v1.NamespacePhase) *v1.Namespace {
	ts := metav1.NewTime(t0.Add(-deletedAgo))
	return &v1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "ns1", UID: "uid-ns1", DeletionTimestamp: &ts},
		Spec:       v1.NamespaceSpec{Finalizers: []v1.FinalizerName{v1.FinalizerKubernetes}},
		Status:     v1.NamespaceStatus{Phase: phase},
	}
}

func partial(apiVersion, kind, name string, finalizers ...string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name, Finalizers: finalizers},
	}
}

func terminatingPod(grace int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p1"},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &grace, NodeName: "n1"},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
}

func actionStrings(actions []core.Action) []string {
	var out []string
	for _, a := range actions {
		if a.GetVerb() == "watch" {
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			s += "/" + sub
		}
		name := ""
		switch a := a.(type) {
		case core.GetAction:
			name = a.GetName()
		case core.CreateAction:
			name = a.GetObject().(metav1.Object).GetName()
		case core.UpdateAction:
			name = a.GetObject().(metav1.Object).GetName()
		}
		if ns := a.GetNamespace(); ns != "" {
			name = ns + "/" + name
		}
		out = append(out, s+" "+name)
	}
	return out
}

// TestSync runs one sync of ns1 and checks the requests to the API server
// (typed and metadata clients), the outcome and the namespace afterwards.
func TestSync(t *testing.T) {
	cases := []struct {
		name      string
		speed     timing.Speed
		namespace *v1.Namespace
		pods      []*v1.Pod
		content   []runtime.Object // what the metadata client lists
		// wantRemaining is the estimate of a resourcesRemainingError.
		wantRemaining  int64
		wantErr        bool
		wantActions    []string
		wantMetadata   []string
		wantFinalized  bool
		wantConditions map[v1.NamespaceConditionType]string // type -> "Status Reason"
		wantMessageOf  v1.NamespaceConditionType
		wantMessage    string
	}{{
		name:        "namespace not being deleted is left alone",
		speed:       1,
		namespace:   &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1"}, Status: v1.NamespaceStatus{Phase: v1.NamespaceActive}},
		wantActions: []string{"get namespaces ns1"},
	}, {
		name:      "empty namespace is finalized",
		speed:     1,
		namespace: deletingNamespace(time.Minute, v1.NamespaceTerminating),
		wantActions: []string{
			"get namespaces ns1",
			"list pods ns1/",
			"update namespaces/status ns1",
			"create namespaces/finalize ns1",
		},
		wantMetadata: []string{
			"delete-collection configmaps ns1/", "list configmaps ns1/",
			"delete-collection pods ns1/", "list pods ns1/",
			"delete-collection deployments ns1/", "list deployments ns1/",
		},
		wantFinalized: true,
		wantConditions: map[v1.NamespaceConditionType]string{
			v1.NamespaceDeletionDiscoveryFailure: "False ResourcesDiscovered",
			v1.NamespaceDeletionGVParsingFailure: "False ParsedGroupVersions",
			v1.NamespaceDeletionContentFailure:   "False ContentDeleted",
			v1.NamespaceContentRemaining:         "False ContentRemoved",
			v1.NamespaceFinalizersRemaining:      "False ContentHasNoFinalizers",
		},
	}, {
		name:      "phase is set to Terminating first",
		speed:     1,
		namespace: deletingNamespace(time.Minute, v1.NamespaceActive),
		wantActions: []string{
			"get namespaces ns1",
			"update namespaces/status ns1",
			"list pods ns1/",
			"update namespaces/status ns1",
			"create namespaces/finalize ns1",
		},
		wantMetadata: []string{
			"delete-collection configmaps ns1/", "list configmaps ns1/",
			"delete-collection pods ns1/", "list pods ns1/",
			"delete-collection deployments ns1/", "list deployments ns1/",
		},
		wantFinalized: true,
	}, {
		name:          "content held by a finalizer is waited for",
		speed:         1,
		namespace:     deletingNamespace(time.Minute, v1.NamespaceTerminating),
		content:       []runtime.Object{partial("v1", "ConfigMap", "cm1", "example.com/keep")},
		wantRemaining: 15,
		wantActions:   []string{"get namespaces ns1", "list pods ns1/", "update namespaces/status ns1"},
		wantMetadata: []string{
			"delete-collection configmaps ns1/", "list configmaps ns1/",
			"delete-collection pods ns1/", "list pods ns1/",
			"delete-collection deployments ns1/", "list deployments ns1/",
		},
		wantConditions: map[v1.NamespaceConditionType]string{
			v1.NamespaceContentRemaining:    "True SomeResourcesRemain",
			v1.NamespaceFinalizersRemaining: "True SomeFinalizersRemain",
		},
		wantMessageOf: v1.NamespaceFinalizersRemaining,
		wantMessage:   "Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances",
	}, {
		name:          "pods within their grace period are waited for",
		speed:         1,
		namespace:     deletingNamespace(10*time.Second, v1.NamespaceTerminating),
		pods:          []*v1.Pod{terminatingPod(30)},
		content:       []runtime.Object{partial("v1", "Pod", "p1")},
		wantRemaining: 30,
		wantActions:   []string{"get namespaces ns1", "list pods ns1/", "update namespaces/status ns1"},
		wantMetadata: []string{
			"delete-collection configmaps ns1/", "list configmaps ns1/",
			"delete-collection pods ns1/", "list pods ns1/",
			"delete-collection deployments ns1/", "list deployments ns1/",
		},
		wantMessageOf: v1.NamespaceContentRemaining,
		wantMessage:   "Some resources are remaining: pods. has 1 resource instances",
	}, {
		name:        "pods past their grace period (divided by the speed) are an error",
		speed:       10, // 30 s of grace is 3 s
		namespace:   deletingNamespace(10*time.Second, v1.NamespaceTerminating),
		pods:        []*v1.Pod{terminatingPod(30)},
		content:     []runtime.Object{partial("v1", "Pod", "p1")},
		wantErr:     true,
		wantActions: []string{"get namespaces ns1", "list pods ns1/", "update namespaces/status ns1"},
		wantMetadata: []string{
			"delete-collection configmaps ns1/", "list configmaps ns1/",
			"delete-collection pods ns1/", "list pods ns1/",
			"delete-collection deployments ns1/", "list deployments ns1/",
		},
		wantConditions: map[v1.NamespaceConditionType]string{
			v1.NamespaceDeletionContentFailure: "True ContentDeletionFailed",
			v1.NamespaceContentRemaining:       "True SomeResourcesRemain",
		},
		wantMessageOf: v1.NamespaceDeletionContentFailure,
		wantMessage:   "Failed to delete all resource types, 1 remaining: unexpected items still remain in namespace: ns1 for gvr: /v1, Resource=pods",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects := []runtime.Object{tc.namespace}
			for _, p := range tc.pods {
				objects = append(objects, p)
			}
			client := fake.NewClientset(objects...)
			var finalized *v1.Namespace
			client.PrependReactor("create", "namespaces", func(a core.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "finalize" {
					return false, nil, nil
				}
				finalized = a.(core.CreateAction).GetObject().(*v1.Namespace)
				return true, finalized, nil
			})
			scheme := metadatafake.NewTestScheme()
			if err := metav1.AddMetaToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			md := metadatafake.NewSimpleMetadataClient(scheme, tc.content...)
			// The fake tracker cannot delete collections; the API server
			// would, except what finalizers or grace periods hold, which is
			// exactly what the cases keep in content.
			md.PrependReactor("delete-collection", "*", func(core.Action) (bool, runtime.Object, error) { return true, nil, nil })

			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := newController(client, md, func() ([]*metav1.APIResourceList, error) { return discovered, nil },
				factory.Core().V1().Namespaces(), tc.speed, nil, clocktesting.NewFakeClock(t0))
			if err != nil {
				t.Fatal(err)
			}
			if err := factory.Core().V1().Namespaces().Informer().GetIndexer().Add(tc.namespace); err != nil {
				t.Fatal(err)
			}

			err = c.sync(context.Background(), "ns1")
			var remaining *resourcesRemainingError
			switch {
			case tc.wantRemaining > 0:
				if !errors.As(err, &remaining) || remaining.Estimate != tc.wantRemaining {
					t.Errorf("sync = %v, want content remaining for %ds", err, tc.wantRemaining)
				}
			case tc.wantErr:
				if err == nil || errors.As(err, &remaining) {
					t.Errorf("sync = %v, want a failure", err)
				}
			case err != nil:
				t.Errorf("sync: %v", err)
			}
			if diff := cmp.Diff(tc.wantActions, actionStrings(client.Actions())); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMetadata, actionStrings(md.Actions())); diff != "" {
				t.Errorf("metadata actions (-want +got):\n%s", diff)
			}
			if tc.wantFinalized != (finalized != nil) {
				t.Fatalf("finalized = %v, want %v", finalized != nil, tc.wantFinalized)
			}
			if finalized != nil && len(finalized.Spec.Finalizers) != 0 {
				t.Errorf("finalize sent spec.finalizers %v, want none", finalized.Spec.Finalizers)
			}
			ns, err := client.CoreV1().Namespaces().Get(context.Background(), "ns1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for typ, want := range tc.wantConditions {
				cond := getCondition(ns.Status.Conditions, typ)
				if cond == nil || string(cond.Status)+" "+cond.Reason != want {
					t.Errorf("condition %s = %+v, want %s", typ, cond, want)
				}
			}
			if tc.wantMessageOf != "" {
				if cond := getCondition(ns.Status.Conditions, tc.wantMessageOf); cond == nil || cond.Message != tc.wantMessage {
					t.Errorf("condition %s message = %+v, want %q", tc.wantMessageOf, cond, tc.wantMessage)
				}
			}
		})
	}
}

// TestEnqueue checks that only namespaces being deleted are queued.
func TestEnqueue(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := newController(client, metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()), nil,
		factory.Core().V1().Namespaces(), 1000, nil, clocktesting.NewFakeClock(t0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.queue.ShutDown()
	c.enqueue(&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "active"}})
	c.enqueue(deletingNamespace(0, v1.NamespaceTerminating))
	// The deletion grace period is 5 s / 1000: Get returns once it is
	// over.
	got := make(chan string, 1)
	go func() {
		key, _ := c.queue.Get()
		got <- key
	}()
	var key string
	select {
	case key = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("nothing queued")
	}
	if key != "ns1" || c.queue.Len() != 0 {
		t.Errorf("queued %q (and %d more), want ns1 only", key, c.queue.Len())
	}
	c.queue.Done(key)
}
