package garbagecollector

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
)

const ns = "default"

var (
	podsResource        = mustResource("v1", "Pod")
	configMapsResource  = mustResource("v1", "ConfigMap")
	nodesResource       = mustResource("v1", "Node")
	replicaSetsResource = mustResource("apps/v1", "ReplicaSet")
	deploymentsResource = mustResource("apps/v1", "Deployment")
)

func mustResource(apiVersion, kind string) resource {
	r, err := newRESTMapper(monitoredResources).resourceFor(apiVersion, kind)
	if err != nil {
		panic(err)
	}
	return r
}

// object is an object's metadata with the resource it belongs to.
type object struct {
	r    resource
	meta *metav1.PartialObjectMetadata
}

func newObject(r resource, name string, mutate ...func(*metav1.PartialObjectMetadata)) object {
	m := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: r.GroupVersion().String(), Kind: r.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
	}
	if r.Namespaced {
		m.Namespace = ns
	}
	for _, f := range mutate {
		f(m)
	}
	return object{r: r, meta: m}
}

// ownedBy adds an owner reference to owner.
func ownedBy(owner object, block bool) func(*metav1.PartialObjectMetadata) {
	return func(m *metav1.PartialObjectMetadata) {
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{
			APIVersion: owner.r.GroupVersion().String(), Kind: owner.r.Kind, Name: owner.meta.Name, UID: owner.meta.UID,
			BlockOwnerDeletion: &block,
		})
	}
}

// deleting marks the object deleted with the given finalizers, as the API
// server does for a foreground or orphan deletion.
func deleting(finalizers ...string) func(*metav1.PartialObjectMetadata) {
	return func(m *metav1.PartialObjectMetadata) {
		now := metav1.Now()
		m.DeletionTimestamp = &now
		m.Finalizers = append(m.Finalizers, finalizers...)
	}
}

func withUID(uid string) func(*metav1.PartialObjectMetadata) {
	return func(m *metav1.PartialObjectMetadata) { m.UID = types.UID(uid) }
}

// fixture holds a garbage collector whose graph is fed by hand and whose
// API is a fake metadata client holding the live objects.
type fixture struct {
	t      *testing.T
	client *metadatafake.FakeMetadataClient
	gc     *GarbageCollector
}

func newFixture(t *testing.T, live ...object) *fixture {
	t.Helper()
	client := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	for _, o := range live {
		if err := client.Tracker().Create(o.r.GroupVersionResource, o.meta.DeepCopy(), o.meta.Namespace); err != nil {
			t.Fatalf("add %s: %v", o.meta.Name, err)
		}
	}
	gc, err := newGarbageCollector(controllerctx.Context{
		Metadata:          client,
		MetadataInformers: metadatainformer.NewSharedInformerFactory(client, 0),
		Recorder:          func(string) record.EventRecorder { return record.NewFakeRecorder(10) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gc.graphChanges.ShutDown()
		gc.attemptToDelete.ShutDown()
		gc.attemptToOrphan.ShutDown()
	})
	return &fixture{t: t, client: client, gc: gc}
}

// observe feeds informer add events to the graph builder and applies them.
func (f *fixture) observe(objs ...object) {
	for _, o := range objs {
		f.gc.graphChanges.Add(&event{eventType: addEvent, resource: o.r, obj: o.meta})
	}
	f.processGraphChanges()
}

// processGraphChanges applies every queued graph event.
func (f *fixture) processGraphChanges() {
	for f.gc.graphChanges.Len() > 0 {
		f.gc.processGraphChanges()
	}
}

// drain empties a work queue and returns the identities it held.
func drain(q interface {
	Len() int
	Get() (*node, bool)
	Done(*node)
}) []string {
	var out []string
	for q.Len() > 0 {
		n, _ := q.Get()
		out = append(out, n.getIdentity().Name)
		q.Done(n)
	}
	return out
}

func (f *fixture) node(uid types.UID) *node {
	f.t.Helper()
	n, ok := f.gc.uidToNode.read(uid)
	if !ok {
		f.t.Fatalf("no node for %s in the graph", uid)
	}
	return n
}

// action is an expected API call: verb, resource, name, and for deletes
// the propagation policy, for patches the patch type and body.
type action struct {
	verb, resource, name string
	policy               metav1.DeletionPropagation
	patchType            types.PatchType
	patch                string
}

func get(r resource, name string) action {
	return action{verb: "get", resource: r.Resource, name: name}
}

func del(r resource, name string, policy metav1.DeletionPropagation) action {
	return action{verb: "delete", resource: r.Resource, name: name, policy: policy}
}

func patch(r resource, name string, pt types.PatchType, body string) action {
	return action{verb: "patch", resource: r.Resource, name: name, patchType: pt, patch: body}
}

func (f *fixture) checkActions(want []action) {
	f.t.Helper()
	got := f.client.Actions()
	if len(got) != len(want) {
		f.t.Fatalf("got %d actions %s; want %d %v", len(got), describe(got), len(want), want)
	}
	for i, w := range want {
		g := got[i]
		if g.GetVerb() != w.verb || g.GetResource().Resource != w.resource {
			f.t.Fatalf("action %d = %s %s; want %s %s", i, g.GetVerb(), g.GetResource().Resource, w.verb, w.resource)
		}
		// Get, delete and patch actions all have GetName, so the verb tells
		// them apart.
		switch g.GetVerb() {
		case "get":
			if a := g.(core.GetAction); a.GetName() != w.name {
				f.t.Errorf("action %d got %s; want %s", i, a.GetName(), w.name)
			}
		case "delete":
			a := g.(core.DeleteAction)
			opts := a.GetDeleteOptions()
			if a.GetName() != w.name || opts.PropagationPolicy == nil || *opts.PropagationPolicy != w.policy {
				f.t.Errorf("action %d deleted %s with %v; want %s with %s", i, a.GetName(), opts.PropagationPolicy, w.name, w.policy)
			}
			if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != types.UID("uid-"+w.name) {
				f.t.Errorf("action %d deleted %s without its UID as precondition: %+v", i, a.GetName(), opts.Preconditions)
			}
		case "patch":
			a := g.(core.PatchAction)
			if a.GetName() != w.name || a.GetPatchType() != w.patchType || !jsonEqual(a.GetPatch(), []byte(w.patch)) {
				f.t.Errorf("action %d patched %s with %s %s; want %s with %s %s", i, a.GetName(), a.GetPatchType(), a.GetPatch(), w.name, w.patchType, w.patch)
			}
		}
	}
}

func describe(actions []core.Action) string {
	s := ""
	for _, a := range actions {
		s += " " + a.GetVerb() + " " + a.GetResource().Resource
	}
	return "[" + s + " ]"
}

func jsonEqual(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
