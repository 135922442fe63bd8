package ui

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
	"github.com/klab-dev/klab/lessons"
)

// TestResetToStep: on a real local cluster with a lesson open, each step's
// etcd snapshot is taken as it starts; a ConfigMap made during step 2
// passes it; klab reset --step create from another terminal (ResetToStep,
// what the command runs) restores step 2's snapshot as a new etcd cluster,
// the ConfigMap is gone, and the workspace reopens on step 2 waiting for
// its check again. Then R in the workspace resets to step 1, and step 2's
// snapshot, of a history undone, is dropped.
func TestResetToStep(t *testing.T) {
	testenv.EndToEnd(t)
	ls, err := lessons.Load(fstest.MapFS{"t-elsewhere.yaml": {Data: []byte(strings.Replace(elsewhereLesson, "id: t-elsewhere", "id: t-reset", 1))}})
	if err != nil {
		t.Fatal(err)
	}
	const lesson = "t-reset"
	name, opts := flowOptions(t, "reset", func(_ string, o *Options) {
		o.Lessons, o.Lesson, o.StepSnapshots = ls, lesson, true
		o.Run = func(context.Context, []string, io.Writer, io.Writer) error { return nil }
	})
	f := newFlow(t, opts, 140, 40)
	f.waitFor("the workspace at step 1", 0, 120*time.Second, allOf("Step 1/2", "List the ConfigMaps"))
	waitSnapshot(t, name, lesson, "list")

	info, err := lab.LoadInfo(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cms := client.CoreV1().ConfigMaps("default")

	mark := f.transcript.Len()
	if _, err := client.CoreV1().ConfigMaps("kube-public").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor("step 1 passed", mark, 30*time.Second, allOf("✓ Step done: List the ConfigMaps"))
	mark = f.press("n")
	f.waitFor("step 2", mark, 10*time.Second, allOf("Step 2/2", "Create a ConfigMap"))
	waitSnapshot(t, name, lesson, "create")

	// Made after step 2 started: not in its snapshot.
	mark = f.transcript.Len()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "t-after", Labels: map[string]string{"made": "elsewhere"}}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor("step 2 passed", mark, 30*time.Second, allOf("✓ Lesson complete"))

	mark = f.transcript.Len()
	res, err := lab.ResetToStep(ctx, name, lesson, "create", nil)
	if err != nil {
		t.Fatalf("ResetToStep: %v", err)
	}
	t.Logf("reset of a 1+1 local cluster to step 2 took %v (cluster %s, was %s, term %d)", res.Elapsed, res.ClusterID, res.OldClusterID, res.Term)
	if res.ClusterID == "" || res.ClusterID == res.OldClusterID {
		t.Errorf("cluster ID after the reset = %q, before %q: want a new cluster", res.ClusterID, res.OldClusterID)
	}
	f.waitFor("the workspace reopened on step 2", mark, 30*time.Second, allOf("Back at step 2", "Step 2/2", "… Waiting for:"))
	waitFor(t, 60*time.Second, "t-after gone", func() (bool, error) {
		_, err := cms.Get(ctx, "t-after", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})

	// R: the steps up to the one shown, the cursor on it; up, enter
	// resets to step 1.
	mark = f.press("R")
	f.waitFor("the reset dialog", mark, 5*time.Second, allOf("Reset the cluster to the start of which step?", "1. List the ConfigMaps"))
	mark = f.press("up", "enter")
	f.waitFor("the workspace reopened on step 1", mark, 60*time.Second, allOf("Back at step 1", "Step 1/2"))
	if s, ok := lab.StepSnapshot(name, lesson, "create"); ok {
		t.Errorf("step 2's snapshot %s is kept after a reset to step 1", s.Path)
	}
	if r, err := lab.ReadLessonReset(name); err != nil || r == nil || r.Step != "list" {
		t.Errorf("last reset recorded = %+v, %v; want step list", r, err)
	}

	mark = f.press("q")
	f.waitFor("the quit dialog", mark, 5*time.Second, allOf("r  remove the cluster"))
	f.press("r")
	f.finish()
}

// waitSnapshot waits for the step's snapshot, taken in the background as
// the step started.
func waitSnapshot(t *testing.T, name, lesson, step string) {
	t.Helper()
	waitFor(t, 30*time.Second, "the snapshot of step "+step, func() (bool, error) {
		_, ok := lab.StepSnapshot(name, lesson, step)
		return ok, nil
	})
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v (last error: %v)", what, d, last)
}
