package apiserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// manager is one managedFields entry, reduced to what the tests compare.
type manager struct {
	Manager, Operation, Subresource, APIVersion, Fields string
}

// managersOf returns obj's managedFields entries sorted by manager (the
// library keeps them in an order of its own).
func managersOf(obj metav1.Object) []manager {
	var out []manager
	for _, e := range obj.GetManagedFields() {
		fields := ""
		if e.FieldsV1 != nil {
			fields = string(e.FieldsV1.Raw)
		}
		out = append(out, manager{e.Manager, string(e.Operation), e.Subresource, e.APIVersion, fields})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Manager < out[j].Manager })
	return out
}

// writeManifest writes a manifest into dir and returns its path.
func writeManifest(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestManagedFields follows one object through the writes a student and
// the controllers make and checks the managers upstream records for each:
// kubectl's own names (kubectl-create, kubectl-edit,
// kubectl-client-side-apply), the User-Agent's program for a client that
// names none, the status subresource, and the fieldManager parameter.
func TestManagedFields(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	cs := adminClient(t, c)
	createNamespace(ctx, t, cs, "mf")
	k := newKubectl(t, c, auth.AdminUser)
	dir := t.TempDir()

	get := func() *corev1.ConfigMap {
		t.Helper()
		cm, err := cs.CoreV1().ConfigMaps("mf").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	k.ok(ctx, t, "-n", "mf", "create", "configmap", "web", "--from-literal=color=blue")
	want := []manager{{"kubectl-create", "Update", "", "v1", `{"f:data":{".":{},"f:color":{}}}`}}
	if diff := cmp.Diff(want, managersOf(get())); diff != "" {
		t.Errorf("after kubectl create (-want +got):\n%s", diff)
	}

	res := k.run(ctx, t, []string{"EDITOR=sed -i 's/color: blue/color: green/'"}, "-n", "mf", "edit", "configmap", "web")
	if res.code != 0 {
		t.Fatalf("kubectl edit: exit %d\n%s", res.code, res.stderr)
	}
	want = []manager{
		{"kubectl-create", "Update", "", "v1", `{"f:data":{}}`},
		{"kubectl-edit", "Update", "", "v1", `{"f:data":{"f:color":{}}}`},
	}
	if diff := cmp.Diff(want, managersOf(get())); diff != "" {
		t.Errorf("after kubectl edit (-want +got):\n%s", diff)
	}

	// A client that names no manager is known by its User-Agent's
	// program, as the controller manager's clients are.
	cfg := c.Config(0, auth.AdminUser)
	cfg.UserAgent = "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/klab/system:serviceaccount:kube-system:generic"
	controller, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cm := get()
	cm.Labels = map[string]string{"owner": "controller"}
	if _, err := controller.CoreV1().ConfigMaps("mf").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := managersOf(get()); len(got) != 3 || got[0] != (manager{"kube-controller-manager", "Update", "", "v1", `{"f:metadata":{"f:labels":{".":{},"f:owner":{}}}}`}) {
		t.Errorf("after an update by User-Agent kube-controller-manager/...: %+v", got)
	}

	// kubectl shows them only when asked.
	out := k.ok(ctx, t, "-n", "mf", "get", "configmap", "web", "-o", "yaml")
	if strings.Contains(out, "managedFields") {
		t.Errorf("get -o yaml shows managedFields without --show-managed-fields:\n%s", out)
	}
	out = k.ok(ctx, t, "-n", "mf", "get", "configmap", "web", "-o", "yaml", "--show-managed-fields")
	wantMatch(t, "get -o yaml --show-managed-fields", out, `(?m)^  managedFields:$`,
		`(?m)^    manager: kubectl-create$`, `(?m)^    manager: kubectl-edit$`, `(?m)^    manager: kube-controller-manager$`,
		`(?m)^    operation: Update$`, `(?m)^    fieldsType: FieldsV1$`, `(?m)^    time: "`)

	// The status subresource is recorded as such; a pod's status belongs
	// to whoever writes it there, and a strategy's defaults to the creator.
	pod, err := cs.CoreV1().Pods("mf").Create(ctx, pod("mf", "p", ""), metav1.CreateOptions{FieldManager: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if got := managersOf(pod); len(got) != 1 || got[0].Manager != "tester" || !strings.Contains(got[0].Fields, `"f:dnsPolicy":{}`) || strings.Contains(got[0].Fields, "f:status") {
		t.Errorf("new pod's managedFields: %+v; want tester owning the spec with its defaults, no status", got)
	}
	pod.Status.Message = "hello"
	if pod, err = cs.CoreV1().Pods("mf").UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		t.Fatal(err)
	}
	if got := managersOf(pod); len(got) != 2 || got[0] != (manager{"kubelet", "Update", "status", "v1", `{"f:status":{"f:message":{}}}`}) {
		t.Errorf("after a status update: %+v", got)
	}

	// kubectl apply (client-side) is kubectl-client-side-apply.
	path := writeManifest(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csa\n  namespace: mf\ndata:\n  a: \"1\"\n")
	k.ok(ctx, t, "apply", "-f", path)
	csa, err := cs.CoreV1().ConfigMaps("mf").Get(ctx, "csa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managersOf(csa); len(got) != 1 || got[0].Manager != "kubectl-client-side-apply" || got[0].Operation != "Update" {
		t.Errorf("after kubectl apply: %+v", got)
	}

	// A manager's name is validated as upstream validates it.
	_, err = cs.CoreV1().ConfigMaps("mf").Create(ctx, configMap("mf", "bad", nil), metav1.CreateOptions{FieldManager: strings.Repeat("x", 129)})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, `CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes`)
}

const sharedConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
  namespace: ssa
data:
  color: %s
`

// TestServerSideApply drives server-side apply with the real kubectl: two
// managers, upstream's conflict, --force-conflicts, dry run, kubectl diff,
// and the upgrade of a client-side applied object.
func TestServerSideApply(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	cs := adminClient(t, c)
	createNamespace(ctx, t, cs, "ssa")
	k := newKubectl(t, c, auth.AdminUser)
	dir := t.TempDir()
	blue := writeManifest(t, dir, "blue.yaml", strings.Replace(sharedConfigMap, "%s", "blue", 1))
	red := writeManifest(t, dir, "red.yaml", strings.Replace(sharedConfigMap, "%s", "red", 1))
	get := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cs.CoreV1().ConfigMaps("ssa").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}

	wantLines(t, "alice applies", k.ok(ctx, t, "apply", "--server-side", "--field-manager=alice", "-f", blue), "configmap/shared serverside-applied")
	want := []manager{{"alice", "Apply", "", "v1", `{"f:data":{"f:color":{}}}`}}
	if diff := cmp.Diff(want, managersOf(get("shared"))); diff != "" {
		t.Errorf("after alice's apply (-want +got):\n%s", diff)
	}
	wantLines(t, "alice applies again", k.ok(ctx, t, "apply", "--server-side", "--field-manager=alice", "-f", blue), "configmap/shared serverside-applied")

	res := k.run(ctx, t, nil, "apply", "--server-side", "--field-manager=bob", "-f", red)
	if res.code != 1 || !strings.Contains(res.stderr, `error: Apply failed with 1 conflict: conflict with "alice": .data.color`) ||
		!strings.Contains(res.stderr, "--force-conflicts") {
		t.Errorf("bob's conflicting apply: exit %d\n%s", res.code, res.stderr)
	}
	if cm := get("shared"); cm.Data["color"] != "blue" {
		t.Errorf("color %q after a refused apply; want blue", cm.Data["color"])
	}

	// Dry run and diff show the change without making it.
	out := k.ok(ctx, t, "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "--dry-run=server", "-o", "jsonpath={.data.color}", "-f", red)
	if out != "red" {
		t.Errorf("dry-run apply answered color %q; want red", out)
	}
	res = k.run(ctx, t, nil, "diff", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", red)
	if res.code != 1 || !strings.Contains(res.stdout, "-  color: blue") || !strings.Contains(res.stdout, "+  color: red") {
		t.Errorf("kubectl diff: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if cm := get("shared"); cm.Data["color"] != "blue" || len(cm.ManagedFields) != 1 {
		t.Errorf("after dry run and diff: %v %+v; want blue, alice alone", cm.Data, managersOf(cm))
	}

	wantLines(t, "bob forces", k.ok(ctx, t, "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", red), "configmap/shared serverside-applied")
	cm := get("shared")
	want = []manager{{"bob", "Apply", "", "v1", `{"f:data":{"f:color":{}}}`}}
	if diff := cmp.Diff(want, managersOf(cm)); diff != "" || cm.Data["color"] != "red" {
		t.Errorf("after bob's forced apply, color %q (-want +got):\n%s", cm.Data["color"], diff)
	}

	// A field dropped from a manager's configuration is removed when no
	// one else owns it.
	noColor := writeManifest(t, dir, "none.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: ssa\ndata:\n  size: big\n")
	k.ok(ctx, t, "apply", "--server-side", "--field-manager=bob", "-f", noColor)
	if cm := get("shared"); !cmp.Equal(cm.Data, map[string]string{"size": "big"}) {
		t.Errorf("data %v after bob dropped color; want only size", cm.Data)
	}

	// From client-side to server-side apply: kubectl moves the
	// client-side manager's fields to its own, so the change is no
	// conflict.
	csa := writeManifest(t, dir, "csa.yaml", strings.Replace(strings.Replace(sharedConfigMap, "%s", "blue", 1), "shared", "upgraded", 1))
	k.ok(ctx, t, "apply", "-f", csa)
	csaRed := writeManifest(t, dir, "csa-red.yaml", strings.Replace(strings.Replace(sharedConfigMap, "%s", "red", 1), "shared", "upgraded", 1))
	wantLines(t, "apply --server-side after a client-side apply", k.ok(ctx, t, "apply", "--server-side", "-f", csaRed), "configmap/upgraded serverside-applied")
	up := get("upgraded")
	if up.Data["color"] != "red" {
		t.Errorf("upgraded color %q; want red", up.Data["color"])
	}
	var applier *manager
	for _, m := range managersOf(up) {
		if m.Manager == "kubectl-client-side-apply" && strings.Contains(m.Fields, "f:color") {
			t.Errorf("kubectl-client-side-apply still owns color after the upgrade: %+v", managersOf(up))
		}
		if m.Manager == "kubectl" && m.Operation == "Apply" {
			applier = &m
		}
	}
	if applier == nil || !strings.Contains(applier.Fields, "f:color") {
		t.Errorf("no kubectl Apply entry owning color after the upgrade: %+v", managersOf(up))
	}

	// Apply is PATCH with a manager: without one it is refused.
	body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}})
	err := cs.CoreV1().RESTClient().Patch("application/apply-patch+yaml").Namespace("ssa").Resource("configmaps").Name("x").Body(body).Do(ctx).Error()
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`)
}
