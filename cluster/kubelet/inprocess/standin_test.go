package inprocess

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// TestStandInShell: busybox's stand-in runs the pod's command line in
// klab's shell as the container's process, sh -c scripts included, and
// a stop interrupts it.
func TestStandInShell(t *testing.T) {
	tests := []struct {
		name     string
		image    string
		command  []string
		args     []string
		wantCode int
		wantLog  string
	}{
		{name: "sh -c with exit code", image: "busybox", command: []string{"sh", "-c", "echo hi from $HOSTNAME; exit 3"}, wantCode: 3, wantLog: "hi from shelly"},
		{name: "args only, as kubectl run -- does", image: "busybox:1.36", args: []string{"echo", "a", "b"}, wantLog: "a b"},
		{name: "alpine's /bin/sh -c", image: "alpine", command: []string{"/bin/sh", "-c", "for i in 1 2 3; do echo n$i; done"}, wantLog: "n3"},
		{name: "ubuntu's bash -c", image: "ubuntu:24.04", command: []string{"bash", "-c", "echo ok"}, wantLog: "ok"},
		{name: "nginx given a shell command", image: "nginx", args: []string{"sh", "-c", "echo not a server"}, wantLog: "not a server"},
		{name: "missing program", image: "busybox", command: []string{"nosuchtool"}, wantCode: 127, wantLog: "nosuchtool"},
		{name: "klab/app runs its shell tools too", image: "klab/app:v1", command: []string{"sh", "-c", "echo from klab/app; exit 2"}, wantCode: 2, wantLog: "from klab/app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newTestRuntime(t)
			sb := runPod(t, rt, "shelly")
			cfg := appContainer("shelly", "main")
			cfg.Image, cfg.Command, cfg.Args = tt.image, tt.command, tt.args
			if !strings.HasPrefix(tt.image, "klab/") {
				cfg.StandIn = strings.Split(tt.image, ":")[0]
			}
			id := create(t, rt, sb, cfg)
			if err := rt.StartContainer(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			st := waitExit(t, rt, id)
			if st.ExitCode != tt.wantCode || st.Image != tt.image {
				t.Errorf("exit code %d image %q, want %d %q", st.ExitCode, st.Image, tt.wantCode, tt.image)
			}
			if log := logs(t, rt, id, cri.LogOptions{}); !strings.Contains(log, tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, log)
			}
		})
	}

	t.Run("sleep stops on SIGTERM", func(t *testing.T) {
		rt := newTestRuntime(t)
		sb := runPod(t, rt, "sleeper")
		cfg := appContainer("sleeper", "main")
		cfg.Image, cfg.StandIn, cfg.Args = "busybox", "busybox", []string{"sh", "-c", "while true; do echo hi; sleep 1; done"}
		id := create(t, rt, sb, cfg)
		if err := rt.StartContainer(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		waitLog(t, rt, id, "hi")
		begin := time.Now()
		if err := rt.StopContainer(context.Background(), id, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(begin); took > 3*time.Second {
			t.Errorf("stop took %v: the shell did not end on SIGTERM", took)
		}
	})
}

// TestStandInDialsThroughThePod: the stand-in's own process, like an exec
// into the pod, reaches Service IPs and the cluster DNS through the
// runtime's Dial from the pod's IP (the node's kube-proxy), not straight
// from the host, where 10.96.0.10 answers nothing or someone else.
func TestStandInDialsThroughThePod(t *testing.T) {
	var (
		mu    sync.Mutex
		dials []string
	)
	rt := newTestRuntime(t, func(c *Config) {
		c.Dial = func(ctx context.Context, source netip.Addr, network, addr string) (net.Conn, error) {
			mu.Lock()
			dials = append(dials, source.String()+" "+network+" "+addr)
			mu.Unlock()
			return nil, errors.New("no route in this test")
		}
	})
	sb := runPod(t, rt, "dialer")
	cfg := appContainer("dialer", "main")
	cfg.Image, cfg.StandIn, cfg.Args = "busybox", "busybox", []string{"wget", "-q", "-T", "2", "http://10.96.0.1/"}
	id := create(t, rt, sb, cfg)
	if err := rt.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, rt, id); st.ExitCode == 0 {
		t.Errorf("wget through a Dial that fails exited 0")
	}
	want := sb.IP + " tcp 10.96.0.1:80"
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(dials, want) {
		t.Errorf("dials %q, want %q", dials, want)
	}
}
