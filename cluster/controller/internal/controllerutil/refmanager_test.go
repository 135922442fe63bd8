package controllerutil

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

func TestClaimPods(t *testing.T) {
	kind := appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid"}}
	other := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "api-uid"}}
	pod := func(name string, lbls map[string]string, ctrl *appsv1.ReplicaSet) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: lbls}}
		if ctrl != nil {
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ctrl, kind)}
		}
		return p
	}
	match := map[string]string{"app": "web"}
	noMatch := map[string]string{"app": "db"}
	pods := []*corev1.Pod{
		pod("owned", match, owner),
		pod("orphan", match, nil),
		pod("theirs", match, other),
		pod("moved", noMatch, owner),
		pod("unrelated", noMatch, nil),
	}
	tests := []struct {
		name        string
		deleting    bool
		canAdopt    error
		wantClaimed []string
		wantPatched []string
		wantErr     bool
	}{
		{name: "adopt orphans, release stale, ignore others", wantClaimed: []string{"owned", "orphan"}, wantPatched: []string{"orphan", "moved"}},
		{name: "a controller being deleted adopts and releases nothing", deleting: true, wantClaimed: []string{"owned"}},
		{name: "a failed fresh read forbids adoption", canAdopt: errors.New("gone"), wantClaimed: []string{"owned"}, wantPatched: []string{"moved"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, p := range pods {
				objs = append(objs, p)
			}
			client := fake.NewClientset(objs...)
			ctrl := owner.DeepCopy()
			if tt.deleting {
				ctrl.DeletionTimestamp = ptr.To(metav1.Now())
			}
			m := NewPodControllerRefManager(PodControl{Client: client, Recorder: &record.FakeRecorder{}}, ctrl,
				labels.SelectorFromSet(match), kind, func(context.Context) error { return tt.canAdopt })
			claimed, err := m.ClaimPods(context.Background(), pods)
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, want error %v", err, tt.wantErr)
			}
			var names, patched []string
			for _, p := range claimed {
				names = append(names, p.Name)
			}
			for _, a := range client.Actions() {
				if a.GetVerb() == "patch" {
					patched = append(patched, a.(interface{ GetName() string }).GetName())
				}
			}
			if diff := cmp.Diff(tt.wantClaimed, names); diff != "" {
				t.Errorf("claimed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPatched, patched); diff != "" {
				t.Errorf("patched (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReleasePatchRemovesOnlyTheOwner(t *testing.T) {
	kind := appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid"}}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "moved", Namespace: "default", UID: "moved-uid", Labels: map[string]string{"app": "db"},
		Finalizers: []string{"keep/me", "batch.kubernetes.io/job-tracking"},
		OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(owner, kind),
			{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"},
		},
	}}
	client := fake.NewClientset(p)
	m := NewPodControllerRefManager(PodControl{Client: client, Recorder: &record.FakeRecorder{}}, owner,
		labels.SelectorFromSet(map[string]string{"app": "web"}), kind, nil, "batch.kubernetes.io/job-tracking")
	if _, err := m.ClaimPods(context.Background(), []*corev1.Pod{p}); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods("default").Get(context.Background(), "moved", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "cm-uid" || !cmp.Equal(got.Finalizers, []string{"keep/me"}) {
		t.Errorf("after release: owners %+v, finalizers %v; want only the ConfigMap and keep/me", got.OwnerReferences, got.Finalizers)
	}
}
