package replication

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
)

func newRC(name string, replicas int32) *corev1.ReplicationController {
	labels := map[string]string{"app": name}
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "rc-uid", Generation: 3},
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        ptr.To(replicas),
			MinReadySeconds: 5,
			Selector:        labels,
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app"}}},
			},
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 2,
			Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}},
		},
	}
}

// A ReplicationController seen as a ReplicaSet and back is the same
// object: nothing the controller does not touch is lost on the way.
func TestConversionRoundTrip(t *testing.T) {
	rc := newRC("web", 3)
	rs := toReplicaSet(rc)
	if rs.Spec.Selector == nil || rs.Spec.Selector.MatchLabels["app"] != "web" || len(rs.Spec.Selector.MatchExpressions) != 0 {
		t.Errorf("selector as a ReplicaSet's: %+v", rs.Spec.Selector)
	}
	back := toReplicationController(rs)
	back.TypeMeta = metav1.TypeMeta{}
	if diff := cmp.Diff(rc, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// The copies share nothing with the cached object.
	rs.Spec.Template.Labels["app"] = "changed"
	if rc.Spec.Template.Labels["app"] != "web" {
		t.Error("toReplicaSet shares the template's labels with the ReplicationController")
	}
}

// The replication manager, run over a fake API, creates the missing pods
// with a ControllerRef naming the ReplicationController, and writes the
// ReplicationController's status (not a ReplicaSet's) through
// replicationcontrollers/status.
func TestManagerCreatesPodsAndWritesStatus(t *testing.T) {
	rc := newRC("web", 2)
	rc.Status = corev1.ReplicationControllerStatus{}
	f := controllertest.New(rc)
	ctrl, err := Init(context.Background(), f.Context)
	if err != nil {
		t.Fatal(err)
	}
	if ctrl.Name() != Name {
		t.Errorf("name %q, want %q", ctrl.Name(), Name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Context.Informers.Start(ctx.Done())
	go ctrl.Run(ctx, 1)

	var created []*corev1.Pod
	var status *corev1.ReplicationController
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		created, status = nil, nil
		for _, a := range f.Client.Actions() {
			switch {
			case a.GetVerb() == "create" && a.GetResource().Resource == "pods":
				created = append(created, a.(clienttesting.CreateAction).GetObject().(*corev1.Pod))
			case a.GetVerb() == "update" && a.GetSubresource() == "status" && a.GetResource().Resource == "replicationcontrollers":
				status = a.(clienttesting.UpdateAction).GetObject().(*corev1.ReplicationController)
			}
		}
		return len(created) == 2 && status != nil, nil
	})
	if err != nil {
		t.Fatalf("after 10 s: %d pods created, status update %v", len(created), status != nil)
	}
	for _, p := range created {
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.UID != rc.UID || p.Labels["app"] != "web" {
			t.Errorf("pod %s: controller %+v labels %v", p.GenerateName, ref, p.Labels)
		}
		if p.GenerateName != "web-" {
			t.Errorf("pod generateName %q, want web-", p.GenerateName)
		}
	}
	if status.Status.ObservedGeneration != rc.Generation || status.Spec.Selector["app"] != "web" || status.Spec.Template == nil {
		t.Errorf("status update %+v, spec %+v", status.Status, status.Spec)
	}
}
