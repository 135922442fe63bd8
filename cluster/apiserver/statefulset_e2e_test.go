package apiserver_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestStatefulSetServed checks StatefulSets as upstream serves them: the
// defaults, the Table columns kubectl prints, the scale subresource, and
// validation of what may not change.
func TestStatefulSetServed(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	cs := adminClient(t, c)
	createNamespace(ctx, t, cs, "gen")
	k := newKubectl(t, c, auth.AdminUser)
	manifest := filepath.Join(t.TempDir(), "sts.yaml")
	if err := os.WriteFile(manifest, []byte(statefulSetYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "kubectl apply", k.ok(ctx, t, "apply", "-f", manifest), "statefulset.apps/web created")

	sts, err := cs.AppsV1().StatefulSets("gen").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sts.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement || sts.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType ||
		ptr.Deref(sts.Spec.UpdateStrategy.RollingUpdate.Partition, -1) != 0 || ptr.Deref(sts.Spec.RevisionHistoryLimit, -1) != 10 ||
		sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("defaults not as upstream's: %+v", sts.Spec)
	}

	tables := parseTables(k.ok(ctx, t, "-n", "gen", "get", "sts", "-o", "wide"))
	if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"NAME", "READY", "AGE", "CONTAINERS", "IMAGES"}) {
		t.Fatalf("get sts -o wide: %+v", tables)
	}
	if r := tables[0].row("web"); tables[0].column(r, "READY") != "0/3" || tables[0].column(r, "IMAGES") != "nginx:1.27" {
		t.Errorf("statefulset row %v", r)
	}
	wantLines(t, "kubectl get all -o name", k.ok(ctx, t, "-n", "gen", "get", "all", "-o", "name"), "statefulset.apps/web")

	wantLines(t, "kubectl scale", k.ok(ctx, t, "-n", "gen", "scale", "sts", "web", "--replicas=5"), "statefulset.apps/web scaled")
	if sts, err = cs.AppsV1().StatefulSets("gen").Get(ctx, "web", metav1.GetOptions{}); err != nil || *sts.Spec.Replicas != 5 || sts.Generation != 2 {
		t.Errorf("after scale: %v, replicas %v generation %d; want 5 and 2", err, sts.Spec.Replicas, sts.Generation)
	}

	_, err = cs.AppsV1().StatefulSets("gen").Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"serviceName":"other"}}`), metav1.PatchOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, `StatefulSet.apps "web" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden`)
	_, err = cs.AppsV1().StatefulSets("gen").Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"podManagementPolicy":"Sometimes"}}`), metav1.PatchOptions{})
	if st := statusOf(t, err); st.Code != 422 {
		t.Errorf("podManagementPolicy Sometimes: %v; want 422", err)
	}
}
