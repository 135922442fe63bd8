package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
)

// crudClient is what client-go's typed clients have in common.
type crudClient[T, L any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
	List(context.Context, metav1.ListOptions) (L, error)
}

type apiObject interface {
	metav1.Object
	runtime.Object
}

// kindInfo says where an object of a kind is kept and how upstream names
// its resource in messages.
type kindInfo struct {
	apiVersion, kind string
	// groupResource as messages print it: "configmaps", "deployments.apps".
	groupResource string
	// storagePrefix is /registry/<resource>.
	storagePrefix string
	// markedOnDelete: a DELETE only marks the object (namespaces wait for
	// the namespace controller).
	markedOnDelete bool
}

func (k kindInfo) key(namespace, name string) string {
	if namespace == "" {
		return k.storagePrefix + "/" + name
	}
	return k.storagePrefix + "/" + namespace + "/" + name
}

// roundTrip takes an object through create, get, update, a stale update,
// list and delete, checking after each write that the resourceVersion is
// the etcd revision of the object's key and that etcd holds it as JSON.
func roundTrip[T apiObject, L runtime.Object](ctx context.Context, t *testing.T, etcd *clientv3.Client, client crudClient[T, L], k kindInfo, obj T) {
	t.Helper()
	name, namespace := obj.GetName(), obj.GetNamespace()
	created, err := client.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if ts := created.GetCreationTimestamp(); created.GetUID() == "" || created.GetResourceVersion() == "" || ts.IsZero() {
		t.Errorf("created object lacks uid/resourceVersion/creationTimestamp: %q %q %v", created.GetUID(), created.GetResourceVersion(), ts)
	}
	checkStored(ctx, t, etcd, k, namespace, name, created.GetResourceVersion())

	if _, err := client.Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: err = %v; want AlreadyExists", err)
	} else {
		wantStatus(t, err, 409, metav1.StatusReasonAlreadyExists, fmt.Sprintf("%s %q already exists", k.groupResource, name))
	}

	got, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.GetUID() != created.GetUID() || got.GetResourceVersion() != created.GetResourceVersion() {
		t.Errorf("get = uid %s rv %s; want uid %s rv %s", got.GetUID(), got.GetResourceVersion(), created.GetUID(), created.GetResourceVersion())
	}

	labels := got.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["crud"] = "updated"
	got.SetLabels(labels)
	updated, err := client.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if revision(t, updated.GetResourceVersion()) <= revision(t, created.GetResourceVersion()) {
		t.Errorf("update resourceVersion %s is not after the create's %s", updated.GetResourceVersion(), created.GetResourceVersion())
	}
	if updated.GetUID() != created.GetUID() {
		t.Errorf("update changed uid %s -> %s", created.GetUID(), updated.GetUID())
	}
	checkStored(ctx, t, etcd, k, namespace, name, updated.GetResourceVersion())

	// An update based on the old resourceVersion lost the race.
	got.SetResourceVersion(created.GetResourceVersion())
	labels["crud"] = "stale"
	_, err = client.Update(ctx, got, metav1.UpdateOptions{})
	wantStatus(t, err, 409, metav1.StatusReasonConflict, fmt.Sprintf(
		"Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again", k.groupResource, name))

	list, err := client.List(ctx, metav1.ListOptions{LabelSelector: "crud=updated"})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	items := listItems(t, list)
	found := false
	for _, it := range items {
		if it.GetName() == name && it.GetNamespace() == namespace {
			found = true
			if it.GetResourceVersion() != updated.GetResourceVersion() {
				t.Errorf("listed resourceVersion %s; want %s", it.GetResourceVersion(), updated.GetResourceVersion())
			}
		}
	}
	if !found {
		t.Errorf("list with crud=updated does not hold %s", name)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		t.Fatal(err)
	}
	if revision(t, lm.GetResourceVersion()) < revision(t, updated.GetResourceVersion()) {
		t.Errorf("list resourceVersion %s is before the update's %s", lm.GetResourceVersion(), updated.GetResourceVersion())
	}

	if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	after, err := client.Get(ctx, name, metav1.GetOptions{})
	if k.markedOnDelete {
		if err != nil {
			t.Fatalf("get after delete: %v; want the object marked for deletion", err)
		}
		if after.GetDeletionTimestamp() == nil {
			t.Errorf("after delete: no deletionTimestamp")
		}
		return
	}
	wantStatus(t, err, 404, metav1.StatusReasonNotFound, fmt.Sprintf("%s %q not found", k.groupResource, name))
	resp, err := etcd.Get(ctx, k.key(namespace, name))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Errorf("etcd still holds %s after delete", k.key(namespace, name))
	}
}

// checkStored reads the object's key from etcd directly: its ModRevision
// must be the resourceVersion the API reported, and its value JSON with the
// object's apiVersion and kind and no resourceVersion (which is the key's
// revision, never stored), as kube-apiserver with
// --storage-media-type=application/json keeps objects.
func checkStored(ctx context.Context, t *testing.T, etcd *clientv3.Client, k kindInfo, namespace, name, rv string) {
	t.Helper()
	key := k.key(namespace, name)
	resp, err := etcd.Get(ctx, key)
	if err != nil {
		t.Fatalf("etcd get %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd has no key %s", key)
	}
	kv := resp.Kvs[0]
	if got := strconv.FormatInt(kv.ModRevision, 10); got != rv {
		t.Errorf("%s: etcd ModRevision %s, API resourceVersion %s", key, got, rv)
	}
	var stored struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(kv.Value, &stored); err != nil {
		t.Fatalf("%s is not JSON: %v\n%q", key, err, kv.Value)
	}
	if stored.APIVersion != k.apiVersion || stored.Kind != k.kind || stored.Metadata.Name != name {
		t.Errorf("%s holds apiVersion %q kind %q name %q; want %q %q %q", key, stored.APIVersion, stored.Kind, stored.Metadata.Name, k.apiVersion, k.kind, name)
	}
	if stored.Metadata.ResourceVersion != "" {
		t.Errorf("%s stores resourceVersion %q; it must be left to the key's revision", key, stored.Metadata.ResourceVersion)
	}
}

func revision(t testing.TB, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not an etcd revision: %v", rv, err)
	}
	return n
}

func listItems(t testing.TB, list runtime.Object) []metav1.Object {
	t.Helper()
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]metav1.Object, 0, len(items))
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestCRUDEachKind(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := adminClient(t, c)
	etcd := c.Etcd.Client()
	ctx := testContext(t, testTimeout)
	const ns = "crud"
	createNamespace(ctx, t, cs, ns)
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("")}
	now := metav1.NewTime(time.Now().Truncate(time.Second))

	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"ConfigMap", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.CoreV1().ConfigMaps(ns),
				kindInfo{apiVersion: "v1", kind: "ConfigMap", groupResource: "configmaps", storagePrefix: "/registry/configmaps"},
				configMap(ns, "cm", map[string]string{"k": "v"}))
		}},
		{"Secret", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.CoreV1().Secrets(ns),
				kindInfo{apiVersion: "v1", kind: "Secret", groupResource: "secrets", storagePrefix: "/registry/secrets"},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret", Namespace: ns}, Data: map[string][]byte{"password": []byte("s3cret")}})
		}},
		{"Namespace", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.CoreV1().Namespaces(),
				kindInfo{apiVersion: "v1", kind: "Namespace", groupResource: "namespaces", storagePrefix: "/registry/namespaces", markedOnDelete: true},
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crud-ns"}})
		}},
		{"Pod", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.CoreV1().Pods(ns),
				kindInfo{apiVersion: "v1", kind: "Pod", groupResource: "pods", storagePrefix: "/registry/pods"},
				pod(ns, "pod", ""))
		}},
		{"Service", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.CoreV1().Services(ns),
				kindInfo{apiVersion: "v1", kind: "Service", groupResource: "services", storagePrefix: "/registry/services"},
				&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: ns}, Spec: corev1.ServiceSpec{
					Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}})
		}},
		{"Deployment", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.AppsV1().Deployments(ns),
				kindInfo{apiVersion: "apps/v1", kind: "Deployment", groupResource: "deployments.apps", storagePrefix: "/registry/deployments"},
				&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "deploy", Namespace: ns}, Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}})
		}},
		{"ReplicaSet", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.AppsV1().ReplicaSets(ns),
				kindInfo{apiVersion: "apps/v1", kind: "ReplicaSet", groupResource: "replicasets.apps", storagePrefix: "/registry/replicasets"},
				&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: ns}, Spec: appsv1.ReplicaSetSpec{
					Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}})
		}},
		{"DaemonSet", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.AppsV1().DaemonSets(ns),
				kindInfo{apiVersion: "apps/v1", kind: "DaemonSet", groupResource: "daemonsets.apps", storagePrefix: "/registry/daemonsets"},
				&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: ns}, Spec: appsv1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}})
		}},
		{"Job", func(t *testing.T) {
			jobTemplate := corev1.PodTemplateSpec{Spec: podSpec("")}
			jobTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
			roundTrip(ctx, t, etcd, cs.BatchV1().Jobs(ns),
				kindInfo{apiVersion: "batch/v1", kind: "Job", groupResource: "jobs.batch", storagePrefix: "/registry/jobs"},
				&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: ns}, Spec: batchv1.JobSpec{Template: jobTemplate}})
		}},
		{"Lease", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.CoordinationV1().Leases(ns),
				kindInfo{apiVersion: "coordination.k8s.io/v1", kind: "Lease", groupResource: "leases.coordination.k8s.io", storagePrefix: "/registry/leases"},
				&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lease", Namespace: ns}, Spec: coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To("node-1"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))}})
		}},
		{"EndpointSlice", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.DiscoveryV1().EndpointSlices(ns),
				kindInfo{apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice", groupResource: "endpointslices.discovery.k8s.io", storagePrefix: "/registry/endpointslices"},
				&discoveryv1.EndpointSlice{
					ObjectMeta:  metav1.ObjectMeta{Name: "svc-abcde", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "svc"}},
					AddressType: discoveryv1.AddressTypeIPv4,
					Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
					Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
				})
		}},
		{"core Event", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.CoreV1().Events(ns),
				kindInfo{apiVersion: "v1", kind: "Event", groupResource: "events", storagePrefix: "/registry/events"},
				coreEvent(ns, "core-crud", now))
		}},
		{"events.k8s.io Event", func(t *testing.T) {
			// Stored as a core/v1 Event: the two APIs share one store.
			roundTrip(ctx, t, etcd, cs.EventsV1().Events(ns),
				kindInfo{apiVersion: "v1", kind: "Event", groupResource: "events.events.k8s.io", storagePrefix: "/registry/events"},
				newEvent(ns, "new-crud"))
		}},
		{"Node", func(t *testing.T) {
			roundTrip(ctx, t, etcd, cs.CoreV1().Nodes(),
				kindInfo{apiVersion: "v1", kind: "Node", groupResource: "nodes", storagePrefix: "/registry/nodes"},
				&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-crud", Labels: map[string]string{corev1.LabelHostname: "node-crud"}}})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
	}
}

func coreEvent(namespace, name string, now metav1.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "web-1", APIVersion: "v1", UID: "3b1c5a0e-1111-4c1e-9a55-6f1e2f8d0a01"},
		Reason:         "Scheduled",
		Message:        "Successfully assigned " + namespace + "/web-1 to node-1",
		Source:         corev1.EventSource{Component: "default-scheduler"},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Type:           corev1.EventTypeNormal,
	}
}

func newEvent(namespace, name string) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: namespace},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "default-scheduler",
		ReportingInstance:   "default-scheduler-master-1",
		Action:              "Binding",
		Reason:              "Scheduled",
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "web-2", APIVersion: "v1"},
		Note:                "Successfully assigned " + namespace + "/web-2 to node-2",
		Type:                corev1.EventTypeNormal,
	}
}
