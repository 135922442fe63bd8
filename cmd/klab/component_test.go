package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime/components"
	"github.com/klab-dev/klab/cluster/runtime/docker/standby"
)

func TestComponentUsageErrors(t *testing.T) {
	testHome(t)
	i18n.SetLang(i18n.English)
	const apiSpec = `{"etcdEndpoints":["http://127.0.0.1:1"],"listen":"127.0.0.1:0","pkiDir":"/nonexistent"}`
	tests := []struct {
		name string
		args []string
		want []string // fragments of stderr
	}{
		{"apiserver without --node", []string{"component", "kube-apiserver", "--spec", apiSpec}, []string{"--node is required"}},
		{"scheduler without --node", []string{"component", "kube-scheduler", "--spec", "{}"}, []string{"--node is required"}},
		{"controller manager without --node", []string{"component", "kube-controller-manager", "--spec", "{}"}, []string{"--node is required"}},
		{"kubelet without --node", []string{"component", "kubelet", "--spec", "{}"}, []string{"--node is required"}},
		{"without --spec", []string{"component", "kube-apiserver", "--node", "master-1"}, []string{"--spec is required"}},
		{"lb needs no --node", []string{"component", "lb", "--spec", `{"listen":"127.0.0.1:0"}`}, []string{`--spec for lb lacks the required field "backends"`}},
		{"unknown flag", []string{"component", "kubelet", "--nodes", "worker-1"}, []string{"bad flag for klab component kubelet", "--nodes"}},
		{"stray argument", []string{"component", "kube-scheduler", "now", "--node", "master-1", "--spec", "{}"}, []string{`klab component kube-scheduler takes no arguments, but got "now"`}},
		{"unknown spec field", []string{"component", "kube-apiserver", "--node", "master-1", "--spec", `{"listen":"a:1","etcd":"x"}`}, []string{`--spec for kube-apiserver has an unknown field "etcd"; its fields are: etcdEndpoints, etcdCAFile, etcdCertFile, etcdKeyFile, listen, pkiDir, advertiseAddress`}},
		{"missing PKI", []string{"component", "kube-apiserver", "--node", "master-1", "--spec", apiSpec}, []string{"start master-1/kube-apiserver: load pki", "/nonexistent/ca.crt"}},
		{"kubelet outside Docker", []string{"component", "kubelet", "--node", "worker-1", "--spec", `{"apiServer":"https://127.0.0.1:1","pkiDir":"/p","listen":"127.0.0.1:0"}`}, []string{"start worker-1/kubelet: the kubelet needs a container runtime"}},
		{"pause takes no argument", []string{"component", "pause", "now"}, []string{`klab component pause takes no arguments, but got "now"`}},
		{"route without --via", []string{"component", "route", "10.96.0.0/12"}, []string{"--via is required"}},
		{"route to a bad range", []string{"component", "route", "10.96.0.0", "--via", "10.0.0.2"}, []string{`route 10.96.0.0 via "10.0.0.2"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := klab(t, tt.args...)
			if code == 0 {
				t.Fatalf("klab %v succeeded, want a failure", tt.args)
			}
			if !strings.HasPrefix(stderr, "error: ") {
				t.Errorf("stderr %q does not start with the error prefix", stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
		})
	}
}

// fakeProcess is a component that stops when told to, or by itself when
// the test closes done.
type fakeProcess struct {
	done    chan struct{}
	err     error
	stopped bool
	stopErr error
}

func (p *fakeProcess) Stop() error           { p.stopped = true; close(p.done); return p.stopErr }
func (p *fakeProcess) Kill()                 { close(p.done) }
func (p *fakeProcess) Done() <-chan struct{} { return p.done }
func (p *fakeProcess) Err() error            { return p.err }

func TestRunForeground(t *testing.T) {
	i18n.SetLang(i18n.English)
	errBoom := errors.New("boom")
	tests := []struct {
		name string
		// cancel stops the run as a signal would; exit makes the
		// process stop by itself with err.
		cancel      bool
		exit        bool
		exitErr     error
		startErr    error
		stopErr     error
		wantErr     string // "" for success
		wantStopped bool
	}{
		{name: "signal stops it gracefully", cancel: true, wantStopped: true},
		{name: "graceful stop fails", cancel: true, stopErr: errBoom, wantErr: "stop master-1/kube-scheduler: boom", wantStopped: true},
		{name: "fails by itself", exit: true, exitErr: errBoom, wantErr: "master-1/kube-scheduler stopped by itself: boom"},
		{name: "stops by itself without a reason", exit: true, wantErr: "master-1/kube-scheduler stopped by itself without giving a reason"},
		{name: "fails to start", startErr: errBoom, wantErr: "start master-1/kube-scheduler: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cmd := &cobra.Command{}
			cmd.SetContext(ctx)
			stderr, stderrW := io.Pipe()
			cmd.SetErr(stderrW)
			p := &fakeProcess{done: make(chan struct{}), err: tt.exitErr, stopErr: tt.stopErr}
			released := false
			errc := make(chan error, 1)
			go func() {
				errc <- runForeground(cmd, "master-1/kube-scheduler", func(ctx context.Context, logger *slog.Logger) (components.Process, func(), error) {
					if tt.startErr != nil {
						return nil, nil, tt.startErr
					}
					return p, func() { released = true }, nil
				})
				stderrW.Close()
			}()
			if tt.startErr == nil {
				// The running line says the component started: act only
				// then, as the Docker runtime acts once it has started.
				line := readLine(t, stderr)
				if want := "master-1/kube-scheduler running"; !strings.Contains(line, want) {
					t.Fatalf("first line %q, want %q", line, want)
				}
			}
			switch {
			case tt.cancel:
				cancel()
			case tt.exit:
				close(p.done)
			}
			go io.Copy(io.Discard, stderr)
			err := <-errc
			if tt.wantErr == "" && err != nil {
				t.Fatalf("runForeground = %v, want success", err)
			}
			if tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Fatalf("runForeground = %v, want %q", err, tt.wantErr)
			}
			if p.stopped != tt.wantStopped {
				t.Errorf("stopped = %v, want %v", p.stopped, tt.wantStopped)
			}
			if started := tt.startErr == nil; released != started {
				t.Errorf("released = %v, want %v (release runs whenever the component started)", released, started)
			}
		})
	}
}

// TestRunForegroundStoppedWhileStarting: a signal that arrives while the
// component starts (a kubelet waiting for the API server) is a stop as
// asked, not a failure.
func TestRunForegroundStoppedWhileStarting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := &cobra.Command{}
	cmd.SetContext(ctx)
	cmd.SetErr(io.Discard)
	err := runForeground(cmd, "worker-1/kubelet", func(ctx context.Context, logger *slog.Logger) (components.Process, func(), error) {
		cancel()
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	if err != nil {
		t.Errorf("runForeground = %v, want nil", err)
	}
}

// readLine reads one line from r.
func readLine(t *testing.T, r io.Reader) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 1)
	for {
		if _, err := r.Read(buf); err != nil {
			t.Fatalf("read line: %v (so far %q)", err, b.String())
		}
		if buf[0] == '\n' {
			return b.String()
		}
		b.WriteByte(buf[0])
	}
}

// TestRunForegroundStandsDownAndUp: the stand-down signal stops the
// component gracefully and keeps the process; the stand-up signal starts a
// new instance from scratch; SIGTERM (here the context) still ends it.
func TestRunForegroundStandsDownAndUp(t *testing.T) {
	i18n.SetLang(i18n.English)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := &cobra.Command{}
	cmd.SetContext(ctx)
	stderr, stderrW := io.Pipe()
	cmd.SetErr(stderrW)
	var procs []*fakeProcess
	released := 0
	errc := make(chan error, 1)
	go func() {
		errc <- runForeground(cmd, "worker-1/kube-proxy", func(ctx context.Context, logger *slog.Logger) (components.Process, func(), error) {
			p := &fakeProcess{done: make(chan struct{})}
			procs = append(procs, p)
			return p, func() { released++ }, nil
		})
		stderrW.Close()
	}()
	expect := func(want string) {
		t.Helper()
		if line := readLine(t, stderr); !strings.Contains(line, want) {
			t.Fatalf("line %q, want %q", line, want)
		}
	}
	signalSelf := func(sig syscall.Signal) {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
	}
	expect("worker-1/kube-proxy running")
	signalSelf(standby.StandDown)
	expect("worker-1/kube-proxy stood down")
	if len(procs) != 1 || !procs[0].stopped || released != 1 {
		t.Fatalf("after standing down: %d instances, first stopped %v, %d released; want 1, true, 1", len(procs), procs[0].stopped, released)
	}
	signalSelf(standby.StandUp)
	expect("worker-1/kube-proxy running")
	if len(procs) != 2 || procs[1].stopped {
		t.Fatalf("after standing up: %d instances, want a second one running", len(procs))
	}
	cancel()
	go io.Copy(io.Discard, stderr)
	if err := <-errc; err != nil {
		t.Fatalf("runForeground = %v, want nil", err)
	}
	if !procs[1].stopped || released != 2 {
		t.Errorf("after SIGTERM: second stopped %v, %d released; want true, 2", procs[1].stopped, released)
	}
}
