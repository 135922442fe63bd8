// Package workspace is the screen of a running cluster: a header naming
// the cluster and the views, the live view, a status line where actions
// report, and a footer of the keys that work. The lesson pane will take
// the left side when lessons arrive; until then the live view is full
// width.
package workspace

import (
	"context"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/views/overview"
	"github.com/klab-dev/klab/ui/views/raft"
)

// ViewID names a live view.
type ViewID int

// The live views that exist so far.
const (
	ViewOverview ViewID = iota + 1
	ViewRaft
)

// Model is the workspace.
type Model struct {
	c             *common.Common
	width, height int

	lab   labio.Lab
	info  *lab.Info
	state *labstate.State
	view  ViewID

	overview *overview.View
	raft     *raft.View

	// observe is the Observer's stream; stop ends the Observer.
	observe <-chan lab.Observation
	stop    context.CancelFunc
	// componentsBusy keeps one runtime query in flight at a time.
	componentsBusy bool

	status status
	dialog *dialog
	// closing is set once the user chose to quit and the lab is being
	// closed.
	closing bool
	// closed is set once the lab is closed; closeErr says how that went.
	closed   bool
	closeErr error
	writes   int
}

// New returns the workspace of l, drawn from st. Start begins observing.
func New(c *common.Common, l labio.Lab, st *labstate.State) *Model {
	m := &Model{c: c, lab: l, state: st, view: ViewRaft, overview: overview.New(c), raft: raft.New(c)}
	if l != nil {
		m.info = l.Info()
	}
	return m
}

// Start starts an Observer of the lab's members and returns the commands
// that read it and ask the runtime for the components' states.
func (m *Model) Start(ctx context.Context) tea.Cmd {
	ctx, m.stop = context.WithCancel(ctx)
	obs := lab.NewObserver(m.info.Members, lab.ObserverOptions{})
	go obs.Run(ctx)
	m.observe = obs.Observations()
	return tea.Batch(labio.WaitObservations(m.observe), m.components())
}

// Stop ends the Observer.
func (m *Model) Stop() {
	if m.stop != nil {
		m.stop()
	}
}

// Lab returns the lab shown.
func (m *Model) Lab() labio.Lab { return m.lab }

// State returns the observed state.
func (m *Model) State() *labstate.State { return m.state }

// ViewID returns the live view shown.
func (m *Model) ViewID() ViewID { return m.view }

// Closing reports whether the lab is being closed for quitting.
func (m *Model) Closing() bool { return m.closing }

// Closed reports whether the lab was closed, and the error closing it.
func (m *Model) Closed() (bool, error) { return m.closed, m.closeErr }

// QuitKeep closes an owned lab, keeping its data, and quits: what Ctrl-C
// does, since a cluster killed without a clean stop would lose nothing but
// could leave members mid-write.
func (m *Model) QuitKeep() tea.Cmd {
	if m.closing {
		return nil
	}
	if m.lab == nil || !m.lab.Owned() {
		m.Stop()
		return tea.Quit
	}
	return m.quit(false)
}

// SetSize sets the workspace's size.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	bw, bh := m.bodySize()
	m.overview.SetSize(bw, bh)
	m.raft.SetSize(bw, bh)
}

// bodySize is the live view's size: everything but the header, the status
// line and the footer.
func (m *Model) bodySize() (int, int) { return m.width, max(m.height-3, 0) }

func (m *Model) components() tea.Cmd {
	if m.componentsBusy || m.lab == nil {
		return nil
	}
	m.componentsBusy = true
	return labio.Components(m.lab)
}

// Update handles the Observer's stream, the results of actions and keys.
func (m *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	switch msg := msg.(type) {
	case labio.ObservationsMsg:
		refresh := false
		for _, o := range msg.Batch {
			if mem := m.state.Member(o.Header().Member); mem != nil {
				_, down := o.(*lab.UnreachableObservation)
				_, up := o.(*lab.StatusObservation)
				refresh = refresh || down || up && !mem.Reachable
			}
			m.state.Apply(o)
		}
		cmds := []tea.Cmd{labio.WaitObservations(m.observe)}
		if refresh {
			// A member went or came back: ask the runtime why.
			cmds = append(cmds, m.components())
		}
		return m, tea.Batch(cmds...)
	case labio.ObserverClosedMsg:
		return m, nil
	case labio.ComponentsMsg:
		m.componentsBusy = false
		if msg.Err == nil {
			m.state.SetComponents(msg.Infos)
		}
		return m, nil
	case labio.ActionMsg:
		return m, m.actionDone(msg)
	case labio.ClosedMsg:
		m.closed, m.closeErr = true, msg.Err
		return m, tea.Quit
	case tea.KeyMsg:
		if m.closing {
			return m, nil
		}
		if m.dialog != nil {
			return m, m.updateDialog(msg)
		}
		return m, m.handleKey(msg)
	}
	return m, nil
}

// ShortHelp lists the keys that work now, for the footer.
func (m *Model) ShortHelp() []key.Binding {
	k := m.c.Keys
	if m.closing {
		return nil
	}
	if m.dialog != nil {
		return m.dialog.keys(k)
	}
	// The footer is cut at the screen's width: the keys to find all the
	// others (?) and to leave come first after the view switch.
	var out []key.Binding
	switch m.view {
	case ViewRaft:
		out = append(out, k.Overview, k.Help, k.Quit)
		out = append(out, raft.Keys(m.c, m.state)...)
	case ViewOverview:
		out = append(out, k.Raft, k.Help, k.Quit)
	}
	if m.status.text() != "" {
		out = append(out, k.Back)
	}
	return append(out, k.Lang)
}

// FullHelp lists the keys by group, for the full help.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.c.Keys
	groups := [][]key.Binding{{k.Overview, k.Raft}}
	if m.view == ViewRaft {
		groups = append(groups, raft.Keys(m.c, m.state))
	}
	return append(groups, []key.Binding{k.Lang, k.Help, k.Back, k.Quit, k.ForceQuit})
}

// QuitAllowed reports whether q means quit now.
func (m *Model) QuitAllowed() bool { return m.dialog == nil && !m.closing }
