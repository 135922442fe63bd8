package helper

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
)

func TestDefaultSelector(t *testing.T) {
	controller := true
	owned := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: &controller}}
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "default"} }
	objects := []any{
		&v1.Service{ObjectMeta: meta("web"), Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
		&v1.Service{ObjectMeta: meta("no-selector")},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"}, Spec: v1.ServiceSpec{Selector: map[string]string{"tier": "x"}}},
		&v1.ReplicationController{ObjectMeta: meta("rc"), Spec: v1.ReplicationControllerSpec{Selector: map[string]string{"rc": "yes"}}},
		&appsv1.ReplicaSet{ObjectMeta: meta("rs"), Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"rs": "yes"}}}},
		&appsv1.StatefulSet{ObjectMeta: meta("ss"), Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"ss": "yes"}}}},
	}
	factory := informers.NewSharedInformerFactory(nil, 0)
	for _, obj := range objects {
		var err error
		switch o := obj.(type) {
		case *v1.Service:
			err = factory.Core().V1().Services().Informer().GetIndexer().Add(o)
		case *v1.ReplicationController:
			err = factory.Core().V1().ReplicationControllers().Informer().GetIndexer().Add(o)
		case *appsv1.ReplicaSet:
			err = factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
		case *appsv1.StatefulSet:
			err = factory.Apps().V1().StatefulSets().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	listers := SpreadListers{
		Services:               factory.Core().V1().Services().Lister(),
		ReplicationControllers: factory.Core().V1().ReplicationControllers().Lister(),
		ReplicaSets:            factory.Apps().V1().ReplicaSets().Lister(),
		StatefulSets:           factory.Apps().V1().StatefulSets().Lister(),
	}
	tests := []struct {
		name    string
		pod     *v1.Pod
		listers SpreadListers
		// want is the selector's string form; "" is the empty selector.
		want string
	}{
		{
			name:    "nothing selects the pod",
			pod:     &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Labels: map[string]string{"tier": "x"}}},
			listers: listers,
			want:    "",
		},
		{
			name:    "a Service selecting the pod",
			pod:     &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Labels: map[string]string{"app": "web"}}},
			listers: listers,
			want:    "app=web",
		},
		{
			name: "a Service and the owning ReplicaSet",
			pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Labels: map[string]string{"app": "web", "rs": "yes"},
				OwnerReferences: owned("apps/v1", "ReplicaSet", "rs")}},
			listers: listers,
			want:    "app=web,rs=yes",
		},
		{
			name: "the owning ReplicationController",
			pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Labels: map[string]string{"rc": "yes"},
				OwnerReferences: owned("v1", "ReplicationController", "rc")}},
			listers: listers,
			want:    "rc=yes",
		},
		{
			name: "the owning StatefulSet",
			pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Labels: map[string]string{"ss": "yes"},
				OwnerReferences: owned("apps/v1", "StatefulSet", "ss")}},
			listers: listers,
			want:    "ss=yes",
		},
		{
			name: "a Deployment is not a direct owner kind",
			pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Labels: map[string]string{"rs": "yes"},
				OwnerReferences: owned("apps/v1", "Deployment", "rs")}},
			listers: listers,
			want:    "",
		},
		{
			name: "without listers",
			pod:  &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Labels: map[string]string{"app": "web"}}},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DefaultSelector(tt.pod, tt.listers)
			if got.String() != tt.want {
				t.Errorf("DefaultSelector = %q, want %q", got.String(), tt.want)
			}
			if tt.want != "" && !got.Matches(labels.Set(tt.pod.Labels)) {
				t.Errorf("selector %q does not match the pod's own labels", got.String())
			}
		})
	}
}
