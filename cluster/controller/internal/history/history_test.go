package history

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"
)

func statefulSet(image string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: image}}},
			},
		},
	}
}

// TestTemplatePatchRestoresTheTemplate checks what a revision holds: a
// patch that replaces spec.template wholesale (a container added since is
// dropped, not merged) and leaves the rest of the spec alone.
func TestTemplatePatchRestoresTheTemplate(t *testing.T) {
	patch, err := TemplatePatch(statefulSet("nginx:1.27"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(patch), `{"spec":{"template":{"$patch":"replace",`) {
		t.Errorf("patch %s", patch)
	}
	now := statefulSet("nginx:1.28")
	now.Spec.Replicas = ptr.To[int32](5)
	now.Spec.Template.Spec.Containers = append(now.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
	cur, err := json.Marshal(now)
	if err != nil {
		t.Fatal(err)
	}
	restoredJSON, err := strategicpatch.StrategicMergePatch(cur, patch, &appsv1.StatefulSet{})
	if err != nil {
		t.Fatal(err)
	}
	var restored appsv1.StatefulSet
	if err := json.Unmarshal(restoredJSON, &restored); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(statefulSet("nginx:1.27").Spec.Template, restored.Spec.Template); diff != "" || *restored.Spec.Replicas != 5 {
		t.Errorf("restored template (-want +got):\n%s\nreplicas %d", diff, *restored.Spec.Replicas)
	}
}

func TestNewNamesAndHashes(t *testing.T) {
	set := statefulSet("nginx:1.27")
	patch, err := TemplatePatch(set)
	if err != nil {
		t.Fatal(err)
	}
	kind := appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	a := New(set, kind, set.Spec.Template.Labels, patch, 1, ptr.To[int32](0))
	b := New(set, kind, set.Spec.Template.Labels, patch, 2, ptr.To[int32](1))
	if a.Name != "web-"+a.Labels[ControllerRevisionHashLabel] || a.Labels["app"] != "web" || metav1.GetControllerOf(a).UID != "web-uid" {
		t.Errorf("revision %s labels %v owners %v", a.Name, a.Labels, a.OwnerReferences)
	}
	if a.Name == b.Name {
		t.Errorf("a collision count must change the name: both %s", a.Name)
	}
	if Equal(a, b) {
		t.Error("revisions with different hash labels compared equal")
	}
	b.Labels[ControllerRevisionHashLabel] = a.Labels[ControllerRevisionHashLabel]
	if !Equal(a, b) || !Equal(nil, nil) || Equal(a, nil) {
		t.Error("Equal: same data must be equal, nil only equal to nil")
	}
	if got := Name(strings.Repeat("x", 300), "abc"); len(got) != 227 {
		t.Errorf("Name of a long prefix has %d characters, want 223+1+3", len(got))
	}
}

func TestSortAndNext(t *testing.T) {
	rev := func(name string, n int64) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Revision: n}
	}
	revisions := []*appsv1.ControllerRevision{rev("c", 3), rev("b", 1), rev("a", 1), rev("d", 2)}
	Sort(revisions)
	var got []string
	for _, cr := range revisions {
		got = append(got, cr.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "d", "c"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if Next(revisions) != 4 || Next(nil) != 1 {
		t.Errorf("Next = %d, %d; want 4 and 1", Next(revisions), Next(nil))
	}
}
