package daemonset

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
)

// TestConstructHistory checks which revision is current and what is
// written: a new template is a new revision numbered after the others, a
// template that comes back renumbers its old revision, and old revisions
// beyond revisionHistoryLimit go, oldest first, unless a pod still runs
// them.
func TestConstructHistory(t *testing.T) {
	image := func(img string) func(*appsv1.DaemonSet) {
		return func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = img }
	}
	v1, v2, v3 := newDS(image("klab/app:v1")), newDS(image("klab/app:v2")), newDS(image("klab/app:v3"))
	revision := func(ds *appsv1.DaemonSet, n int64) *appsv1.ControllerRevision {
		cr := currentRevision(t, ds, n)
		cr.UID = types.UID(cr.Name)
		return cr
	}
	tests := []struct {
		name        string
		ds          *appsv1.DaemonSet
		objects     []runtime.Object
		wantCurrent string
		wantNumber  int64
		wantOld     int
		wantActions []string
	}{
		{
			name: "a new DaemonSet records revision 1", ds: v1,
			wantCurrent: revision(v1, 1).Name, wantNumber: 1,
			wantActions: []string{"create controllerrevisions " + revision(v1, 1).Name},
		},
		{
			name: "a new template is the next revision", ds: v2, objects: []runtime.Object{revision(v1, 1)},
			wantCurrent: revision(v2, 2).Name, wantNumber: 2, wantOld: 1,
			wantActions: []string{"create controllerrevisions " + revision(v2, 2).Name},
		},
		{
			name: "an unchanged template writes nothing", ds: v2, objects: []runtime.Object{revision(v1, 1), revision(v2, 2)},
			wantCurrent: revision(v2, 2).Name, wantNumber: 2, wantOld: 1,
		},
		{
			name: "a rollback renumbers the old revision", ds: v1, objects: []runtime.Object{revision(v1, 1), revision(v2, 2), revision(v3, 3)},
			wantCurrent: revision(v1, 1).Name, wantNumber: 4, wantOld: 2,
			wantActions: []string{"update controllerrevisions " + revision(v1, 1).Name},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objects := append([]runtime.Object{tc.ds}, tc.objects...)
			f := controllertest.New(objects...)
			dsc, err := newController(f.Context)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Index(objects...); err != nil {
				t.Fatal(err)
			}
			cur, old, err := dsc.constructHistory(context.Background(), tc.ds)
			if err != nil {
				t.Fatal(err)
			}
			if cur.Name != tc.wantCurrent || cur.Revision != tc.wantNumber || len(old) != tc.wantOld {
				t.Errorf("current %s #%d with %d old; want %s #%d with %d old", cur.Name, cur.Revision, len(old), tc.wantCurrent, tc.wantNumber, tc.wantOld)
			}
			if ref := metav1.GetControllerOf(cur); ref == nil || ref.UID != tc.ds.UID {
				t.Errorf("current revision owned by %v", cur.OwnerReferences)
			}
			if diff := cmp.Diff(tc.wantActions, f.Actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("cleanup keeps revisionHistoryLimit old revisions and those pods run", func(t *testing.T) {
		ds := newDS(image("klab/app:v4"), func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr.To[int32](1) })
		old := []*appsv1.ControllerRevision{revision(v3, 3), revision(v1, 1), revision(v2, 2)}
		running := daemonPod("agent-old", ds, "n1", old[1].Labels[appsv1.DefaultDaemonSetUniqueLabelKey])
		objects := []runtime.Object{ds, newNode("n1"), running, old[0], old[1], old[2]}
		f := controllertest.New(objects...)
		dsc, err := newController(f.Context)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Index(objects...); err != nil {
			t.Fatal(err)
		}
		// Two too many: revision 1 stays for its pod, so 2 and 3 go.
		want := []string{"delete controllerrevisions " + old[2].Name, "delete controllerrevisions " + old[0].Name}
		if err := dsc.cleanupHistory(context.Background(), ds, old); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, f.Actions()); diff != "" {
			t.Errorf("actions (-want +got):\n%s", diff)
		}
	})
}
