package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestKubectlThroughTheLoadBalancer runs the real kubectl (klab kubectl, in
// a process of its own) against a 3-master cluster started as klab up
// starts it, and keeps using it while one API server is stopped: the
// kubeconfig points at the load balancer, which skips the dead server.
func TestKubectlThroughTheLoadBalancer(t *testing.T) {
	testenv.EndToEnd(t)
	testHome(t)
	t.Setenv("KUBECONFIG", "")
	i18n.SetLang(i18n.English)
	const name = "klab-test-kubectl-lb"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := lab.Up(ctx, lab.Spec{Name: name, Masters: 3, Speed: 1, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background(), nil)

	// klab status -o json tells scripts where the API server and the
	// kubeconfig are.
	code, stdout, stderr := klab(t, "status", "--name", name, "-o", "json")
	if code != 0 {
		t.Fatalf("status exited %d: %s", code, stderr)
	}
	var st struct {
		APIServer  string `json:"apiServer"`
		Kubeconfig string `json:"kubeconfig"`
	}
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.APIServer != c.Info().APIServer || !strings.HasPrefix(st.APIServer, "https://") || st.Kubeconfig == "" {
		t.Fatalf("status apiServer=%q kubeconfig=%q, want the load balancer's https URL and a kubeconfig", st.APIServer, st.Kubeconfig)
	}
	if c.Info().LB == nil || !strings.Contains(st.APIServer, c.Info().LB.Host) {
		t.Fatalf("kubeconfig server %s is not the load balancer %+v", st.APIServer, c.Info().LB)
	}

	kubectl := func(args ...string) (int, string, string) {
		t.Helper()
		return klabProcess(t, append([]string{"kubectl", "--name", name}, args...)...)
	}
	code, stdout, stderr = kubectl("get", "ns")
	if code != 0 {
		t.Fatalf("kubectl get ns exited %d: %s", code, stderr)
	}
	for _, want := range []string{"NAME", "STATUS", "AGE", "default", "kube-system", "kube-public", "kube-node-lease", "Active"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("kubectl get ns lacks %q:\n%s", want, stdout)
		}
	}

	// kubectl auth can-i answers "no" by ending its process: the runner
	// the TUI and the lessons use must give it a process of its own, or
	// a student's can-i would end the TUI (this test process here).
	t.Setenv("KLAB_TEST_MAIN", "1") // the runner's child is this test binary
	run := newRunner("")
	for _, tc := range []struct {
		verb, want string
		code       int
	}{{"list", "yes", 0}, {"create", "no", 1}} {
		var out, errOut bytes.Buffer
		err := run(ctx, []string{"klab", "kubectl", "--name", name, "auth", "can-i", tc.verb, "pods", "--as=klab-viewer"}, &out, &errOut)
		var exit exitError
		gotCode := 0
		if asExit(err, &exit) {
			gotCode = exit.code
		} else if err != nil {
			t.Fatalf("can-i %s pods: %v (%s)", tc.verb, err, errOut.String())
		}
		if gotCode != tc.code || strings.TrimSpace(out.String()) != tc.want {
			t.Errorf("can-i %s pods as klab-viewer: exit %d, %q; want exit %d, %q", tc.verb, gotCode, out.String(), tc.code, tc.want)
		}
	}

	// What kubectl writes to os.Stderr itself, not to its streams, comes
	// out with the command's output when the runner runs it in process:
	// kubectl logs of a Deployment with two pods says which one it reads.
	if code, _, stderr := kubectl("create", "deployment", "two", "--image=klab/app", "--replicas=2"); code != 0 {
		t.Fatalf("create deployment: %s", stderr)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		_, out, _ := kubectl("get", "pods", "-l", "app=two", "-o", "name")
		if len(strings.Fields(out)) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployment two has pods %q, want 2", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var logsOut, logsErr bytes.Buffer
	_ = run(ctx, []string{"klab", "kubectl", "--name", name, "logs", "deploy/two"}, &logsOut, &logsErr)
	if !strings.Contains(logsErr.String(), "Found 2 pods, using pod/two-") {
		t.Errorf("kubectl logs deploy/two in process: stderr %q lacks kubectl's \"Found 2 pods\" line", logsErr.String())
	}

	// A YAML error in the second document is reported at the file's line.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# second\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  x: : y\n"
	if err := os.WriteFile(bad, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = kubectl("apply", "-f", bad)
	if code == 0 || !strings.Contains(stderr, bad+":12:") || !strings.Contains(stderr, "document 2") {
		t.Fatalf("apply of a broken manifest exited %d with %q, want the error at %s:12 in document 2", code, stderr, bad)
	}

	// Stop master-1's API server: kubectl keeps working.
	ref := runtime.Ref{Node: "master-1", Component: runtime.ComponentAPIServer}
	if err := c.Runtime().Stop(ctx, ref); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		code, stdout, stderr = kubectl("create", "configmap", "after-stop-"+string(rune('a'+i)), "--from-literal=k=v")
		if code != 0 || !strings.Contains(stdout, "created") {
			t.Fatalf("kubectl create with master-1's API server stopped exited %d: %s%s", code, stdout, stderr)
		}
	}
	code, stdout, stderr = kubectl("get", "configmaps", "-o", "name")
	if code != 0 || strings.Count(stdout, "configmap/after-stop-") != 3 {
		t.Fatalf("kubectl get configmaps exited %d:\n%s%s", code, stdout, stderr)
	}
}
