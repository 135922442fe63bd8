package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestRequestStreamShowsAuthorization checks that the request stream
// tells who made each request (user and groups, from the scheduler's own
// client certificate) and why it was allowed or forbidden, in the words of
// upstream's audit annotations, before and after the scheduler's binding
// is removed.
func TestRequestStreamShowsAuthorization(t *testing.T) {
	testenv.EndToEnd(t)
	c := apiservertest.New(t, apiservertest.Options{})
	admin := c.Client()
	scheduler, err := kubernetes.NewForConfig(c.Config(0, auth.KubeScheduler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := admin.CoreV1().RESTClient().Get().AbsPath("/debug/klab/events").Stream(ctx)
	if err != nil {
		t.Fatalf("request stream: %v", err)
	}
	defer stream.Close()
	events := make(chan apiserver.RequestEvent, 1024)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(stream)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev apiserver.RequestEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.User == auth.KubeScheduler && ev.Resource == "pods" {
				events <- ev
			}
		}
	}()
	next := func(what string) apiserver.RequestEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("%s: the stream ended", what)
			}
			return ev
		case <-ctx.Done():
			t.Fatalf("%s: no request of the scheduler's in the stream", what)
		}
		return apiserver.RequestEvent{}
	}

	if _, err := scheduler.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the scheduler lists pods: %v", err)
	}
	ev := next("allowed list")
	wantReason := `RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole "system:kube-scheduler" to User "system:kube-scheduler"`
	if ev.Code != 200 || ev.Decision != apiserver.DecisionAllow || ev.Reason != wantReason {
		t.Errorf("allowed list: code %d decision %q reason %q; want 200 %q %q", ev.Code, ev.Decision, ev.Reason, apiserver.DecisionAllow, wantReason)
	}
	if !slices.Contains(ev.Groups, auth.AllAuthenticated) {
		t.Errorf("groups %v, want %s among them", ev.Groups, auth.AllAuthenticated)
	}

	if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, "system:kube-scheduler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer follows the policy through a watch: poll until the
	// scheduler is refused.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = scheduler.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		ev = next("list after the binding went")
		if err != nil || time.Now().After(deadline) {
			break
		}
	}
	wantMsg := `pods is forbidden: User "system:kube-scheduler" cannot list resource "pods" in API group "" at the cluster scope`
	if !apierrors.IsForbidden(err) || err.Error() != wantMsg {
		t.Fatalf("list without the binding: %v, want upstream's %q", err, wantMsg)
	}
	if ev.Code != 403 || ev.Decision != apiserver.DecisionForbid || ev.Reason != "" {
		t.Errorf("forbidden list: code %d decision %q reason %q; want 403 %q and no reason", ev.Code, ev.Decision, ev.Reason, apiserver.DecisionForbid)
	}
}

// TestRequestStreamNamesCreatedObject checks that a create, whose URL
// names no object, is shown in the stream with the name its body carries,
// as upstream's audit fills objectRef.name from the request object: a
// student filtering the stream by a pod's name finds the create too.
func TestRequestStreamNamesCreatedObject(t *testing.T) {
	testenv.EndToEnd(t)
	c := apiservertest.New(t, apiservertest.Options{})
	admin := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := admin.CoreV1().RESTClient().Get().AbsPath("/debug/klab/events").Stream(ctx)
	if err != nil {
		t.Fatalf("request stream: %v", err)
	}
	defer stream.Close()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "named-in-body"}}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	sc := bufio.NewScanner(stream)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev apiserver.RequestEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Verb != "create" || ev.Resource != "configmaps" {
			continue
		}
		if ev.Name != "named-in-body" || ev.Namespace != "default" || ev.Code != 201 {
			t.Fatalf("create in the stream: %s/%s code %d; want default/named-in-body 201", ev.Namespace, ev.Name, ev.Code)
		}
		return
	}
	t.Fatalf("no create of configmaps in the stream: %v", sc.Err())
}
