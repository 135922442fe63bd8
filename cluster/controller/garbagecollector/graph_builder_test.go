package garbagecollector

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestProcessGraphChanges(t *testing.T) {
	owner := newObject(configMapsResource, "owner")
	a := newObject(podsResource, "a", ownedBy(owner, true))
	b := newObject(podsResource, "b", ownedBy(owner, false))
	aUnblocked := newObject(podsResource, "a", ownedBy(owner, false))
	aFreed := newObject(podsResource, "a")

	tests := []struct {
		name     string
		observed []object
		events   []*event
		// wantDelete and wantOrphan are the names queued afterwards.
		wantDelete, wantOrphan []string
		check                  func(t *testing.T, f *fixture)
	}{
		{
			name:       "a dependent seen first makes a virtual owner, checked once",
			observed:   []object{a},
			wantDelete: []string{"owner"},
			check: func(t *testing.T, f *fixture) {
				if f.node("uid-owner").isObserved() {
					t.Error("owner known only from a reference is not virtual")
				}
				f.observe(owner)
				if !f.node("uid-owner").isObserved() {
					t.Error("owner seen by an informer is still virtual")
				}
			},
		},
		{
			name:       "an owner's deletion queues its dependents",
			observed:   []object{owner, a, b},
			events:     []*event{{eventType: deleteEvent, resource: owner.r, obj: owner.meta}},
			wantDelete: []string{"a", "b"},
			check: func(t *testing.T, f *fixture) {
				if _, ok := f.gc.uidToNode.read("uid-owner"); ok {
					t.Error("deleted owner still in the graph")
				}
				gone := objectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-owner", Namespace: ns}
				if _, ok := f.gc.absentOwnerCache.Get(gone); !ok {
					t.Error("deleted owner not remembered as absent")
				}
			},
		},
		{
			name:     "foreground deletion starts: dependents and owner queued",
			observed: []object{owner, a, b},
			events: []*event{{eventType: updateEvent, resource: owner.r, oldObj: owner.meta,
				obj: newObject(configMapsResource, "owner", deleting(metav1.FinalizerDeleteDependents)).meta}},
			wantDelete: []string{"a", "b", "owner"},
			check: func(t *testing.T, f *fixture) {
				if !f.node("uid-owner").isDeletingDependents() {
					t.Error("owner not marked deletingDependents")
				}
				if got := names(f.node("uid-owner").blockingDependents()); !slices.Equal(got, []string{"a"}) {
					t.Errorf("blocking dependents %v; want [a]", got)
				}
			},
		},
		{
			name:     "orphan deletion starts: owner queued to orphan",
			observed: []object{owner, a},
			events: []*event{{eventType: updateEvent, resource: owner.r, oldObj: owner.meta,
				obj: newObject(configMapsResource, "owner", deleting(metav1.FinalizerOrphanDependents)).meta}},
			wantOrphan: []string{"owner"},
		},
		{
			name:       "a dependent unblocking its owner queues the owner",
			observed:   []object{owner, a},
			events:     []*event{{eventType: updateEvent, resource: a.r, oldObj: a.meta, obj: aUnblocked.meta}},
			wantDelete: []string{"owner"},
		},
		{
			name:       "a dependent dropping its reference leaves the owner's dependents",
			observed:   []object{owner, a},
			events:     []*event{{eventType: updateEvent, resource: a.r, oldObj: a.meta, obj: aFreed.meta}},
			wantDelete: []string{"owner"},
			check: func(t *testing.T, f *fixture) {
				if deps := f.node("uid-owner").getDependents(); len(deps) != 0 {
					t.Errorf("owner still has dependents %v", names(deps))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.observe(tt.observed...)
			if len(tt.events) > 0 {
				drain(f.gc.attemptToDelete) // queued while observing
				for _, ev := range tt.events {
					f.gc.graphChanges.Add(ev)
				}
				f.processGraphChanges()
			}
			if got := drain(f.gc.attemptToDelete); !slices.Equal(got, tt.wantDelete) {
				t.Errorf("queued %v for deletion; want %v", got, tt.wantDelete)
			}
			if got := drain(f.gc.attemptToOrphan); !slices.Equal(got, tt.wantOrphan) {
				t.Errorf("queued %v to orphan; want %v", got, tt.wantOrphan)
			}
			if tt.check != nil {
				tt.check(t, f)
			}
		})
	}
}

func names(nodes []*node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.getIdentity().Name)
	}
	return out
}
