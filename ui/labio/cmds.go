package labio

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker"
)

// StepMsg is one step of starting a cluster, started or finished.
type StepMsg struct{ Event lab.StepEvent }

// ReadyMsg says the cluster is up (started here, or attached to).
type ReadyMsg struct{ Lab Lab }

// FailedMsg says starting or attaching failed; the steps already shown
// say where.
type FailedMsg struct{ Err error }

// Starting follows a cluster being started: its steps arrive one command
// at a time, as bubbletea's realtime example does, so that each is drawn
// as it happens.
type Starting struct {
	ch     chan tea.Msg
	cancel context.CancelFunc
	done   chan struct{}
	// result is the started lab, set before ReadyMsg is sent.
	result Lab
}

// Start starts the cluster described by spec in this process. ctx bounds
// the start only; the cluster then runs until Lab.Close.
func Start(ctx context.Context, spec lab.Spec, logger *slog.Logger) *Starting {
	ctx, cancel := context.WithCancel(ctx)
	s := &Starting{ch: make(chan tea.Msg, 16), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.ch)
		c, err := lab.Up(ctx, spec, lab.Options{
			Logger:   logger,
			Progress: func(e lab.StepEvent) { s.ch <- StepMsg{Event: e} },
		})
		if err != nil {
			s.ch <- FailedMsg{Err: err}
			return
		}
		s.result = Owned(c)
		s.ch <- ReadyMsg{Lab: s.result}
	}()
	return s
}

// Abort cancels a start still in progress (Up undoes what it made) and
// waits for it to end. It returns the lab if the start finished anyway,
// for the caller to close.
func (s *Starting) Abort() Lab {
	s.cancel()
	// Nobody may read the channel any more; drain it so the start
	// goroutine can finish.
	go func() {
		for range s.ch {
		}
	}()
	<-s.done
	return s.result
}

// Next waits for the next step, or the end.
func (s *Starting) Next() tea.Cmd {
	return func() tea.Msg {
		msg, ok := <-s.ch
		if !ok {
			return nil
		}
		return msg
	}
}

// Attach connects to a cluster that a `klab up` process runs.
func Attach(name string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		info, err := lab.LoadInfo(name)
		if err != nil {
			return FailedMsg{Err: err}
		}
		if info.Runtime == lab.RuntimeDocker {
			c, err := lab.Attach(ctx, name)
			if err != nil {
				return FailedMsg{Err: err}
			}
			return ReadyMsg{Lab: InEngine(c)}
		}
		c, err := lab.Connect(ctx, name)
		if err != nil {
			return FailedMsg{Err: err}
		}
		return ReadyMsg{Lab: Attached(c, info)}
	}
}

// Running describes a cluster that runs right now: in a klab process (PID),
// or in the Docker engine's containers (Containers running, PID 0).
type Running struct {
	Name       string
	Masters    int
	Runtime    string
	PID        int
	Containers int
}

// RunningMsg lists the running clusters found in klab's state dir.
type RunningMsg struct {
	Clusters []Running
}

// ScanRunning looks for clusters with a live control socket under klab's
// state dir: the clusters the home screen offers to attach to.
func ScanRunning() tea.Cmd {
	return func() tea.Msg {
		home, err := lab.Home()
		if err != nil {
			return RunningMsg{}
		}
		entries, err := os.ReadDir(home)
		if err != nil {
			return RunningMsg{}
		}
		var out []Running
		for _, e := range entries {
			if !e.IsDir() || lab.ValidateName(e.Name()) != nil {
				continue
			}
			info, err := lab.LoadInfo(e.Name())
			if err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if r, ok := running(ctx, info); ok {
				out = append(out, r)
			}
			cancel()
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return RunningMsg{Clusters: out}
	}
}

// running reports whether the cluster of info runs: a Docker cluster when
// any of its containers does (it needs no klab process; klab up returned
// long ago), a local one when its klab up process answers on the control
// socket.
func running(ctx context.Context, info *lab.Info) (Running, bool) {
	r := Running{Name: info.Name, Masters: len(info.Members), Runtime: info.Runtime}
	if info.Runtime == lab.RuntimeDocker {
		n, err := docker.RunningContainers(ctx, info.Name)
		r.Containers = n
		return r, err == nil && n > 0
	}
	c, err := lab.Connect(ctx, info.Name)
	if err != nil {
		return r, false
	}
	if st, err := c.Status(ctx); err == nil {
		r.PID = st.PID
	}
	return r, true
}

// ObservationsMsg carries the observations that arrived since the last
// one, in order.
type ObservationsMsg struct {
	Batch []lab.Observation
}

// ObserverClosedMsg says the Observer stopped.
type ObserverClosedMsg struct{}

// observeCoalesce gathers observations arriving together into one
// message: an election's votes and answers reach the UI as one redraw, not
// a dozen.
const observeCoalesce = 50 * time.Millisecond

// maxBatch bounds one message, so that a backlog is drawn in steps.
const maxBatch = 1024

// WaitObservations waits for the next observations of an Observer: its
// Observations and News channels. The workspace runs it again after each
// message, so the stream is read only as fast as the UI draws.
//
// A steady cluster's traffic (lab.Routine) comes on the Observer's beat
// (lab.RoutineBeat, or lab.CalmBeat when the workspace is calm), every
// member's at once, and is drawn once per beat, just after it: at most
// four times a second, as fast as its rows can be read, with two wake-ups
// per beat. News (a vote, a role change, a lost message, a timer filling)
// is drawn within observeCoalesce, with what came along with it.
func WaitObservations(ch <-chan lab.Observation, news <-chan struct{}, beat time.Duration) tea.Cmd {
	return func() tea.Msg {
		first, ok := <-ch
		if !ok {
			return ObserverClosedMsg{}
		}
		now := time.Now()
		deadline := now.Add(observeCoalesce)
		routine := lab.Routine(first)
		if routine {
			deadline = now.Add(-observeCoalesce).Truncate(beat).Add(beat + observeCoalesce)
		}
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
	gather:
		for {
			select {
			case <-timer.C:
				break gather
			case <-news:
				if !routine {
					continue
				}
				if soon := time.Now().Add(observeCoalesce); soon.Before(deadline) {
					deadline = soon
					timer.Reset(time.Until(deadline))
				}
			}
		}
		batch := []lab.Observation{first}
		for len(batch) < maxBatch {
			select {
			case o, ok := <-ch:
				if !ok {
					return ObservationsMsg{Batch: batch}
				}
				batch = append(batch, o)
				continue
			default:
			}
			break
		}
		// A signal left now stands for news in this batch, or for news
		// that the next call takes first.
		select {
		case <-news:
		default:
		}
		return ObservationsMsg{Batch: batch}
	}
}

// ComponentsMsg reports the runtime's view of the components.
type ComponentsMsg struct {
	Infos []runtime.ComponentInfo
	Err   error
}

// Components asks the lab for its components' states.
func Components(l Lab) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		infos, err := l.Components(ctx)
		return ComponentsMsg{Infos: infos, Err: err}
	}
}

// ActionMsg reports how an action the user asked for ended.
type ActionMsg struct {
	// Action names the action ("kill", "clock", "write", ...).
	Action string
	// Chaos is the chaos operation's result, for chaos actions.
	Chaos *lab.ChaosResult
	// Key is the key written, for writes.
	Key string
	// Args is the klab command line the action stands for ("klab chaos
	// kill leader"): a lesson judges a key press as that command.
	Args []string
	Err  error
}

// actionTimeout bounds an action: a restart waits for the member to serve,
// a write for a quorum.
const actionTimeout = 30 * time.Second

// writeTimeout bounds a write: without a quorum it never commits, and the
// student should see that as an error within seconds.
const writeTimeout = 3 * time.Second

// Chaos runs a chaos operation.
func Chaos(l Lab, action string, req lab.ChaosRequest) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		res, err := l.Chaos(ctx, req)
		args := []string{"klab", "chaos", string(req.Op)}
		if len(req.Targets) > 0 {
			args = append(args, strings.Join(req.Targets, ","))
		}
		return ActionMsg{Action: action, Chaos: res, Args: args, Err: err}
	}
}

// Put writes a key.
func Put(l Lab, key, value string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		defer cancel()
		err := l.Put(ctx, key, value)
		if errors.Is(err, context.DeadlineExceeded) {
			err = errWriteTimeout(key, err)
		}
		return ActionMsg{Action: "write", Key: key, Args: []string{"klab", "etcdctl", "put", key, value}, Err: err}
	}
}

// ClosedMsg says the lab was closed (stopped, and removed if asked).
type ClosedMsg struct{ Err error }

// closeTimeout bounds a graceful stop; members still running are killed.
const closeTimeout = 30 * time.Second

// Close stops an owned lab.
func Close(l Lab, remove bool) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		return ClosedMsg{Err: l.Close(ctx, remove)}
	}
}

// DockerMsg says whether a Docker engine answers, and its version.
type DockerMsg struct {
	Version string
	Err     error
}

// ProbeDocker asks the Docker engine for its version, for the home
// screen to say whether the docker runtime can run.
func ProbeDocker() tea.Cmd {
	return func() tea.Msg {
		v, err := docker.EngineVersion(context.Background())
		return DockerMsg{Version: v, Err: err}
	}
}
