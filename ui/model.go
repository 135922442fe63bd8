package ui

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/home"
	"github.com/klab-dev/klab/ui/keys"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/prefs"
	"github.com/klab-dev/klab/ui/record"
	"github.com/klab-dev/klab/ui/workspace"
)

// Model is the root model: the home screen until a cluster is ready, then
// the workspace; the full help drawn over either; the keys that work
// everywhere (language, help, Ctrl-C).
type Model struct {
	c             *common.Common
	ctx           context.Context
	width, height int

	home *home.Model
	ws   *workspace.Model
	// help is set while the full help is shown.
	help bool
	// savePrefs is false in tests, which must not write ui.json.
	savePrefs bool
	opts      Options
	// frame is the last frame drawn; drawn says nothing shown changed
	// since (every message since was one workspace.Unseen).
	frame string
	drawn bool
}

// NewModel returns the root model with opts.Spec as the home screen's
// defaults and opts' lessons. ctx bounds everything the model starts.
func NewModel(ctx context.Context, c *common.Common, opts Options, logger *slog.Logger) *Model {
	hopts := home.Options{Lessons: opts.Lessons, Progress: opts.Progress, Lesson: opts.lesson, Step: opts.step, Pack: opts.Pack, Problems: opts.problems}
	return &Model{c: c, ctx: ctx, home: home.New(c, ctx, opts.Spec, logger, hopts), savePrefs: true, opts: opts}
}

// Init looks for running clusters.
func (m *Model) Init() tea.Cmd { return m.home.Init() }

// Update routes messages: global keys first, then the active screen.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok {
		msg = keys.AsText(k)
	}
	if m.ws == nil || !m.ws.Unseen(msg) {
		m.drawn = false
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.home.SetSize(m.width, max(m.height-1, 0))
		if m.ws != nil {
			m.ws.SetSize(m.width, m.height)
		}
		return m, nil
	case home.LangMsg:
		return m, m.setLang(msg.Lang)
	case labio.ReadyMsg:
		return m, m.openWorkspace(msg.Lab)
	case workspace.ReshapeMsg:
		// The workspace removed its cluster for a step that needs
		// another shape: the home screen starts the new one, showing its
		// steps, and the workspace opens again on the step.
		m.ws = nil
		m.opts.Autoplay = msg.Autoplay
		if msg.Err != nil {
			var cmd tea.Cmd
			m.home, cmd = m.home.Update(labio.FailedMsg{Err: msg.Err})
			return m, cmd
		}
		return m, m.home.Restart(msg.Name, msg.Lesson, msg.Step)
	case labio.RunningMsg, labio.StepMsg, labio.FailedMsg:
		var cmd tea.Cmd
		m.home, cmd = m.home.Update(msg)
		return m, cmd
	case tea.KeyMsg:
		if cmd, done := m.globalKey(msg); done {
			return m, cmd
		}
	}
	var cmd tea.Cmd
	if m.ws != nil {
		m.ws, cmd = m.ws.Update(msg)
	} else {
		m.home, cmd = m.home.Update(msg)
	}
	return m, cmd
}

// globalKey handles the keys that mean the same on every screen.
func (m *Model) globalKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := m.c.Keys
	switch {
	case key.Matches(msg, k.ForceQuit):
		if m.ws != nil {
			return m.ws.QuitKeep(), true
		}
		// A start in progress is undone by Run once the program ends.
		return tea.Quit, true
	case m.ws != nil && m.ws.Typing():
		// The command line takes ? and L as text.
		return nil, false
	case m.help:
		if key.Matches(msg, k.Help) || key.Matches(msg, k.Back) || key.Matches(msg, k.Quit) {
			m.help = false
		}
		return nil, true
	case key.Matches(msg, k.Help):
		m.help = true
		return nil, true
	case key.Matches(msg, k.Lang):
		langs := i18n.Langs
		next := langs[(slices.Index(langs, i18n.Current())+1)%len(langs)]
		return m.setLang(next), true
	case m.ws == nil && key.Matches(msg, k.Quit) && m.home.QuitAllowed():
		return tea.Quit, true
	}
	return nil, false
}

// setLang switches the language everywhere at once: every view renders its
// words when drawn, and the key help is rebuilt.
func (m *Model) setLang(l i18n.Lang) tea.Cmd {
	i18n.SetLang(l)
	*m.c.Keys = *keys.Default()
	if !m.savePrefs {
		return nil
	}
	return func() tea.Msg {
		p := prefs.Load()
		p.Lang = l
		prefs.Save(p) // a preference that cannot be saved is not worth a message
		return nil
	}
}

func (m *Model) openWorkspace(l labio.Lab) tea.Cmd {
	info := l.Info()
	m.home.Ready()
	wopts := workspace.Options{
		Progress:      m.opts.Progress,
		Run:           m.opts.Run,
		StartFeed:     m.opts.StartFeed,
		Convert:       m.opts.Convert,
		StepSnapshots: m.opts.StepSnapshots,
	}
	if m.opts.Views != nil {
		wopts.Views = m.opts.Views(m.c)
	}
	wopts.Lesson, wopts.Step = m.home.Lesson()
	wopts.Autoplay = m.opts.Autoplay && wopts.Lesson != nil
	if m.opts.Record {
		wopts.Recording = record.ForCluster(info)
	}
	m.ws = workspace.New(m.c, l, labstate.New(info.Name, info.Members), wopts)
	m.ws.SetSize(m.width, m.height)
	return m.ws.Start(m.ctx)
}

// View draws the active screen, and the full help over it.
//
// The renderer asks for a frame after every message. A frame is drawn
// again only when the message could have changed it: a hidden view's feed
// (there are several, streaming all the time) costs no frame.
func (m *Model) View() string {
	if m.drawn {
		return m.frame
	}
	m.frame, m.drawn = m.view(), true
	return m.frame
}

func (m *Model) view() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	var screen string
	var groups [][]key.Binding
	if m.ws != nil {
		screen = m.ws.View()
		groups = m.ws.FullHelp()
	} else {
		screen = m.home.View() + "\n" + common.Footer(m.c, m.home.ShortHelp(), m.width)
		groups = m.home.FullHelp()
	}
	if m.help {
		screen = common.Overlay(screen, m.helpBox(groups), m.width, m.height)
	}
	return screen
}

func (m *Model) helpBox(groups [][]key.Binding) string {
	s := m.c.Styles
	w := max(m.width-6, 10)
	body := []string{s.Dialog.Title.Render(i18n.T("ui.help.title")), "", common.FullHelp(m.c, groups, w), ""}
	for _, l := range common.Pack(strings.Fields(i18n.T("ui.help.note")), w, " ") {
		body = append(body, s.Dialog.Note.Render(l))
	}
	return s.Dialog.Box.Render(strings.Join(body, "\n"))
}
