package apiserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/controller"
	"github.com/klab-dev/klab/internal/testenv"
)

// The rollout tests run klab's real API server and controller manager (the
// DaemonSet, StatefulSet and garbage collector controllers) and drive them
// with the real kubectl, as a student would. There is no scheduler and no
// kubelet: playNodes stands in for both.

const (
	rolloutNamespace = "roll"
	rolloutDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: roll}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "klab/app:v1"}]
`
	rolloutStatefulSet = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: roll}
spec:
  serviceName: web
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27"}]
`
)

// startRolloutCluster starts the API server, the controller manager with
// the workload controllers whose history the tests read, one node and the
// stand-in for its scheduler and kubelet.
func startRolloutCluster(t *testing.T) (context.Context, kubernetes.Interface, *kubectlUser) {
	t.Helper()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 3*testTimeout)
	cs := adminClient(t, c)
	createNamespace(ctx, t, cs, rolloutNamespace)
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := controller.New(controller.Config{
		REST:        c.Config(0, auth.KubeControllerManager),
		Identity:    "master-1",
		Speed:       10, // the leader election lease, 15 s, in 3 s (the floor)
		Logger:      slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		Controllers: []string{"daemonset", "statefulset", "garbagecollector"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Kill)
	playNodes(ctx, t, cs)
	return ctx, cs, newKubectl(t, c, auth.AdminUser)
}

// playNodes plays the scheduler and the kubelet of node-1 until the test
// ends: a pod is bound to node-1, then Running and Ready; a pod being
// deleted is removed, as a kubelet does once its containers stopped.
func playNodes(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	pods := cs.CoreV1().Pods(rolloutNamespace)
	wg.Go(func() {
		_ = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			list, err := pods.List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, p := range list.Items {
				switch {
				case p.DeletionTimestamp != nil:
					_ = pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
				case p.Spec.NodeName == "":
					binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
					_ = pods.Bind(ctx, binding, metav1.CreateOptions{})
				case p.Status.Phase != corev1.PodRunning:
					p.Status.Phase = corev1.PodRunning
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
					_, _ = pods.UpdateStatus(ctx, &p, metav1.UpdateOptions{})
				}
			}
			return false, nil
		})
	})
}

func applyManifest(ctx context.Context, t *testing.T, k *kubectlUser, manifest string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return k.ok(ctx, t, "apply", "-f", path)
}

// historyRevisions reads the REVISION column of `kubectl rollout history`.
func historyRevisions(ctx context.Context, t *testing.T, k *kubectlUser, what string) []string {
	t.Helper()
	out := k.ok(ctx, t, "-n", rolloutNamespace, "rollout", "history", what)
	// The first line names the object; the table follows.
	_, rest, _ := strings.Cut(out, "\n")
	tables := parseTables(rest)
	if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"REVISION", "CHANGE-CAUSE"}) {
		t.Fatalf("rollout history %s printed:\n%s", what, out)
	}
	var revisions []string
	for _, r := range tables[0].rows {
		revisions = append(revisions, r[0])
	}
	return revisions
}

// podImages returns "name=image" of the namespace's live pods, sorted.
func podImages(ctx context.Context, t *testing.T, cs kubernetes.Interface, prefix string) []string {
	t.Helper()
	list, err := cs.CoreV1().Pods(rolloutNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && strings.HasPrefix(p.Name, prefix) {
			out = append(out, p.Name+"="+p.Spec.Containers[0].Image)
		}
	}
	slices.Sort(out)
	return out
}

// waitFor polls cond, failing the test with its last description.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, testTimeout, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: %v; last: %s", what, err, last)
	}
}

// TestDaemonSetRolloutHistoryAndUndo changes a DaemonSet's image twice:
// `kubectl rollout history` lists three revisions, each a
// ControllerRevision the DaemonSet owns, `--revision=2` shows the second
// template, and `kubectl rollout undo` brings it back as revision 4 and
// rolls the pod back; deleting the DaemonSet takes its history with it.
func TestDaemonSetRolloutHistoryAndUndo(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	ctx, cs, k := startRolloutCluster(t)
	ns := []string{"-n", rolloutNamespace}
	wantLines(t, "kubectl apply", applyManifest(ctx, t, k, rolloutDaemonSet), "daemonset.apps/agent created")
	status := func() {
		t.Helper()
		wantMatch(t, "rollout status", k.ok(ctx, t, append(ns, "rollout", "status", "ds/agent", "--timeout=60s")...), `daemon set "agent" successfully rolled out`)
	}
	status()
	for _, image := range []string{"klab/app:v2", "klab/app:v3"} {
		wantLines(t, "kubectl set image", k.ok(ctx, t, append(ns, "set", "image", "ds/agent", "agent="+image)...), "daemonset.apps/agent image updated")
		status()
		if got := podImages(ctx, t, cs, "agent-"); len(got) != 1 || !strings.HasSuffix(got[0], "="+image) {
			t.Errorf("after rolling out %s the pods are %v", image, got)
		}
	}
	if got := historyRevisions(ctx, t, k, "ds/agent"); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Errorf("rollout history revisions %v, want 1 2 3", got)
	}
	wantMatch(t, "rollout history --revision=2", k.ok(ctx, t, append(ns, "rollout", "history", "ds/agent", "--revision=2")...),
		`daemonset.apps/agent with revision #2`, `Image:\s+klab/app:v2`)

	// The revisions as stored: owned by the DaemonSet, labelled with the
	// hash its pods carry, printed with upstream's columns.
	revisions, err := cs.AppsV1().ControllerRevisions(rolloutNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := cs.AppsV1().DaemonSets(rolloutNamespace).Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cr := range revisions.Items {
		hash := cr.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
		if ref := metav1.GetControllerOf(&cr); ref == nil || ref.UID != ds.UID || cr.Name != "agent-"+hash ||
			!strings.Contains(string(cr.Data.Raw), `"$patch":"replace"`) {
			t.Errorf("revision %s: owner %v, hash label %q, data %s", cr.Name, cr.OwnerReferences, hash, cr.Data.Raw)
		}
	}
	tables := parseTables(k.ok(ctx, t, append(ns, "get", "controllerrevisions", "-l", "app=agent")...))
	if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"NAME", "CONTROLLER", "REVISION", "AGE"}) || len(tables[0].rows) != 3 {
		t.Fatalf("get controllerrevisions: %+v", tables)
	}
	for _, r := range tables[0].rows {
		if tables[0].column(r, "CONTROLLER") != "daemonset.apps/agent" {
			t.Errorf("controllerrevision row %v", r)
		}
	}

	// Described by the OpenAPI documents as every served kind is.
	wantMatch(t, "kubectl explain", k.ok(ctx, t, "explain", "controllerrevisions.revision"),
		`GROUP:\s+apps`, `KIND:\s+ControllerRevision`, `VERSION:\s+v1`, `FIELD:\s+revision\s+<integer>`)

	wantLines(t, "rollout undo", k.ok(ctx, t, append(ns, "rollout", "undo", "ds/agent")...), "daemonset.apps/agent rolled back")
	status()
	if ds, err = cs.AppsV1().DaemonSets(rolloutNamespace).Get(ctx, "agent", metav1.GetOptions{}); err != nil || ds.Spec.Template.Spec.Containers[0].Image != "klab/app:v2" {
		t.Fatalf("after undo: %v, image %s; want klab/app:v2", err, ds.Spec.Template.Spec.Containers[0].Image)
	}
	if got := podImages(ctx, t, cs, "agent-"); len(got) != 1 || !strings.HasSuffix(got[0], "=klab/app:v2") {
		t.Errorf("after undo the pods are %v", got)
	}
	// The second template is not recorded twice: its revision is now 4.
	waitFor(ctx, t, "history after undo", func() (bool, string) {
		got := historyRevisions(ctx, t, k, "ds/agent")
		return slices.Equal(got, []string{"1", "3", "4"}), fmt.Sprintf("revisions %v, want 1 3 4", got)
	})

	wantLines(t, "kubectl delete", k.ok(ctx, t, append(ns, "delete", "ds", "agent")...), `daemonset.apps "agent" deleted from roll namespace`)
	waitFor(ctx, t, "the garbage collector removes the history", func() (bool, string) {
		list, err := cs.AppsV1().ControllerRevisions(rolloutNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		return err == nil && len(list.Items) == 0, fmt.Sprintf("%v, %d revisions", err, len(list.Items))
	})
}

// TestStatefulSetRolloutHistoryUndoAndPartition changes a StatefulSet's
// image twice: each rollout replaces web-2, web-1, web-0 in that order;
// `kubectl rollout history` lists three revisions; `rollout undo
// --to-revision=1` brings the first template back to every Pod; and with
// a partition of 2, a new template reaches web-2 only.
func TestStatefulSetRolloutHistoryUndoAndPartition(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	ctx, cs, k := startRolloutCluster(t)
	ns := []string{"-n", rolloutNamespace}
	wantLines(t, "kubectl apply", applyManifest(ctx, t, k, rolloutStatefulSet), "statefulset.apps/web created")
	status := func() string {
		t.Helper()
		return k.ok(ctx, t, append(ns, "rollout", "status", "sts/web", "--timeout=60s")...)
	}
	wantMatch(t, "rollout status", status(), `partitioned roll out complete: 3 new pods have been updated`)
	wantImages := func(want ...string) {
		t.Helper()
		if got := podImages(ctx, t, cs, "web-"); !slices.Equal(got, want) {
			t.Errorf("pods %v, want %v", got, want)
		}
	}
	wantImages("web-0=nginx:1.27", "web-1=nginx:1.27", "web-2=nginx:1.27")

	for _, image := range []string{"nginx:1.28", "nginx:1.29"} {
		// Watch the deletions to see the order of replacement.
		w, err := cs.CoreV1().Pods(rolloutNamespace).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantLines(t, "kubectl set image", k.ok(ctx, t, append(ns, "set", "image", "sts/web", "nginx="+image)...), "statefulset.apps/web image updated")
		wantMatch(t, "rollout status", status(), `partitioned roll out complete: 3 new pods have been updated`)
		var deleted []string
		for len(deleted) < 3 {
			select {
			case e := <-w.ResultChan():
				if p, ok := e.Object.(*corev1.Pod); ok && e.Type == watch.Deleted {
					deleted = append(deleted, p.Name)
				}
			case <-ctx.Done():
				t.Fatalf("rolling out %s: saw only %v deleted", image, deleted)
			}
		}
		w.Stop()
		if !slices.Equal(deleted, []string{"web-2", "web-1", "web-0"}) {
			t.Errorf("rolling out %s replaced %v; want web-2, web-1, web-0", image, deleted)
		}
		wantImages("web-0="+image, "web-1="+image, "web-2="+image)
	}
	if got := historyRevisions(ctx, t, k, "sts/web"); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Errorf("rollout history revisions %v, want 1 2 3", got)
	}
	wantMatch(t, "rollout history --revision=2", k.ok(ctx, t, append(ns, "rollout", "history", "sts/web", "--revision=2")...),
		`statefulset.apps/web with revision #2`, `Image:\s+nginx:1.28`)
	sts, err := cs.AppsV1().StatefulSets(rolloutNamespace).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sts.Status.CurrentRevision != sts.Status.UpdateRevision || sts.Status.CurrentReplicas != 3 || sts.Status.UpdatedReplicas != 3 {
		t.Errorf("status after the rollout: %+v", sts.Status)
	}
	web0, err := cs.CoreV1().Pods(rolloutNamespace).Get(ctx, "web-0", metav1.GetOptions{})
	if err != nil || web0.Labels[appsv1.StatefulSetRevisionLabel] != sts.Status.UpdateRevision {
		t.Errorf("web-0 labels %v, want controller-revision-hash %s (%v)", web0.Labels, sts.Status.UpdateRevision, err)
	}

	wantLines(t, "rollout undo", k.ok(ctx, t, append(ns, "rollout", "undo", "sts/web", "--to-revision=1")...), "statefulset.apps/web rolled back")
	wantMatch(t, "rollout status", status(), `partitioned roll out complete: 3 new pods have been updated`)
	wantImages("web-0=nginx:1.27", "web-1=nginx:1.27", "web-2=nginx:1.27")
	if got := historyRevisions(ctx, t, k, "sts/web"); !slices.Equal(got, []string{"2", "3", "4"}) {
		t.Errorf("rollout history after undo %v, want 2 3 4 (the first template renumbered)", got)
	}

	// A partition of 2: only web-2 takes the next template.
	k.ok(ctx, t, append(ns, "patch", "sts", "web", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}`)...)
	k.ok(ctx, t, append(ns, "set", "image", "sts/web", "nginx=nginx:1.30")...)
	wantMatch(t, "rollout status", status(), `partitioned roll out complete: 1 new pods have been updated`)
	wantImages("web-0=nginx:1.27", "web-1=nginx:1.27", "web-2=nginx:1.30")
	waitFor(ctx, t, "status of the partitioned rollout", func() (bool, string) {
		sts, err := cs.AppsV1().StatefulSets(rolloutNamespace).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := sts.Status
		return st.UpdatedReplicas == 1 && st.CurrentReplicas == 2 && st.CurrentRevision != st.UpdateRevision && st.ReadyReplicas == 3,
			fmt.Sprintf("%+v", st)
	})

	wantLines(t, "kubectl delete", k.ok(ctx, t, append(ns, "delete", "sts", "web")...), `statefulset.apps "web" deleted from roll namespace`)
	waitFor(ctx, t, "the garbage collector removes the history", func() (bool, string) {
		list, err := cs.AppsV1().ControllerRevisions(rolloutNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return err == nil && len(list.Items) == 0, fmt.Sprintf("%v, %d revisions", err, len(list.Items))
	})
}
