package ui

import (
	"context"
	"io"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
	"github.com/klab-dev/klab/lessons"
)

// elsewhereLesson's steps pass on what the cluster saw, whoever did it:
// a request, then an object.
const elsewhereLesson = `id: t-elsewhere
order: 1
title: {ko: 다른 터미널, en: Another terminal}
summary: {ko: 다른 터미널에서 한 일, en: What another terminal did}
cluster: {masters: 1, workers: 1}
steps:
  - id: list
    title: {ko: 목록 보기, en: List the ConfigMaps}
    body: {ko: 본문, en: Body}
    check:
      api-request: {verb: list, resource: configmaps, namespace: kube-public, code: 2xx}
    solution: [klab kubectl get configmaps -n kube-public]
  - id: create
    title: {ko: 만들기, en: Create a ConfigMap}
    body: {ko: 본문, en: Body}
    check:
      object:
        kind: configmaps
        namespace: default
        labels: made=elsewhere
    solution: [klab kubectl create configmap t-elsewhere]
`

// TestStepPassedFromAnotherTerminal: with the lesson open in the TUI, a
// student's own client (kubectl in a second terminal, here client-go
// with the cluster's kubeconfig) passes an api-request step and then an
// object step; nothing is typed in the TUI's command line.
func TestStepPassedFromAnotherTerminal(t *testing.T) {
	testenv.EndToEnd(t)
	ls, err := lessons.Load(fstest.MapFS{"t-elsewhere.yaml": {Data: []byte(elsewhereLesson)}})
	if err != nil {
		t.Fatal(err)
	}
	name, opts := flowOptions(t, "elsewhere", func(_ string, o *Options) {
		o.Lessons, o.Lesson = ls, "t-elsewhere"
		o.Run = func(context.Context, []string, io.Writer, io.Writer) error {
			t.Error("a command ran in the TUI's command line; this test types none")
			return nil
		}
	})
	f := newFlow(t, opts, 120, 40)
	mark := 0
	f.waitFor("the workspace at step 1", mark, 120*time.Second, allOf("Step 1/2", "List the ConfigMaps", "… Waiting for:"))

	info, err := lab.LoadInfo(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.UserAgent = "second-terminal"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A list elsewhere does not pass the step; the one it asks for does.
	mark = f.transcript.Len()
	if _, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("kube-public").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor("step 1 passed by the second terminal", mark, 30*time.Second, allOf("✓ Step done: List the ConfigMaps"))

	mark = f.press("n")
	f.waitFor("step 2", mark, 10*time.Second, allOf("Step 2/2", "Create a ConfigMap", "… Waiting for:"))
	mark = f.transcript.Len()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "t-elsewhere", Labels: map[string]string{"made": "elsewhere"}}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor("step 2 passed by the second terminal", mark, 30*time.Second, allOf("✓ Lesson complete: Another terminal"))

	mark = f.press("q")
	f.waitFor("the quit dialog", mark, 5*time.Second, allOf("r  remove the cluster"))
	f.press("r")
	f.finish()
}
