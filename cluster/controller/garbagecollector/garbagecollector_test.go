package garbagecollector

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const custom = "example.com/keep"

func TestAttemptToDeleteItem(t *testing.T) {
	owner := newObject(configMapsResource, "owner")
	other := newObject(configMapsResource, "other")
	ownerDeletingDependents := newObject(configMapsResource, "owner", deleting(metav1.FinalizerDeleteDependents))
	ownerReplaced := newObject(configMapsResource, "owner", withUID("uid-a-new-owner"))
	deploy := newObject(deploymentsResource, "deploy", deleting(metav1.FinalizerDeleteDependents))
	rs := newObject(replicaSetsResource, "rs", ownedBy(deploy, true))
	rsPod := newObject(podsResource, "rs-pod", ownedBy(rs, true))

	pod := newObject(podsResource, "pod", ownedBy(owner, true))
	twoOwners := newObject(podsResource, "pod", ownedBy(owner, true), ownedBy(other, false))
	orphanFinalized := newObject(podsResource, "pod", ownedBy(owner, true), func(m *metav1.PartialObjectMetadata) {
		m.Finalizers = []string{metav1.FinalizerOrphanDependents}
	})

	tests := []struct {
		name     string
		live     []object // in the API
		observed []object // in the graph
		item     string   // UID of the node to process
		want     []action
	}{
		{
			name:     "background: a dependent whose only owner is gone is deleted",
			live:     []object{pod},
			observed: []object{pod},
			item:     "uid-pod",
			want: []action{get(podsResource, "pod"), get(configMapsResource, "owner"),
				del(podsResource, "pod", metav1.DeletePropagationBackground)},
		},
		{
			name:     "a dependent with a second live owner only loses the dead reference",
			live:     []object{twoOwners, other},
			observed: []object{twoOwners, other},
			item:     "uid-pod",
			want: []action{get(podsResource, "pod"), get(configMapsResource, "owner"), get(configMapsResource, "other"),
				patch(podsResource, "pod", types.StrategicMergePatchType,
					`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"uid-owner"}],"uid":"uid-pod"}}`)},
		},
		{
			name:     "a dependent with a live owner stays",
			live:     []object{pod, owner},
			observed: []object{owner, pod},
			item:     "uid-pod",
			want:     []action{get(podsResource, "pod"), get(configMapsResource, "owner")},
		},
		{
			name:     "an owner replaced by a new object of the same name is gone",
			live:     []object{pod, ownerReplaced},
			observed: []object{pod},
			item:     "uid-pod",
			want: []action{get(podsResource, "pod"), get(configMapsResource, "owner"),
				del(podsResource, "pod", metav1.DeletePropagationBackground)},
		},
		{
			name:     "a dependent of an owner deleting its dependents is deleted",
			live:     []object{pod, ownerDeletingDependents},
			observed: []object{ownerDeletingDependents, pod},
			item:     "uid-pod",
			want: []action{get(podsResource, "pod"), get(configMapsResource, "owner"),
				del(podsResource, "pod", metav1.DeletePropagationBackground)},
		},
		{
			name:     "foreground: a dependent with dependents of its own is deleted in the foreground",
			live:     []object{deploy, rs, rsPod},
			observed: []object{deploy, rs, rsPod},
			item:     "uid-rs",
			want: []action{get(replicaSetsResource, "rs"), get(deploymentsResource, "deploy"),
				del(replicaSetsResource, "rs", metav1.DeletePropagationForeground)},
		},
		{
			name:     "an orphan finalizer already on the dependent is honoured",
			live:     []object{orphanFinalized},
			observed: []object{orphanFinalized},
			item:     "uid-pod",
			want: []action{get(podsResource, "pod"), get(configMapsResource, "owner"),
				del(podsResource, "pod", metav1.DeletePropagationOrphan)},
		},
		{
			name:     "an object without owners stays",
			live:     []object{owner},
			observed: []object{owner},
			item:     "uid-owner",
			want:     []action{get(configMapsResource, "owner")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.live...)
			f.observe(tt.observed...)
			f.client.ClearActions()
			if err := f.gc.attemptToDeleteItem(context.Background(), f.node(types.UID(tt.item))); err != nil {
				t.Fatalf("attemptToDeleteItem: %v", err)
			}
			f.checkActions(tt.want)
		})
	}
}

func TestForegroundOwner(t *testing.T) {
	tests := []struct {
		name          string
		dependents    []object
		want          []action
		wantRequeued  []string
		ownerFinalize []string
	}{
		{
			name:         "waits while a blocking dependent exists",
			dependents:   []object{newObject(podsResource, "blocking", ownedBy(newObject(configMapsResource, "owner"), true))},
			want:         []action{get(configMapsResource, "owner")},
			wantRequeued: []string{"blocking"},
		},
		{
			name:       "removes foregroundDeletion once only non-blocking dependents are left",
			dependents: []object{newObject(podsResource, "free", ownedBy(newObject(configMapsResource, "owner"), false))},
			want: []action{get(configMapsResource, "owner"), get(configMapsResource, "owner"),
				patch(configMapsResource, "owner", types.MergePatchType, `{"metadata":{"finalizers":["`+custom+`"],"resourceVersion":"1"}}`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner := newObject(configMapsResource, "owner", deleting(metav1.FinalizerDeleteDependents, custom))
			live := append([]object{owner}, tt.dependents...)
			f := newFixture(t, live...)
			f.observe(live...)
			drain(f.gc.attemptToDelete) // what observing queued
			f.client.ClearActions()
			if err := f.gc.attemptToDeleteItem(context.Background(), f.node("uid-owner")); err != nil {
				t.Fatalf("attemptToDeleteItem: %v", err)
			}
			f.checkActions(tt.want)
			if got := drain(f.gc.attemptToDelete); !slices.Equal(got, tt.wantRequeued) {
				t.Errorf("queued %v for deletion; want %v", got, tt.wantRequeued)
			}
		})
	}
}

func TestAttemptToOrphan(t *testing.T) {
	owner := newObject(configMapsResource, "owner", deleting(metav1.FinalizerOrphanDependents))
	a := newObject(podsResource, "a", ownedBy(owner, true))
	b := newObject(podsResource, "b", ownedBy(owner, false), ownedBy(newObject(configMapsResource, "other"), false))
	f := newFixture(t, owner, a, b)
	f.observe(owner, a, b)
	if got := drain(f.gc.attemptToOrphan); !slices.Equal(got, []string{"owner"}) {
		t.Fatalf("queued %v to orphan; want [owner]", got)
	}
	f.client.ClearActions()
	if err := f.gc.attemptToOrphanItem(context.Background(), f.node("uid-owner")); err != nil {
		t.Fatal(err)
	}
	f.checkActions([]action{
		patch(podsResource, "a", types.StrategicMergePatchType, `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"uid-owner"}],"uid":"uid-a"}}`),
		patch(podsResource, "b", types.StrategicMergePatchType, `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"uid-owner"}],"uid":"uid-b"}}`),
		get(configMapsResource, "owner"),
		patch(configMapsResource, "owner", types.MergePatchType, `{"metadata":{"finalizers":null,"resourceVersion":"1"}}`),
	})
}

func TestAttemptToDeleteWorker(t *testing.T) {
	ghost := newObject(configMapsResource, "ghost")
	t.Run("a virtual owner that does not exist leaves the graph and its dependents are checked", func(t *testing.T) {
		pod := newObject(podsResource, "pod", ownedBy(ghost, true))
		f := newFixture(t, pod)
		f.observe(pod)
		if got := drain(f.gc.attemptToDelete); !slices.Equal(got, []string{"ghost"}) {
			t.Fatalf("queued %v; want the virtual owner [ghost]", got)
		}
		f.client.ClearActions()
		if retry := f.gc.attemptToDeleteWorker(context.Background(), f.node("uid-ghost")); retry {
			t.Error("worker asked to retry a virtual node found absent")
		}
		f.checkActions([]action{get(configMapsResource, "ghost")})
		f.processGraphChanges()
		if _, ok := f.gc.uidToNode.read("uid-ghost"); ok {
			t.Error("absent virtual owner is still in the graph")
		}
		if got := drain(f.gc.attemptToDelete); !slices.Equal(got, []string{"pod"}) {
			t.Errorf("queued %v; want the dependent [pod]", got)
		}
	})
	t.Run("a cluster-scoped object with a namespaced owner is never collected", func(t *testing.T) {
		node := newObject(nodesResource, "node-1", ownedBy(ghost, false))
		f := newFixture(t, node)
		f.observe(node)
		f.client.ClearActions()
		err := f.gc.attemptToDeleteItem(context.Background(), f.node("uid-node-1"))
		if !errors.Is(err, errNamespacedOwnerOfClusterScopedObject) {
			t.Errorf("attemptToDeleteItem = %v; want %v", err, errNamespacedOwnerOfClusterScopedObject)
		}
		if f.gc.attemptToDeleteWorker(context.Background(), f.node("uid-node-1")) {
			t.Error("worker asked to retry an unresolvable reference")
		}
		f.checkActions([]action{get(nodesResource, "node-1"), get(nodesResource, "node-1")})
	})
	t.Run("an owner of a kind klab does not serve keeps its dependent, retried", func(t *testing.T) {
		pod := newObject(podsResource, "pod", func(m *metav1.PartialObjectMetadata) {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler", Name: "db", UID: "uid-db"}}
		})
		f := newFixture(t, pod)
		f.observe(pod)
		f.client.ClearActions()
		if !f.gc.attemptToDeleteWorker(context.Background(), f.node("uid-pod")) {
			t.Error("worker did not ask to retry")
		}
		f.checkActions([]action{get(podsResource, "pod")})
	})
}
