package live

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons"
)

// followLesson is a lesson whose checks read what the cluster saw: a
// request any client made, and a Deployment's pods.
const followLesson = `id: follow
order: 1
title: {ko: 관찰, en: Follow}
summary: {ko: 관찰 레슨, en: A lesson that follows the cluster}
cluster: {masters: 3, workers: 1}
steps:
  - id: list
    title: {ko: 목록, en: List}
    body: {ko: 본문, en: Body}
    check:
      api-request: {verb: list, resource: pods, namespace: kube-system, code: 2xx}
    solution: [klab kubectl get pods -n kube-system]
  - id: deploy
    title: {ko: 배포, en: Deploy}
    body: {ko: 본문, en: Body}
    check:
      object:
        kind: pods
        labels: app=t-follow
        where: ['{.status.phase} == Running', '{.spec.nodeName} exists']
        min: 2
    solution: [klab kubectl create deployment t-follow --image=klab/app --replicas=2]
`

// TestChecksSeeWhatTheClusterSaw: a request made by a client of its own
// (as kubectl in a second terminal would) passes an api-request check,
// and a Deployment's pods pass an object check, through a Feed that
// follows what the lesson's checks need.
func TestChecksSeeWhatTheClusterSaw(t *testing.T) {
	info := shared.get(t)
	ls, err := lessons.Load(fstest.MapFS{"follow.yaml": {Data: []byte(followLesson)}})
	if err != nil {
		t.Fatal(err)
	}
	steps := ls[0].Steps
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := StartFeed(ctx, info, FeedOptions{NoMembers: true})
	defer f.Close()
	f.Follow(ls[0].SegmentNeeds(0))
	e := lessons.NewEvaluator()
	feed := func(what string, done func() bool, until <-chan struct{}) {
		t.Helper()
		deadline := time.NewTimer(90 * time.Second)
		defer deadline.Stop()
		for !done() {
			select {
			case batch, ok := <-f.Observations():
				if !ok {
					t.Fatalf("feed closed while waiting for %s", what)
				}
				for _, o := range batch {
					e.Observe(o)
				}
			case <-until:
				return
			case <-deadline.C:
				t.Fatalf("no %s; the check says: %s", what, e.Verdict().Text(i18n.English))
			}
		}
	}
	never := func() bool { return false }
	feed("initial state", never, f.Synced())
	feed("refresh", never, f.Refresh())

	// A client of its own, not the lesson's command line.
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.UserAgent = "second-terminal"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// Step 1: nothing has listed kube-system's pods since it began.
	e.Begin(steps[0].Check)
	feed("refresh", never, f.Refresh())
	if v := e.Verdict(); v.Passed {
		t.Fatalf("api-request passed before the request: %s", v.Text(i18n.English))
	}
	if _, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	feed("pass on the list of kube-system's pods", func() bool { return e.Verdict().Passed }, nil)
	t.Logf("api-request: %s", e.Verdict().Text(i18n.English))

	// Step 2: a Deployment's two pods Running.
	e.Begin(steps[1].Check)
	feed("refresh", never, f.Refresh())
	if v := e.Verdict(); v.Passed {
		t.Fatalf("object passed before the Deployment: %s", v.Text(i18n.English))
	}
	replicas := int32(2)
	labels := map[string]string{"app": "t-follow"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "t-follow", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client.AppsV1().Deployments("default").Delete(ctx, "t-follow", metav1.DeleteOptions{})
	})
	feed("pass on the Deployment's pods Running", func() bool { return e.Verdict().Passed }, nil)
	t.Logf("object: %s", e.Verdict().Text(i18n.English))
}

// TestEtcdRequestsFromAnotherTerminal: an etcd-request check passes on a
// read a client of its own makes (as etcdctl in a second terminal would),
// and not on the API server's reads of the same keys, nor on the feed's
// own key watches.
func TestEtcdRequestsFromAnotherTerminal(t *testing.T) {
	info := shared.get(t)
	const lesson = `id: etcd-follow
order: 1
title: {ko: etcd 관찰, en: Follow etcd}
summary: {ko: etcd 요청, en: etcd requests}
cluster: {masters: 3, workers: 1}
steps:
  - id: read
    title: {ko: 읽기, en: Read}
    body: {ko: 본문, en: Body}
    check:
      all:
        - etcd-request: {method: Range, prefix: /registry/namespaces/, from: outside}
        - key-exists: {key: /registry/namespaces/default}
    solution: [klab etcdctl get /registry/namespaces --prefix --keys-only]
`
	ls, err := lessons.Load(fstest.MapFS{"etcd-follow.yaml": {Data: []byte(lesson)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := StartFeed(ctx, info, FeedOptions{NoMembers: true})
	defer f.Close()
	f.Follow(ls[0].SegmentNeeds(0))
	e := lessons.NewEvaluator()
	drain := func(d time.Duration) {
		timer := time.NewTimer(d)
		defer timer.Stop()
		for {
			select {
			case batch := <-f.Observations():
				for _, o := range batch {
					e.Observe(o)
				}
			case <-timer.C:
				return
			}
		}
	}
	drain(2 * time.Second)
	e.Begin(ls[0].Steps[0].Check)

	// The API server reads the namespaces for kubectl: not the student's
	// read of etcd.
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{ResourceVersion: ""}); err != nil {
		t.Fatal(err)
	}
	drain(2 * time.Second)
	if v := e.Verdict(); v.Passed {
		t.Fatalf("passed on the API server's and the feed's own reads: %s", v.Text(i18n.English))
	}

	// A client of its own reads the namespaces' keys.
	cli, err := info.EtcdClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Get(ctx, "/registry/namespaces", clientv3.WithPrefix(), clientv3.WithKeysOnly()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !e.Verdict().Passed && time.Now().Before(deadline) {
		drain(200 * time.Millisecond)
	}
	if v := e.Verdict(); !v.Passed {
		t.Fatalf("no pass on a read of its own: %s", v.Text(i18n.English))
	}
	t.Logf("etcd-request: %s", e.Verdict().Text(i18n.English))
}
