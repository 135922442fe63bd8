package lab

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestDockerExec execs into a klab/app pod of a Docker cluster with
// kubectl: the image's /bin/sh and tools are klab's shell, run by the
// engine's exec in the pod's container, over WebSockets and SPDY; cp goes
// in and out through the image's tar.
func TestDockerExec(t *testing.T) {
	bin := requireDocker(t)
	home := testHome(t)
	name := dockerClusterName(t, "kx")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c, err := Up(ctx, Spec{Name: name, Masters: 1, Workers: 1, Speed: 10, Runtime: RuntimeDocker, NoFsync: true}, Options{Binary: bin})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	f := &loopFixture{t: t, name: name, c: c, ctx: ctx}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if f.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.AppsV1().Deployments("default").Create(ctx, deployment("web", 1, "klab/app:latest"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := f.waitRunning("app=web", 1, 2*time.Minute)[0]

	kubectl := func(env []string, stdin string, args ...string) (int, string, string) {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, time.Minute)
		defer ccancel()
		cmd := exec.CommandContext(cctx, bin, append([]string{"kubectl", "--name", name}, args...)...)
		cmd.Env = append(append(os.Environ(), "KLAB_HOME="+home, "KLAB_LANG=en"), env...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		code := 0
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("kubectl %q: %v", args, err)
		}
		return code, out.String(), errOut.String()
	}
	for pname, env := range map[string][]string{"websockets": nil, "spdy": {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false"}} {
		t.Run(pname, func(t *testing.T) {
			check := func(stdin string, args []string, wantCode int, wantOut, wantErr string) {
				t.Helper()
				code, out, errOut := kubectl(env, stdin, args...)
				if code != wantCode || !strings.Contains(out, wantOut) || !strings.Contains(errOut, wantErr) {
					t.Errorf("kubectl %q exited %d with stdout %q stderr %q; want %d, %q, %q", args, code, out, errOut, wantCode, wantOut, wantErr)
				}
			}
			check("", []string{"exec", pod.Name, "--", "ls", "/bin"}, 0, "sh\n", "")
			check("", []string{"exec", pod.Name, "--", "sh", "-c", "hostname; exit 3"}, 3, pod.Name+"\n", "command terminated with exit code 3")
			check("a\nb\n", []string{"exec", "-i", pod.Name, "--", "wc", "-l"}, 0, "2\n", "")
			dir := t.TempDir()
			local := filepath.Join(dir, "in.txt")
			if err := os.WriteFile(local, []byte("through docker\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			check("", []string{"cp", local, pod.Name + ":/tmp/in.txt"}, 0, "", "")
			check("", []string{"exec", pod.Name, "--", "cat", "/tmp/in.txt"}, 0, "through docker\n", "")
			back := filepath.Join(dir, "out.txt")
			check("", []string{"cp", pod.Name + ":/tmp/in.txt", back}, 0, "", "")
			if got, err := os.ReadFile(back); err != nil || string(got) != "through docker\n" {
				t.Errorf("cp out gave %q, %v", got, err)
			}

			// port-forward, then a GET through it.
			pfEnv := env
			if env != nil {
				pfEnv = append(env, "PORT_FORWARD_WEBSOCKETS=false")
			}
			cctx, ccancel := context.WithTimeout(ctx, time.Minute)
			defer ccancel()
			cmd := exec.CommandContext(cctx, bin, "kubectl", "--name", name, "port-forward", "pod/"+pod.Name, ":8080")
			cmd.Env = append(append(os.Environ(), "KLAB_HOME="+home, "KLAB_LANG=en"), pfEnv...)
			cmd.WaitDelay = 5 * time.Second
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { ccancel(); cmd.Wait() }()
			forwarding := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)
			sc := bufio.NewScanner(stdout)
			port := ""
			for port == "" && sc.Scan() {
				if m := forwarding.FindStringSubmatch(sc.Text()); m != nil {
					port = m[1]
				}
			}
			if port == "" {
				t.Fatal("kubectl port-forward never said where it forwards from")
			}
			go io.Copy(io.Discard, stdout)
			if body := httpGet(t, "http://127.0.0.1:"+port+"/"); !strings.Contains(body, pod.Name) {
				t.Errorf("GET through port-forward answered %q, want the pod's name", body)
			}
		})
	}
}
