package deployment

import (
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newDeployment returns a Deployment as the API server stores it after
// defaulting: RollingUpdate 25%/25%, ten revisions kept, a 600 s deadline.
func newDeployment(replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template(image),
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge:       ptr.To(intstr.FromString("25%")),
					MaxUnavailable: ptr.To(intstr.FromString("25%")),
				},
			},
			RevisionHistoryLimit:    ptr.To[int32](10),
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
	}
}

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

// rsName is the name the controller gives the ReplicaSet of image.
func rsName(image string) string {
	t := template(image)
	return "web-" + controllerutil.ComputeHash(&t, nil)
}

// newRS returns a ReplicaSet of d for image: revision rev, spec.replicas
// replicas of which available are available, scaled for d's current size.
func newRS(d *appsv1.Deployment, image string, rev, replicas, available int32, age time.Duration) *appsv1.ReplicaSet {
	t := template(image)
	hash := controllerutil.ComputeHash(&t, nil)
	t.Labels = withLabel(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-" + hash, Namespace: "default", UID: types.UID("rs-" + hash), Generation: 1,
			Labels:            t.Labels,
			CreationTimestamp: metav1.NewTime(now.Add(-age)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Annotations: map[string]string{
				RevisionAnnotation:        itoa(rev),
				DesiredReplicasAnnotation: itoa(*d.Spec.Replicas),
				MaxReplicasAnnotation:     itoa(*d.Spec.Replicas + maxSurge(d)),
			},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: t.Labels},
			Template: t,
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas: replicas, FullyLabeledReplicas: replicas, ReadyReplicas: available, AvailableReplicas: available,
			ObservedGeneration: 1,
		},
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func fixture(t *testing.T, objects ...runtime.Object) (*controllertest.Fixture, *Controller) {
	t.Helper()
	f := controllertest.New(objects...)
	dc, err := newController(f.Context)
	if err != nil {
		t.Fatal(err)
	}
	dc.clock = clocktesting.NewFakePassiveClock(now)
	if err := f.Index(objects...); err != nil {
		t.Fatal(err)
	}
	return f, dc
}

// written returns the objects of the client's create, update and patch
// actions on resource (e.g. "replicasets", "deployments/status").
func written[T runtime.Object](f *controllertest.Fixture, resource string) []T {
	var out []T
	for _, a := range f.Client.Actions() {
		r := a.GetResource().Resource
		if a.GetSubresource() != "" {
			r += "/" + a.GetSubresource()
		}
		if r != resource {
			continue
		}
		var obj runtime.Object
		switch act := a.(type) {
		case clienttesting.CreateAction:
			obj = act.GetObject()
		case clienttesting.UpdateAction:
			obj = act.GetObject()
		default:
			continue
		}
		if typed, ok := obj.(T); ok {
			out = append(out, typed)
		}
	}
	return out
}

func condition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) string {
	c := getCondition(d.Status, t)
	if c == nil {
		return ""
	}
	return string(c.Status) + " " + c.Reason + ": " + c.Message
}
