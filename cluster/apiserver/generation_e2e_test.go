package apiserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// generations is what metadata.generation is after each write of
// TestGeneration, in order.
type generations struct {
	Create, NoOp, Label, Annotation, Status, Spec int64
}

// TestGeneration writes one object of each served kind the ways a client
// does and checks metadata.generation after each write against upstream's
// strategies: the kinds with a generation start at 1 and count changes to
// the desired state only (a Deployment's annotations count, being copied
// to its ReplicaSets; an EndpointSlice's labels count); Services, Nodes,
// Namespaces and ConfigMaps have none.
func TestGeneration(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	dyn, err := dynamic.NewForConfig(c.Config(0, auth.AdminUser))
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(ctx, t, adminClient(t, c), "gen")

	for _, tc := range []struct {
		name     string
		gvr      schema.GroupVersionResource
		manifest string
		status   string // a merge patch of the status subresource; "" when there is none
		spec     string // a strategic merge patch that changes the desired state
		want     generations
	}{
		{"pod", gvr("", "v1", "pods"), podYAML, `{"status":{"message":"hello"}}`,
			`{"spec":{"containers":[{"name":"app","image":"nginx:1.28"}]}}`, generations{1, 1, 1, 1, 1, 2}},
		{"deployment", gvr("apps", "v1", "deployments"), deploymentYAML, `{"status":{"observedGeneration":1}}`,
			`{"spec":{"replicas":3}}`, generations{1, 1, 1, 2, 2, 3}},
		{"replicaset", gvr("apps", "v1", "replicasets"), replicaSetYAML, `{"status":{"observedGeneration":1}}`,
			`{"spec":{"replicas":3}}`, generations{1, 1, 1, 1, 1, 2}},
		{"daemonset", gvr("apps", "v1", "daemonsets"), daemonSetYAML, `{"status":{"observedGeneration":1}}`,
			`{"spec":{"template":{"spec":{"containers":[{"name":"agent","image":"busybox:1.37"}]}}}}`, generations{1, 1, 1, 1, 1, 2}},
		{"statefulset", gvr("apps", "v1", "statefulsets"), statefulSetYAML, `{"status":{"observedGeneration":1}}`,
			`{"spec":{"replicas":2}}`, generations{1, 1, 1, 1, 1, 2}},
		{"job", gvr("batch", "v1", "jobs"), jobYAML, `{"status":{"startTime":"2025-01-01T00:00:00Z"}}`,
			`{"spec":{"parallelism":2}}`, generations{1, 1, 1, 1, 1, 2}},
		{"endpointslice", gvr("discovery.k8s.io", "v1", "endpointslices"), endpointSliceYAML, "",
			`{"ports":[{"name":"http","port":8080,"protocol":"TCP"}]}`, generations{1, 1, 2, 2, 2, 3}},
		{"service", gvr("", "v1", "services"), serviceYAML, "",
			`{"spec":{"selector":{"app":"other"}}}`, generations{}},
		{"configmap", gvr("", "v1", "configmaps"), configMapYAML, "",
			`{"data":{"color":"green"}}`, generations{}},
		{"node", gvr("", "v1", "nodes"), nodeYAML, `{"status":{"capacity":{"cpu":"2"}}}`,
			`{"spec":{"unschedulable":true}}`, generations{}},
		{"namespace", gvr("", "v1", "namespaces"), namespaceYAML, "",
			`{"metadata":{"labels":{"tier":"x"}}}`, generations{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.manifest), &obj.Object); err != nil {
				t.Fatal(err)
			}
			ri := dynamic.ResourceInterface(dyn.Resource(tc.gvr))
			if obj.GetNamespace() != "" {
				ri = dyn.Resource(tc.gvr).Namespace(obj.GetNamespace())
			}
			name := obj.GetName()
			var got generations
			step := func(what string, into *int64, write func() (*unstructured.Unstructured, error)) {
				t.Helper()
				o, err := write()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				*into = o.GetGeneration()
			}
			step("create", &got.Create, func() (*unstructured.Unstructured, error) { return ri.Create(ctx, obj, metav1.CreateOptions{}) })
			step("update with no change", &got.NoOp, func() (*unstructured.Unstructured, error) {
				cur, err := ri.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				return ri.Update(ctx, cur, metav1.UpdateOptions{})
			})
			patch := func(pt types.PatchType, body string, sub ...string) func() (*unstructured.Unstructured, error) {
				return func() (*unstructured.Unstructured, error) {
					return ri.Patch(ctx, name, pt, []byte(body), metav1.PatchOptions{}, sub...)
				}
			}
			step("label", &got.Label, patch(types.MergePatchType, `{"metadata":{"labels":{"touched":"yes"}}}`))
			step("annotate", &got.Annotation, patch(types.MergePatchType, `{"metadata":{"annotations":{"klab.dev/note":"hi"}}}`))
			got.Status = got.Annotation
			if tc.status != "" {
				step("status", &got.Status, patch(types.MergePatchType, tc.status, "status"))
			}
			step("spec", &got.Spec, patch(types.StrategicMergePatchType, tc.spec))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("generations (-want +got):\n%s", diff)
			}
		})
	}
}

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

const (
	podYAML = `apiVersion: v1
kind: Pod
metadata: {name: gen-pod, namespace: gen}
spec:
  containers: [{name: app, image: "nginx:1.27"}]
`
	deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: gen-deploy, namespace: gen}
spec:
  selector: {matchLabels: {app: gen}}
  template:
    metadata: {labels: {app: gen}}
    spec:
      containers: [{name: app, image: "nginx:1.27"}]
`
	replicaSetYAML = `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: gen-rs, namespace: gen}
spec:
  selector: {matchLabels: {app: gen-rs}}
  template:
    metadata: {labels: {app: gen-rs}}
    spec:
      containers: [{name: app, image: "nginx:1.27"}]
`
	statefulSetYAML = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: gen}
spec:
  serviceName: web
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27", ports: [{containerPort: 80, name: web}]}]
`
	jobYAML = `apiVersion: batch/v1
kind: Job
metadata: {name: gen-job, namespace: gen}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: app, image: "busybox:1.36", command: ["true"]}]
`
	endpointSliceYAML = `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: gen-eps, namespace: gen}
addressType: IPv4
endpoints: [{addresses: ["10.0.0.1"]}]
ports: [{name: http, port: 80, protocol: TCP}]
`
	serviceYAML = `apiVersion: v1
kind: Service
metadata: {name: gen-svc, namespace: gen}
spec:
  selector: {app: gen}
  ports: [{port: 80}]
`
	configMapYAML = `apiVersion: v1
kind: ConfigMap
metadata: {name: gen-cm, namespace: gen}
data: {color: blue}
`
	nodeYAML = `apiVersion: v1
kind: Node
metadata: {name: gen-node}
`
	namespaceYAML = `apiVersion: v1
kind: Namespace
metadata: {name: gen-ns}
`
)

// daemonSetYAML is the DaemonSet of upstream's documentation example,
// in the shape a student writes it.
const daemonSetYAML = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: gen
  labels:
    app: agent
spec:
  selector:
    matchLabels:
      name: agent
  template:
    metadata:
      labels:
        name: agent
    spec:
      tolerations:
      - key: node-role.kubernetes.io/control-plane
        operator: Exists
        effect: NoSchedule
      containers:
      - name: agent
        image: busybox:1.36
        command: ["sleep", "infinity"]
        resources:
          limits:
            memory: 200Mi
          requests:
            cpu: 100m
            memory: 200Mi
        volumeMounts:
        - name: varlog
          mountPath: /var/log
      terminationGracePeriodSeconds: 30
      volumes:
      - name: varlog
        hostPath:
          path: /var/log
`

// TestApplyUnchangedDaemonSet applies the same DaemonSet twice with the
// real kubectl: the second apply changes nothing, says so, and leaves the
// generation where it was.
func TestApplyUnchangedDaemonSet(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	cs := adminClient(t, c)
	createNamespace(ctx, t, cs, "gen")
	k := newKubectl(t, c, auth.AdminUser)
	manifest := filepath.Join(t.TempDir(), "ds.yaml")
	if err := os.WriteFile(manifest, []byte(daemonSetYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "kubectl apply", k.ok(ctx, t, "apply", "-f", manifest), "daemonset.apps/agent created")
	wantLines(t, "kubectl apply (again)", k.ok(ctx, t, "apply", "-f", manifest), "daemonset.apps/agent unchanged")
	ds, err := cs.AppsV1().DaemonSets("gen").Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Generation != 1 {
		t.Errorf("generation %d after applying an unchanged DaemonSet; want 1", ds.Generation)
	}
	// What the DaemonSet controller writes does not make the next apply
	// a change either.
	ds.Status.ObservedGeneration = ds.Generation
	if _, err := cs.AppsV1().DaemonSets("gen").UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "kubectl apply (after a status write)", k.ok(ctx, t, "apply", "-f", manifest), "daemonset.apps/agent unchanged")
	edited := strings.Replace(daemonSetYAML, "busybox:1.36", "busybox:1.37", 1)
	if err := os.WriteFile(manifest, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "kubectl apply (new image)", k.ok(ctx, t, "apply", "-f", manifest), "daemonset.apps/agent configured")
	if ds, err = cs.AppsV1().DaemonSets("gen").Get(ctx, "agent", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if ds.Generation != 2 {
		t.Errorf("generation %d after a new image; want 2", ds.Generation)
	}
}
