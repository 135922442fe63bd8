// Command uibench measures the CPU an idle klab workspace uses: a cluster
// runs in its own `klab up` process (so that its members' work is not
// counted), the TUI attaches to it in this process with the Raft view (or
// the Overview) shown and every view's feeds running, as `klab` runs them,
// its screen writing to nowhere, and for
// -for (30 s) nobody touches anything. The CPU this process used in that
// time, from getrusage, is the figure: the Observer's streams, the folds
// into the state and every redraw the cluster's traffic causes. An idle
// Kubernetes control plane is not idle to etcd: the components renew their
// leases, so raft replicates a few writes and reads a second, besides the
// heartbeats; the figures say how many observations and frames that made.
// The time spent in Update and View is reported apart (View returns the
// last frame when nothing shown changed: a hidden view's feed), and the
// same is then measured for the Observer alone, without the TUI.
//
// With -record it then measures what the workspace's recording costs
// (events.jsonl.gz, which klab replay and the timeline read): the Observer
// is read as the workspace reads it, once alone and once with a Recorder
// writing every batch to a file, for -for each, first on the cluster left
// alone (steady) and then while another process writes 200 keys a second
// of 1 KiB to etcd (busy: each write is a proposal, appends to two
// followers, their answers and a commit, in every member's event stream).
// The figures are the bytes written per minute, the CPU of this process
// with the Recorder less without it (getrusage; noisy on a loaded
// machine), and the time spent inside Record (the encoding and the write;
// an upper bound of its CPU).
//
//	KLAB_BINARY=bin/klab go run ./bench/ui/cmd/uibench [-for 30s] [-view raft|overview] [-record] [-cpuprofile f]

//go:build linux

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
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/screen"
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
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the workspace's idle time to this file")
	rec := flag.Bool("record", false, "also measure what recording events.jsonl.gz costs, on the cluster left alone and on a busy one")
	flag.Parse()
	if endpoints := os.Getenv(loadEnv); endpoints != "" {
		return load(endpoints)
	}
	if *view != "raft" && *view != "overview" {
		return fmt.Errorf("-view %q: want raft or overview", *view)
	}
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
	// If uibench dies (a closed pipe, ^C), the cluster stops with it
	// rather than run on and load every later measurement.
	up.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
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
	// The control socket answers before cluster.json is written, when the
	// cluster is up: wait for both.
	var client *lab.Client
	var info *lab.Info
	for {
		if client, err = lab.Connect(ctx, name); err == nil {
			if info, err = lab.LoadInfo(name); err == nil {
				break
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the cluster did not come up: %v (log in %s)", err, logf.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}

	if err := workspace(client, info, *view, *dur, *cpuprofile); err != nil {
		return err
	}
	if err := observerOnly(info, *dur); err != nil {
		return err
	}
	if *rec {
		return recording(info, *dur, home)
	}
	return nil
}

// workspace measures the TUI attached to the cluster.
func workspace(client *lab.Client, info *lab.Info, view string, dur time.Duration, cpuprofile string) error {
	// The workspace's Observer and feeds live as long as ctx: they must
	// be gone before the Observer alone is measured.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &counting{Model: ui.NewModel(ctx, common.New(), ui.Options{Spec: info.Spec, Views: ui.DefaultViews}, slog.New(slog.DiscardHandler))}
	// Frames go to a screen writing to nowhere, as klab's go to the
	// terminal's.
	p := ui.NewProgram(m, screen.New(io.Discard, ui.FPS), tea.WithInput(nil), tea.WithOutput(io.Discard))
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	p.Send(tea.WindowSizeMsg{Width: 160, Height: 48})
	p.Send(labio.ReadyMsg{Lab: labio.Attached(client, info)})
	if view == "overview" {
		p.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("1")})
	}
	// Let the workspace settle: the first statuses and the election
	// already held arrive in the first seconds.
	time.Sleep(5 * time.Second)
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	m.reset()
	before, wall := rusage(), time.Now()
	time.Sleep(dur)
	after, elapsed := rusage(), time.Since(wall)
	frames, observed, updating, drawing := m.counts()
	if cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	p.Quit()
	if err := <-done; err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return err
	}
	cpu := after - before
	fmt.Printf("| idle workspace (%s view, 3 masters + 1 worker, attached, at most %d fps) | %s | %.1f ms | %.2f %% of a core | %.1f View calls/s, %.0f observations/s |\n",
		view, ui.FPS, elapsed.Round(time.Second), ms(cpu), 100*cpu.Seconds()/elapsed.Seconds(),
		float64(frames)/elapsed.Seconds(), float64(observed)/elapsed.Seconds())
	fmt.Printf("| of which: Update (folding what arrived) | | %.1f ms | %.2f %% of a core | |\n",
		ms(updating), 100*updating.Seconds()/elapsed.Seconds())
	fmt.Printf("| of which: View (drawing frames, %.2f ms each) | | %.1f ms | %.2f %% of a core | |\n",
		ms(drawing)/max(float64(frames), 1), ms(drawing), 100*drawing.Seconds()/elapsed.Seconds())
	return nil
}

// observerOnly measures the Observer alone, read as the TUI reads it
// (labio.WaitObservations), with nothing drawn.
func observerOnly(info *lab.Info, dur time.Duration) error {
	o := lab.NewObserver(info.Members, lab.ObserverOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { o.Run(ctx); close(stopped) }()
	read := make(chan struct{})
	go func() {
		defer close(read)
		wait := labio.WaitObservations(o.Observations(), o.News(), lab.RoutineBeat)
		for {
			if _, closed := wait().(labio.ObserverClosedMsg); closed {
				return
			}
		}
	}()
	time.Sleep(5 * time.Second)
	before, wall := rusage(), time.Now()
	time.Sleep(dur)
	after, elapsed := rusage(), time.Since(wall)
	cancel()
	<-stopped
	<-read
	cpu := after - before
	fmt.Printf("| of which: the Observer alone (no TUI) | %s | %.1f ms | %.2f %% of a core | |\n",
		elapsed.Round(time.Second), ms(cpu), 100*cpu.Seconds()/elapsed.Seconds())
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// counting counts the frames drawn and the observations delivered.
type counting struct {
	tea.Model
	mu       sync.Mutex
	frames   int
	observed int
	// updating and drawing are the time spent in Update and View.
	updating, drawing time.Duration
}

func (c *counting) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	start := time.Now()
	var cmd tea.Cmd
	c.Model, cmd = c.Model.Update(msg)
	took := time.Since(start)
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := msg.(labio.ObservationsMsg); ok {
		c.observed += len(m.Batch)
	}
	c.updating += took
	return c, cmd
}

func (c *counting) View() string {
	start := time.Now()
	v := c.Model.View()
	took := time.Since(start)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frames++
	c.drawing += took
	return v
}

func (c *counting) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frames, c.observed, c.updating, c.drawing = 0, 0, 0, 0
}

func (c *counting) counts() (frames, observed int, updating, drawing time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames, c.observed, c.updating, c.drawing
}

// rusage returns the CPU time (user + system) this process has used.
func rusage() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
