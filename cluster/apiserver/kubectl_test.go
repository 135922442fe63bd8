package apiserver_test

// The real kubectl (k8s.io/kubectl's command, as the kubectl binary builds
// it) against a test cluster, run the way a user runs it: as its own
// process, with a kubeconfig, reading what it prints. kubectl calls
// os.Exit itself when a command fails, so it cannot run inside the test
// process: the test binary re-executes itself with KLAB_TEST_KUBECTL=1 and
// TestMain then becomes kubectl.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/cli"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// kubectlEnv makes the test binary run kubectl with its arguments.
const kubectlEnv = "KLAB_TEST_KUBECTL"

func TestMain(m *testing.M) {
	if os.Getenv(kubectlEnv) == "1" {
		os.Exit(runKubectl())
	}
	os.Exit(m.Run())
}

// runKubectl is kubectl's main: NewDefaultKubectlCommand reads os.Args.
func runKubectl() int {
	if err := cli.RunNoErrOutput(kubectlcmd.NewDefaultKubectlCommand()); err != nil {
		cmdutil.CheckErr(err) // prints the error as kubectl does and exits
		return 1
	}
	return 0
}

// --- running kubectl ---

// kubectlUser runs kubectl commands as one user of one cluster.
type kubectlUser struct {
	kubeconfig string
	home       string // kubectl's discovery cache lives under $HOME/.kube
}

func newKubectl(t *testing.T, c *apiservertest.Cluster, user string) *kubectlUser {
	t.Helper()
	return &kubectlUser{kubeconfig: c.WriteKubeconfig(0, user), home: t.TempDir()}
}

type kubectlResult struct {
	stdout, stderr string
	code           int
}

// cmd prepares kubectl with args and extra environment variables.
func (k *kubectlUser) cmd(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "KUBECONFIG" || name == "HOME" || name == "EDITOR" || name == "KUBE_EDITOR" || strings.HasPrefix(name, "KUBECTL_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, kubectlEnv+"=1", "KUBECONFIG="+k.kubeconfig, "HOME="+k.home)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// run runs kubectl to its end.
func (k *kubectlUser) run(ctx context.Context, t *testing.T, env []string, args ...string) kubectlResult {
	t.Helper()
	cmd := k.cmd(ctx, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := kubectlResult{stdout: stdout.String(), stderr: withoutLogLines(stderr.String())}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	default:
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// ok runs kubectl and fails the test unless it succeeds; it returns the
// output.
func (k *kubectlUser) ok(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	res := k.run(ctx, t, nil, args...)
	if res.code != 0 {
		t.Fatalf("kubectl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
	}
	return res.stdout
}

// --- reading what it prints ---

// klogLine matches klog's header ("I1121 09:10:33.299642   22499 file.go:27] "):
// log lines, such as the one component-base prints in a -race build, are
// not what kubectl tells its user.
var klogLine = regexp.MustCompile(`^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^ ]+:\d+\] `)

func withoutLogLines(s string) string {
	var keep []string
	for _, line := range strings.SplitAfter(s, "\n") {
		if !klogLine.MatchString(line) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}

// table is one block of `kubectl get` output.
type table struct {
	header []string
	rows   [][]string
}

var columnGap = regexp.MustCompile(`\s{2,}`)

// parseTables splits kubectl's column output (blocks separated by blank
// lines) into tables; columns are separated by at least two spaces.
func parseTables(out string) []table {
	var tables []table
	var cur *table
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			cur = nil
			continue
		}
		fields := columnGap.Split(strings.TrimSpace(line), -1)
		if cur == nil {
			tables = append(tables, table{header: fields})
			cur = &tables[len(tables)-1]
			continue
		}
		cur.rows = append(cur.rows, fields)
	}
	return tables
}

// row returns the row whose first column is name.
func (tb table) row(name string) []string {
	for _, r := range tb.rows {
		if r[0] == name {
			return r
		}
	}
	return nil
}

// column returns the value of column col in row r.
func (tb table) column(r []string, col string) string {
	i := slices.Index(tb.header, col)
	if i < 0 || i >= len(r) {
		return ""
	}
	return r[i]
}

func wantLines(t *testing.T, what, out string, want ...string) {
	t.Helper()
	got := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if !slices.Equal(got, want) {
		t.Errorf("%s printed:\n%s\nwant:\n%s", what, out, strings.Join(want, "\n"))
	}
}

func wantMatch(t *testing.T, what, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("%s output does not match %s:\n%s", what, p, out)
		}
	}
}

// --- the walkthrough ---

const webManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: web
  labels:
    app: web
spec:
  selector:
    app: web
  ports:
  - port: 80
    targetPort: 80
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  labels:
    app: web
data:
  color: blue
`

// TestKubectl walks through what a student does with kubectl on a new
// cluster. The steps build on each other, in order.
func TestKubectl(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := adminClient(t, c)
	ctx := testContext(t, 3*testTimeout)
	k := newKubectl(t, c, auth.AdminUser)
	viewer := newKubectl(t, c, auth.ViewerUser)
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte(webManifest), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("version", func(t *testing.T) {
		res := k.run(ctx, t, nil, "version")
		wantMatch(t, "kubectl version", res.stdout, `(?m)^Client Version: v`, `(?m)^Server Version: v1\.37\.2\+klab$`)
		// A kubectl built as a library has no release version (the kubectl
		// binary gets one from its build flags), so its version-skew check
		// fails on its own client version; nothing else may go wrong.
		clientOnly := `error: client version error: could not parse pre-release/metadata (-master+$Format:%H$) in version "v0.0.0-master+$Format:%H$"`
		if res.code != 0 && strings.TrimSpace(res.stderr) != clientOnly {
			t.Errorf("kubectl version: exit %d\n%s", res.code, res.stderr)
		}
	})

	t.Run("api-resources", func(t *testing.T) {
		out := k.ok(ctx, t, "api-resources")
		tables := parseTables(out)
		if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}) {
			t.Fatalf("api-resources printed:\n%s", out)
		}
		rows := map[string]bool{}
		for _, line := range strings.Split(out, "\n")[1:] {
			rows[strings.Join(strings.Fields(line), " ")] = true
		}
		for _, want := range []string{
			"configmaps cm v1 true ConfigMap",
			"namespaces ns v1 false Namespace",
			"nodes no v1 false Node",
			"pods po v1 true Pod",
			"secrets v1 true Secret",
			"services svc v1 true Service",
			"events ev v1 true Event",
			"deployments deploy apps/v1 true Deployment",
			"replicasets rs apps/v1 true ReplicaSet",
			"daemonsets ds apps/v1 true DaemonSet",
			"controllerrevisions apps/v1 true ControllerRevision",
			"jobs batch/v1 true Job",
			"leases coordination.k8s.io/v1 true Lease",
			"endpointslices discovery.k8s.io/v1 true EndpointSlice",
			"events ev events.k8s.io/v1 true Event",
			"selfsubjectaccessreviews authorization.k8s.io/v1 false SelfSubjectAccessReview",
		} {
			if !rows[want] {
				t.Errorf("api-resources has no row %q:\n%s", want, out)
			}
		}
	})

	t.Run("namespaces", func(t *testing.T) {
		wantLines(t, "kubectl create ns x", k.ok(ctx, t, "create", "ns", "x"), "namespace/x created")
		out := k.ok(ctx, t, "get", "ns")
		tables := parseTables(out)
		if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"NAME", "STATUS", "AGE"}) {
			t.Fatalf("get ns printed:\n%s", out)
		}
		for _, ns := range append(slices.Clone(apiserver.DefaultNamespaces), "x") {
			if r := tables[0].row(ns); tables[0].column(r, "STATUS") != "Active" {
				t.Errorf("namespace %s: row %v; want Active:\n%s", ns, r, out)
			}
		}
	})

	var firstUID string
	applied := t.Run("apply", func(t *testing.T) {
		wantLines(t, "kubectl apply", k.ok(ctx, t, "apply", "-f", manifest),
			"deployment.apps/web created", "service/web created", "configmap/web-config created")
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		firstUID = string(d.UID)
		if d.Annotations["kubectl.kubernetes.io/last-applied-configuration"] == "" {
			t.Errorf("no last-applied-configuration annotation: %v", d.Annotations)
		}
	})
	if !applied {
		t.Fatal("kubectl apply failed; the later steps need its objects")
	}

	t.Run("apply again", func(t *testing.T) {
		// A change made by someone else in between: a three-way merge patch
		// keeps it, a replace would drop it.
		wantLines(t, "kubectl label", k.ok(ctx, t, "label", "deployment", "web", "tier=frontend"), "deployment.apps/web labeled")
		edited := strings.Replace(webManifest, "image: nginx:1.27", "image: nginx:1.28", 1)
		if err := os.WriteFile(manifest, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		wantLines(t, "kubectl apply (edited)", k.ok(ctx, t, "apply", "-f", manifest),
			"deployment.apps/web configured", "service/web unchanged", "configmap/web-config unchanged")
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(d.UID) != firstUID {
			t.Errorf("uid changed %s -> %s: the deployment was recreated", firstUID, d.UID)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" {
			t.Errorf("image %s; want nginx:1.28", img)
		}
		if d.Labels["tier"] != "frontend" {
			t.Errorf("labels %v: the tier label set between the applies is gone", d.Labels)
		}
		if d.Generation != 2 {
			t.Errorf("generation %d; want 2 (one spec change since creation)", d.Generation)
		}
		if verb := lastWriteVerb(ctx, t, cs, start, "deployments", "web"); verb != "patch" {
			t.Errorf("kubectl apply wrote the deployment with %q; want patch", verb)
		}
	})

	t.Run("get -o wide", func(t *testing.T) {
		out := k.ok(ctx, t, "get", "deploy,svc,cm", "-o", "wide")
		tables := parseTables(out)
		if len(tables) != 3 {
			t.Fatalf("want three tables:\n%s", out)
		}
		for i, want := range [][]string{
			{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"},
			{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"},
			{"NAME", "DATA", "AGE"},
		} {
			if !slices.Equal(tables[i].header, want) {
				t.Errorf("table %d header %v; want %v", i, tables[i].header, want)
			}
		}
		deploy, svcs, cms := tables[0], tables[1], tables[2]
		if r := deploy.row("deployment.apps/web"); !slices.Equal(r[1:4], []string{"0/2", "0", "0"}) || !slices.Equal(r[5:], []string{"nginx", "nginx:1.28", "app=web"}) {
			t.Errorf("deployment row %v", r)
		}
		svc, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r := svcs.row("service/web"); !slices.Equal(r[1:5], []string{"ClusterIP", svc.Spec.ClusterIP, "<none>", "80/TCP"}) || svcs.column(r, "SELECTOR") != "app=web" {
			t.Errorf("service row %v", r)
		}
		if r := svcs.row("service/kubernetes"); !slices.Equal(r[1:5], []string{"ClusterIP", "10.96.0.1", "<none>", "443/TCP"}) {
			t.Errorf("kubernetes service row %v", r)
		}
		if r := cms.row("configmap/web-config"); cms.column(r, "DATA") != "1" {
			t.Errorf("configmap row %v", r)
		}
	})

	t.Run("get -o yaml", func(t *testing.T) {
		out := k.ok(ctx, t, "get", "deployment", "web", "-o", "yaml")
		wantMatch(t, "get -o yaml", out, `(?m)^apiVersion: apps/v1$`, `(?m)^kind: Deployment$`, `(?m)^  name: web$`,
			`(?m)^  uid: `+firstUID+`$`, `(?m)^  resourceVersion: "\d+"$`, `(?m)^    tier: frontend$`, `(?m)^  replicas: 2$`)
	})

	t.Run("get -l", func(t *testing.T) {
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", "other", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		out := k.ok(ctx, t, "get", "cm", "-l", "app=web")
		tables := parseTables(out)
		if len(tables) != 1 || len(tables[0].rows) != 1 || tables[0].rows[0][0] != "web-config" {
			t.Errorf("get cm -l app=web printed:\n%s", out)
		}
		// "all" is a category from discovery.
		out = k.ok(ctx, t, "get", "all", "-l", "app=web", "-o", "name")
		wantLines(t, "get all -l app=web -o name", out, "service/web", "deployment.apps/web")
	})

	t.Run("describe", func(t *testing.T) {
		out := k.ok(ctx, t, "describe", "deploy", "web")
		wantMatch(t, "describe deploy web", out,
			`(?m)^Name:\s+web$`, `(?m)^Namespace:\s+default$`, `(?m)^Labels:\s+app=web$`, `(?m)^Selector:\s+app=web$`,
			`(?m)^Replicas:\s+2 desired \| 0 updated \| 0 total \| 0 available \| 0 unavailable$`,
			`(?m)^StrategyType:\s+RollingUpdate$`, `(?m)^\s+Image:\s+nginx:1\.28$`)
	})

	t.Run("scale", func(t *testing.T) {
		wantLines(t, "kubectl scale", k.ok(ctx, t, "scale", "deployment", "web", "--replicas=3"), "deployment.apps/web scaled")
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 3 {
			t.Errorf("replicas %d; want 3", *d.Spec.Replicas)
		}
	})

	t.Run("annotate", func(t *testing.T) {
		wantLines(t, "kubectl annotate", k.ok(ctx, t, "annotate", "deployment", "web", "klab.dev/note=hello"), "deployment.apps/web annotated")
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Annotations["klab.dev/note"] != "hello" {
			t.Errorf("annotations %v", d.Annotations)
		}
	})

	t.Run("edit", func(t *testing.T) {
		res := k.run(ctx, t, []string{"EDITOR=sed -i 's/color: blue/color: green/'"}, "edit", "configmap", "web-config")
		if res.code != 0 {
			t.Fatalf("kubectl edit: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		wantLines(t, "kubectl edit", res.stdout, "configmap/web-config edited")
		cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "web-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["color"] != "green" {
			t.Errorf("data %v; want color green", cm.Data)
		}
	})

	t.Run("get -w", func(t *testing.T) {
		watchCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		cmd := k.cmd(watchCtx, nil, "get", "configmaps", "-w")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			cancel() // kills the kubectl process started above
			cmd.Wait()
		}()
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				select {
				case lines <- sc.Text():
				case <-watchCtx.Done():
					return
				}
			}
		}()
		next := func(what string, match func(string) bool) string {
			t.Helper()
			var seen []string
			for {
				select {
				case line, ok := <-lines:
					if !ok {
						t.Fatalf("kubectl get -w ended before %s; printed:\n%s", what, strings.Join(seen, "\n"))
					}
					seen = append(seen, line)
					if match(line) {
						return line
					}
				case <-ctx.Done():
					t.Fatalf("no %s from kubectl get -w; printed:\n%s", what, strings.Join(seen, "\n"))
				}
			}
		}
		next("web-config in the initial list", func(l string) bool { return strings.HasPrefix(l, "web-config ") })
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", "watched", map[string]string{"a": "1", "b": "2"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		line := next("the new configmap", func(l string) bool { return strings.HasPrefix(l, "watched ") })
		if f := strings.Fields(line); len(f) != 3 || f[1] != "2" {
			t.Errorf("watch line %q; want NAME DATA AGE with DATA 2", line)
		}
	})

	t.Run("delete", func(t *testing.T) {
		wantLines(t, "kubectl delete", k.ok(ctx, t, "delete", "configmap", "web-config"), `configmap "web-config" deleted from default namespace`)
		res := k.run(ctx, t, nil, "get", "configmap", "web-config")
		if res.code != 1 || strings.TrimSpace(res.stderr) != `Error from server (NotFound): configmaps "web-config" not found` {
			t.Errorf("get after delete: exit %d stderr %q", res.code, res.stderr)
		}
	})

	t.Run("auth can-i", func(t *testing.T) {
		wantLines(t, "admin: auth can-i create pods", k.ok(ctx, t, "auth", "can-i", "create", "pods"), "yes")
		res := viewer.run(ctx, t, nil, "auth", "can-i", "create", "pods")
		if res.code != 1 || strings.TrimSpace(res.stdout) != "no" {
			t.Errorf("viewer: auth can-i create pods: exit %d stdout %q; want 1, no", res.code, res.stdout)
		}
		wantLines(t, "viewer: auth can-i list pods", viewer.ok(ctx, t, "auth", "can-i", "list", "pods"), "yes")
	})

	t.Run("viewer is forbidden", func(t *testing.T) {
		res := viewer.run(ctx, t, nil, "create", "configmap", "nope", "--from-literal=a=b")
		want := `configmaps is forbidden: User "klab-viewer" cannot create resource "configmaps" in API group "" in the namespace "default"`
		if res.code != 1 || !strings.Contains(res.stderr, want) {
			t.Errorf("viewer create: exit %d stderr %q; want 1 and %q", res.code, res.stderr, want)
		}
	})

	t.Run("auth whoami", func(t *testing.T) {
		out := k.ok(ctx, t, "auth", "whoami")
		tables := parseTables(out)
		if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"ATTRIBUTE", "VALUE"}) {
			t.Fatalf("auth whoami printed:\n%s", out)
		}
		tb := tables[0]
		if r := tb.row("Username"); tb.column(r, "VALUE") != auth.AdminUser {
			t.Errorf("Username row %v; want %s", r, auth.AdminUser)
		}
		if r := tb.row("Groups"); tb.column(r, "VALUE") != "[system:masters system:authenticated]" {
			t.Errorf("Groups row %v; want [system:masters system:authenticated]", r)
		}
	})
}

// --- the API server's request log ---

// lastWriteVerb returns the verb of the last write to the named object
// since start, from the API server's request log (/debug/klab/events sends
// the recent requests, then new ones as they end; a GET /version made
// after subscribing marks where the past ends).
func lastWriteVerb(ctx context.Context, t *testing.T, cs kubernetes.Interface, start time.Time, resource, name string) string {
	t.Helper()
	readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/klab/events").Stream(readCtx)
	if err != nil {
		t.Fatalf("request log: %v", err)
	}
	defer stream.Close()
	marker := time.Now()
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
	verb := ""
	sc := bufio.NewScanner(stream)
	for sc.Scan() {
		var ev apiserver.RequestEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("request log line %q: %v", sc.Text(), err)
		}
		if ev.Time.Before(start) {
			continue
		}
		if ev.Path == "/version" && !ev.Time.Before(marker) {
			return verb
		}
		if ev.Resource == resource && ev.Name == name && ev.Verb != "get" {
			verb = ev.Verb
		}
	}
	t.Fatalf("request log ended before the marker request: %v", sc.Err())
	return ""
}
