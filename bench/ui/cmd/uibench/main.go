// Command uibench measures the CPU an idle klab workspace uses: a cluster
// runs in its own `klab up` process (so that its members' work is not
// counted), the TUI attaches to it in this process with the Raft view
// shown, drawing to nowhere, and for -for (30 s) nobody touches anything.
// The CPU this process used in that time, from getrusage, is the figure:
// the Observer's stream, the folds into the state and every redraw the
// members' heartbeats cause.
//
//	KLAB_BINARY=bin/klab go run ./bench/ui/cmd/uibench [-for 30s] [-view raft|overview]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labio"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "uibench:", err)
		os.Exit(1)
	}
}

func run() error {
	dur := flag.Duration("for", 30*time.Second, "how long the workspace stays idle")
	view := flag.String("view", "raft", "the view shown: raft or overview")
	flag.Parse()
	bin := os.Getenv("KLAB_BINARY")
	if bin == "" {
		return errors.New("KLAB_BINARY must name a klab binary (make build)")
	}
	home, err := os.MkdirTemp("", "uibench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	os.Setenv("KLAB_HOME", home)
	name := "uibench-" + strconv.Itoa(os.Getpid())

	up := exec.Command(bin, "up", "--name", name, "--runtime", "local", "--masters", "3", "--workers", "1")
	up.Env = append(os.Environ(), "KLAB_HOME="+home)
	logf, err := os.Create(filepath.Join(home, "up.log"))
	if err != nil {
		return err
	}
	up.Stdout, up.Stderr = logf, logf
	if err := up.Start(); err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		lab.Down(ctx, name, false, nil)
		up.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var client *lab.Client
	for {
		if client, err = lab.Connect(ctx, name); err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the cluster did not come up: %v (log in %s)", err, logf.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
	info, err := lab.LoadInfo(name)
	if err != nil {
		return err
	}

	m := ui.NewModel(context.Background(), common.New(), ui.Options{Spec: info.Spec}, slog.New(slog.DiscardHandler))
	p := tea.NewProgram(m, tea.WithInput(nil), tea.WithOutput(io.Discard))
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	p.Send(tea.WindowSizeMsg{Width: 160, Height: 48})
	p.Send(labio.ReadyMsg{Lab: labio.Attached(client, info)})
	if *view == "overview" {
		p.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("1")})
	}
	// Let the workspace settle: the first statuses and the election
	// already held arrive in the first seconds.
	time.Sleep(5 * time.Second)
	before, wall := rusage(), time.Now()
	time.Sleep(*dur)
	after, elapsed := rusage(), time.Since(wall)
	p.Quit()
	if err := <-done; err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return err
	}
	cpu := after - before
	fmt.Printf("| idle workspace (%s view, 3 masters + 1 worker, attached) | %s | %.1f ms | %.2f %% of a core |\n",
		*view, elapsed.Round(time.Second), float64(cpu.Microseconds())/1000, 100*cpu.Seconds()/elapsed.Seconds())
	return nil
}

// rusage returns the CPU time (user + system) this process has used.
func rusage() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
