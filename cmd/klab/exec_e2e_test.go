package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
)

// kubectlRunner runs one kubectl: klab's own (k8s.io/kubectl built in) or
// a kubectl binary found on PATH, with a protocol's environment.
type kubectlRunner struct {
	t          *testing.T
	argv       []string // the program and its leading arguments
	env        []string
	kubeconfig string
}

func (k kubectlRunner) command(ctx context.Context, args ...string) *exec.Cmd {
	argv := append(append([]string{}, k.argv...), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "KLAB_TEST_MAIN=1", "KUBECONFIG="+k.kubeconfig), k.env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs kubectl to the end (a minute at most: nothing may hang) with
// stdin, and returns its exit code and output.
func (k kubectlRunner) run(stdin string, args ...string) (int, string, string) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := k.command(ctx, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	if ctx.Err() != nil {
		k.t.Fatalf("kubectl %q did not finish within a minute: %s%s", args, out.String(), errOut.String())
	}
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		k.t.Fatalf("run kubectl %q: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

// background is a kubectl that keeps running (port-forward, attach),
// whose output the test reads as it comes.
type background struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	mu     sync.Mutex
	out    strings.Builder
	grew   chan struct{}
}

func (k kubectlRunner) start(args ...string) *background {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	b := &background{cancel: cancel, grew: make(chan struct{}, 1)}
	b.cmd = k.command(ctx, args...)
	w := writerFunc(func(p []byte) (int, error) {
		b.mu.Lock()
		b.out.Write(p)
		b.mu.Unlock()
		select {
		case b.grew <- struct{}{}:
		default:
		}
		return len(p), nil
	})
	b.cmd.Stdout, b.cmd.Stderr = w, w
	if err := b.cmd.Start(); err != nil {
		cancel()
		k.t.Fatal(err)
	}
	k.t.Cleanup(b.stop)
	return b
}

func (b *background) stop() {
	b.cancel()
	b.cmd.Wait()
}

// waitFor waits until the output matches re and returns the match.
func (b *background) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	return b.waitPoking(t, re, nil)
}

// waitPoking waits as waitFor does, calling poke at once and again every
// second without a match: kubectl attach says nothing when its stream is
// up, so the test makes the container write until the output shows.
func (b *background) waitPoking(t *testing.T, re *regexp.Regexp, poke func()) []string {
	t.Helper()
	deadline := time.After(time.Minute)
	var again <-chan time.Time
	if poke != nil {
		poke()
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		again = ticker.C
	}
	for {
		b.mu.Lock()
		m := re.FindStringSubmatch(b.out.String())
		out := b.out.String()
		b.mu.Unlock()
		if m != nil {
			return m
		}
		select {
		case <-b.grew:
		case <-again:
			poke()
		case <-deadline:
			t.Fatalf("kubectl %q never printed %s; it printed:\n%s", b.cmd.Args, re, out)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestIntoThePod runs what a student does first with a pod, with the real
// kubectl over both protocols it speaks, against a local cluster started as
// klab up starts it: exec (a command, an exit code, stdin), cp in and out,
// port-forward then an HTTP GET, attach, the proxy subresources, and the
// bad cases (a missing container, a command that does not exist, a closed
// port, a finished pod), each with upstream's error and none hanging.
func TestIntoThePod(t *testing.T) {
	testenv.EndToEnd(t)
	testHome(t)
	t.Setenv("KUBECONFIG", "")
	i18n.SetLang(i18n.English)
	const name = "klab-test-exec"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := lab.Up(ctx, lab.Spec{Name: name, Masters: 1, Workers: 1, Speed: 1, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background(), nil)
	code, stdout, stderr := klab(t, "status", "--name", name, "-o", "json")
	if code != 0 {
		t.Fatalf("status exited %d: %s", code, stderr)
	}
	var st struct {
		Kubeconfig string `json:"kubeconfig"`
	}
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatal(err)
	}

	kubectls := map[string][]string{"klab kubectl": {os.Args[0], "kubectl", "--name", name}}
	if path, err := exec.LookPath("kubectl"); err == nil {
		kubectls["kubectl on PATH"] = []string{path}
	}
	setup := kubectlRunner{t: t, argv: kubectls["klab kubectl"], kubeconfig: st.Kubeconfig}
	for _, args := range [][]string{
		{"run", "web", "--image=klab/app", "--port=8080"},
		{"run", "done", "--image=klab/app", "--restart=Never", "--", "--exit-after=1s"},
		{"expose", "pod", "web", "--port=80", "--target-port=8080"},
		{"wait", "--for=condition=Ready", "pod/web", "--timeout=60s"},
		{"wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/done", "--timeout=60s"},
	} {
		if code, out, errOut := setup.run("", args...); code != 0 {
			t.Fatalf("kubectl %q exited %d: %s%s", args, code, out, errOut)
		}
	}

	protocols := map[string][]string{
		"websockets": nil,
		"spdy":       {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "PORT_FORWARD_WEBSOCKETS=false"},
	}
	for kname, argv := range kubectls {
		for pname, env := range protocols {
			t.Run(kname+"/"+pname, func(t *testing.T) {
				k := kubectlRunner{t: t, argv: argv, env: env, kubeconfig: st.Kubeconfig}
				testIntoThePod(t, k)
				// Reading pods does not let one into them: exec needs
				// create on pods/exec (and a WebSocket's GET get too).
				viewer := k
				viewer.argv = kubectls["kubectl on PATH"]
				if viewer.argv == nil {
					viewer.argv = []string{os.Args[0], "kubectl"}
				}
				viewer.kubeconfig = filepath.Join(c.Dir(), lab.ViewerKubeconfigFile)
				code, out, errOut := viewer.run("", "exec", "web", "--", "ls")
				if code == 0 || !regexp.MustCompile(`User "klab-viewer" cannot (get|create) resource "pods/exec" in API group "" in the namespace "default"`).MatchString(errOut) {
					t.Errorf("exec as the viewer exited %d: %s%s; want upstream's Forbidden", code, out, errOut)
				}
			})
		}
	}
}

func testIntoThePod(t *testing.T, k kubectlRunner) {
	expect := func(name string, stdin string, args []string, wantCode int, wantOut, wantErr string) {
		t.Helper()
		code, out, errOut := k.run(stdin, args...)
		if code != wantCode || !strings.Contains(out, wantOut) || !strings.Contains(errOut, wantErr) {
			t.Errorf("%s: kubectl %q exited %d with\nstdout %q\nstderr %q\nwant %d, stdout with %q, stderr with %q",
				name, args, code, out, errOut, wantCode, wantOut, wantErr)
		}
	}
	expect("ls /", "", []string{"exec", "web", "--", "ls", "/"}, 0, "etc\nhome\nproc\nroot\nrun\nsys\ntmp\n", "")
	expect("exit code", "", []string{"exec", "web", "--", "sh", "-c", "echo out; echo err >&2; exit 3"}, 3, "out\n", "command terminated with exit code 3")
	expect("stdin", "one\ntwo\n", []string{"exec", "-i", "web", "--", "wc", "-l"}, 0, "2\n", "")
	expect("the pod's hostname and hosts file", "", []string{"exec", "web", "--", "sh", "-c", "hostname; grep web /etc/hosts | wc -l"}, 0, "web\n1\n", "")
	expect("missing container", "", []string{"exec", "web", "-c", "nosuch", "--", "ls"}, 1, "", "container nosuch is not valid for pod web")
	expect("command not found", "", []string{"exec", "web", "--", "nosuch"}, 1, "", `exec: "nosuch": executable file not found in $PATH`)
	expect("not found in a shell", "", []string{"exec", "web", "--", "sh", "-c", "nosuch"}, 127, "", "sh: nosuch: not found")
	expect("finished pod", "", []string{"exec", "done", "--", "ls"}, 1, "", "cannot exec into a container in a completed pod; current phase is Succeeded")
	expect("attach to a finished pod", "", []string{"attach", "done"}, 1, "", "cannot attach a container in a completed pod; current phase is Succeeded")

	// cp in and out: kubectl runs tar in the pod.
	dir := t.TempDir()
	local := filepath.Join(dir, "in.txt")
	content := "copied " + strings.Repeat("x", 3000) + "\n"
	if err := os.WriteFile(local, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	expect("cp in", "", []string{"cp", local, "web:/tmp/in.txt"}, 0, "", "")
	expect("cp landed", "", []string{"exec", "web", "--", "cat", "/tmp/in.txt"}, 0, content, "")
	back := filepath.Join(dir, "out.txt")
	expect("cp out", "", []string{"cp", "web:/tmp/in.txt", back}, 0, "", "")
	if got, err := os.ReadFile(back); err != nil || string(got) != content {
		t.Errorf("cp out gave %d bytes (%v), want the %d copied in", len(got), err, len(content))
	}

	// port-forward, then an HTTP GET through it.
	pf := k.start("port-forward", "pod/web", ":8080")
	port := pf.waitFor(t, regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`))[1]
	body := httpGet(t, "http://127.0.0.1:"+port+"/")
	if !strings.Contains(body, "web") {
		t.Errorf("GET through port-forward answered %q, want the app's page naming pod web", body)
	}

	// attach: the app's request log appears as it is written.
	at := k.start("attach", "web")
	marker := fmt.Sprintf("/attach-marker-%d", time.Now().UnixNano())
	at.waitPoking(t, regexp.MustCompile(regexp.QuoteMeta(marker)), func() { httpGet(t, "http://127.0.0.1:"+port+marker) })
	at.stop()
	pf.stop()

	// port-forward to a service: kubectl picks a pod behind it.
	svc := k.start("port-forward", "svc/web", ":80")
	port = svc.waitFor(t, regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`))[1]
	if body := httpGet(t, "http://127.0.0.1:"+port+"/"); !strings.Contains(body, "web") {
		t.Errorf("GET through port-forward svc/web answered %q", body)
	}
	svc.stop()

	// A closed port: the GET fails and kubectl says why.
	closed := k.start("port-forward", "pod/web", ":9999")
	port = closed.waitFor(t, regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 9999`))[1]
	if resp, err := http.Get("http://127.0.0.1:" + port + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("GET through a port-forward to a closed port answered %s", resp.Status)
	}
	closed.waitFor(t, regexp.MustCompile(`error forwarding port 9999 to pod .*: failed to connect to .*:9999: .*connection refused`))
	closed.stop()

	// The proxy subresources.
	expect("pods/proxy", "", []string{"get", "--raw", "/api/v1/namespaces/default/pods/web:8080/proxy/"}, 0, "web", "")
	expect("services/proxy", "", []string{"get", "--raw", "/api/v1/namespaces/default/services/web:80/proxy/"}, 0, "web", "")
	expect("nodes/proxy", "", []string{"get", "--raw", "/api/v1/nodes/worker-1/proxy/healthz"}, 0, "ok", "")
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return string(data)
}
