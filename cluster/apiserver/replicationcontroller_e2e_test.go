package apiserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/controller"
	"github.com/klab-dev/klab/internal/testenv"
)

const replicationControllerYAML = `apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: 2
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
`

const podTemplateYAML = `apiVersion: v1
kind: PodTemplate
metadata:
  name: tpl
template:
  metadata:
    labels:
      app: tpl
  spec:
    containers:
    - name: app
      image: klab/app
    - name: sidecar
      image: busybox
`

// startControllerManager runs the real controller manager with the named
// controllers against c until the test ends.
func startControllerManager(t *testing.T, c *apiservertest.Cluster, controllers ...string) {
	t.Helper()
	m, err := controller.New(controller.Config{
		REST:        c.Config(0, auth.KubeControllerManager),
		Identity:    "master-1",
		Speed:       1,
		Logger:      slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		Controllers: controllers,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Kill)
}

// activePodsOf lists the pods in namespace controlled by uid that are not
// being deleted.
func activePodsOf(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespace string, uid string) []string {
	t.Helper()
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && string(ref.UID) == uid && p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out
}

func pollUntil(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within 30 s; last seen: %s", what, last)
	}
}

// TestReplicationController drives a ReplicationController with the real
// kubectl against the API server and the controller manager's replication
// manager and garbage collector: upstream's defaults and columns, pods
// created, a deleted pod replaced, `kubectl scale rc`, and `kubectl
// delete rc` taking the pods with it.
func TestReplicationController(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	cs := adminClient(t, c)
	createNamespace(ctx, t, cs, "rc")
	startControllerManager(t, c, "replicationcontroller", "garbagecollector", "serviceaccount")
	k := newKubectl(t, c, auth.AdminUser)
	manifest := filepath.Join(t.TempDir(), "rc.yaml")
	if err := os.WriteFile(manifest, []byte(replicationControllerYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "kubectl apply", k.ok(ctx, t, "-n", "rc", "apply", "-f", manifest), "replicationcontroller/web created")

	rc, err := cs.CoreV1().ReplicationControllers("rc").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Upstream's defaults: the selector and the object's labels come from
	// the template's labels.
	if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || rc.Generation != 1 {
		t.Errorf("defaults not as upstream's: selector %v labels %v generation %d", rc.Spec.Selector, rc.Labels, rc.Generation)
	}
	uid := string(rc.UID)
	pollUntil(ctx, t, "two pods for the rc", func() (bool, string) {
		pods := activePodsOf(ctx, t, cs, "rc", uid)
		return len(pods) == 2, fmt.Sprint(pods)
	})
	pollUntil(ctx, t, "status.replicas 2 for the current generation", func() (bool, string) {
		rc, err := cs.CoreV1().ReplicationControllers("rc").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return rc.Status.Replicas == 2 && rc.Status.ObservedGeneration == rc.Generation, fmt.Sprintf("%+v", rc.Status)
	})

	tables := parseTables(k.ok(ctx, t, "-n", "rc", "get", "rc", "-o", "wide"))
	if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"}) {
		t.Fatalf("get rc -o wide: %+v", tables)
	}
	if r := tables[0].row("web"); tables[0].column(r, "DESIRED") != "2" || tables[0].column(r, "CURRENT") != "2" ||
		tables[0].column(r, "IMAGES") != "nginx:1.27" || tables[0].column(r, "SELECTOR") != "app=web" {
		t.Errorf("rc row %v", r)
	}

	// A deleted pod is replaced.
	before := activePodsOf(ctx, t, cs, "rc", uid)
	k.ok(ctx, t, "-n", "rc", "delete", "pod", before[0], "--wait=false")
	pollUntil(ctx, t, "a new pod in place of "+before[0], func() (bool, string) {
		pods := activePodsOf(ctx, t, cs, "rc", uid)
		return len(pods) == 2 && !slices.Contains(pods, before[0]), fmt.Sprint(pods)
	})

	// kubectl scale goes through the scale subresource.
	wantLines(t, "kubectl scale", k.ok(ctx, t, "-n", "rc", "scale", "rc", "web", "--replicas=4"), "replicationcontroller/web scaled")
	pollUntil(ctx, t, "four pods after scale", func() (bool, string) {
		pods := activePodsOf(ctx, t, cs, "rc", uid)
		return len(pods) == 4, fmt.Sprint(pods)
	})
	wantLines(t, "kubectl scale", k.ok(ctx, t, "-n", "rc", "scale", "rc", "web", "--replicas=1"), "replicationcontroller/web scaled")
	pollUntil(ctx, t, "one pod after scale down", func() (bool, string) {
		pods := activePodsOf(ctx, t, cs, "rc", uid)
		return len(pods) == 1, fmt.Sprint(pods)
	})

	// Validation as upstream's: the selector must match the template.
	res := k.run(ctx, t, nil, "-n", "rc", "patch", "rc", "web", "-p", `{"spec":{"selector":{"app":"other"}}}`)
	if res.code == 0 || !strings.Contains(res.stderr, "spec.template.metadata.labels: Invalid value") ||
		!strings.Contains(res.stderr, "`selector` does not match template `labels`") {
		t.Errorf("patch to a mismatched selector: exit %d, %s", res.code, res.stderr)
	}

	// kubectl delete cascades in the background: the garbage collector
	// deletes the pods the rc owned.
	wantLines(t, "kubectl delete", k.ok(ctx, t, "-n", "rc", "delete", "rc", "web"), `replicationcontroller "web" deleted from rc namespace`)
	pollUntil(ctx, t, "the rc's pods deleted by the garbage collector", func() (bool, string) {
		pods, err := cs.CoreV1().Pods("rc").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, p := range pods.Items {
			left = append(left, p.Name)
		}
		return len(left) == 0, fmt.Sprint(left)
	})
	if _, err := cs.CoreV1().ReplicationControllers("rc").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("rc after delete: %v", err)
	}
}

// TestPodTemplate checks PodTemplates as upstream serves them: created
// and read back with kubectl, upstream's Table columns, validation.
func TestPodTemplate(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, testTimeout)
	cs := adminClient(t, c)
	createNamespace(ctx, t, cs, "tpl")
	k := newKubectl(t, c, auth.AdminUser)
	manifest := filepath.Join(t.TempDir(), "tpl.yaml")
	if err := os.WriteFile(manifest, []byte(podTemplateYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "kubectl create", k.ok(ctx, t, "-n", "tpl", "create", "-f", manifest), "podtemplate/tpl created")
	tables := parseTables(k.ok(ctx, t, "-n", "tpl", "get", "podtemplates"))
	if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"NAME", "CONTAINERS", "IMAGES", "POD LABELS"}) {
		t.Fatalf("get podtemplates: %+v", tables)
	}
	if r := tables[0].row("tpl"); tables[0].column(r, "CONTAINERS") != "app,sidecar" ||
		tables[0].column(r, "IMAGES") != "klab/app,busybox" || tables[0].column(r, "POD LABELS") != "app=tpl" {
		t.Errorf("podtemplate row %v", r)
	}
	out := k.ok(ctx, t, "-n", "tpl", "get", "podtemplate", "tpl", "-o", "jsonpath={.template.spec.restartPolicy} {.template.spec.containers[0].terminationMessagePath}")
	if out != "Always /dev/termination-log" {
		t.Errorf("pod spec defaults in the template: %q", out)
	}
	// A template without containers is refused as a pod spec would be.
	_, err := cs.CoreV1().PodTemplates("tpl").Create(ctx, &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "empty"},
	}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "template.spec.containers: Required value") {
		t.Errorf("empty template: %v; want template.spec.containers: Required value", err)
	}
}
