// Package styles holds every colour and text style the TUI uses, built once
// by DefaultStyles, so that views name what a thing is (a leader, a dropped
// message) and never which colour it has.
package styles

import (
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
)

// A Theme is a palette: each colour has a light- and a dark-background
// variant, so the lab reads on both.
type Theme string

const (
	// Standard is klab's everyday palette.
	Standard Theme = "standard"
	// Contrast is for a projector: a washed-out beamer drops pale greys
	// and soft pastels, so every colour here is saturated, the muted text
	// is still well apart from the background, and the lines between
	// boxes are as bright as the text.
	Contrast Theme = "contrast"
)

// Themes lists the themes by name.
var Themes = []Theme{Standard, Contrast}

// ParseTheme returns the theme named s.
func ParseTheme(s string) (Theme, bool) {
	for _, t := range Themes {
		if string(t) == s {
			return t, true
		}
	}
	return "", false
}

type palette struct {
	text, muted, subtle, accent, leader, follow, candid, preCand,
	bad, good, beat, app, barBg lipgloss.AdaptiveColor
}

func ac(light, dark string) lipgloss.AdaptiveColor {
	return lipgloss.AdaptiveColor{Light: light, Dark: dark}
}

var palettes = map[Theme]palette{
	Standard: {
		text: ac("#1F2430", "#D5DAEC"), muted: ac("#6B7280", "#8089A8"), subtle: ac("#C8CDD8", "#3B4261"),
		accent: ac("#4F46E5", "#8B87F8"), leader: ac("#A16207", "#F5C46B"), follow: ac("#1D4ED8", "#7AA2F7"),
		candid: ac("#C2410C", "#FF9E64"), preCand: ac("#A21CAF", "#E39CF0"), bad: ac("#B91C1C", "#F7768E"),
		good: ac("#15803D", "#9ECE6A"), beat: ac("#BE185D", "#F38BA8"), app: ac("#0F766E", "#73DACA"),
		barBg: ac("#ECEEF4", "#1E2233"),
	},
	Contrast: {
		text: ac("#000000", "#FFFFFF"), muted: ac("#303030", "#D0D0D0"), subtle: ac("#505050", "#A0A0A0"),
		accent: ac("#2000B0", "#B8A8FF"), leader: ac("#6B3A00", "#FFD700"), follow: ac("#0030C0", "#5FD7FF"),
		candid: ac("#A02800", "#FF8700"), preCand: ac("#800080", "#FF5FFF"), bad: ac("#A00000", "#FF5F5F"),
		good: ac("#005A00", "#5FFF5F"), beat: ac("#8A0040", "#FF87AF"), app: ac("#004D4D", "#00FFD7"),
		barBg: ac("#FFFFFF", "#000000"),
	},
}

// Styles is every style of the TUI, grouped by where it is used.
type Styles struct {
	// Theme is the palette these styles were built from.
	Theme Theme

	App lipgloss.Style

	Header struct {
		Bar, Brand, Item, Muted, Tab, ActiveTab lipgloss.Style
	}
	Footer struct {
		Bar  lipgloss.Style
		Help help.Styles
	}
	// Status is the one line where results and errors of actions show.
	Status struct {
		Info, Success, Error lipgloss.Style
	}
	// Dialog is a box drawn over the screen: full help, choosers, quit.
	Dialog struct {
		Box, Title, Item, ItemSelected, Note lipgloss.Style
	}
	Home struct {
		Logo, Tagline, Label, LabelFocused, Value, ValueFocused, Note,
		Warning, Section, Action, ActionFocused lipgloss.Style
		StepRunning, StepDone, StepFailed, StepTitle, StepTime lipgloss.Style
	}
	// Role colours a member by its raft role; shared by every view.
	Role struct {
		Leader, Follower, Candidate, PreCandidate, Down lipgloss.Style
	}
	Raft struct {
		Box, BoxFocused, Title, Key, Value, Muted             lipgloss.Style
		LogCommitted, LogUncommitted, LogAbsent, LogCompacted lipgloss.Style
		TimerFill, TimerEmpty, TimerMark                      lipgloss.Style
		MsgVote, MsgApp, MsgBeat, MsgSnap, MsgOther, MsgLost  lipgloss.Style
		Fresh, Faded, Lane                                    lipgloss.Style
		// Alarm is an etcd alarm (NOSPACE) in a member's box.
		Alarm lipgloss.Style
	}
	Overview struct {
		Node, NodeTitle, Key, Value, Muted lipgloss.Style
		Healthy, Unhealthy                 lipgloss.Style
	}
	// Scheduler is the Scheduler view: the node a scheduler chose (and
	// the scheduler that leads) in the leader's colour.
	Scheduler struct {
		Title, Text, Muted, Good, Bad, Warn, Chosen, Selected lipgloss.Style
	}
	// Proxy is the Proxy view: the rules a change added and removed, and
	// the bars of a burst's answers.
	Proxy struct {
		Title, Value, Muted, Selected lipgloss.Style
		Good, Bad, Busy               lipgloss.Style
		Added, Removed                lipgloss.Style
		Bar, FailBar, Rule            lipgloss.Style
	}
	// Events is the Events view: Warnings, the filter's prompt.
	Events struct {
		Title, Text, Muted, Good, Bad, Warn, Selected, Prompt lipgloss.Style
	}
	// Lesson is the lesson pane.
	Lesson struct {
		Title, TitleFocused, Step, StepTitle, Rule, Muted lipgloss.Style
		DotCurrent, DotDone, Passed, Waiting              lipgloss.Style
	}
	// Command is the command line and its output.
	Command struct {
		Prompt, Input, Echo, Output, Error, Muted, Completion lipgloss.Style
	}
	// List is the lesson list on the home screen.
	List struct {
		Item, ItemSelected, Progress, Done, Muted lipgloss.Style
	}
}

// DefaultStyles returns klab's styles in the standard theme.
func DefaultStyles() *Styles { return New(Standard) }

// New returns klab's styles in theme t (an unknown theme is the standard
// one). Under NO_COLOR, lipgloss renders none of them, so no view relies
// on colour alone: roles are words, the selection has a marker, a lost
// message a cross.
func New(t Theme) *Styles {
	p, ok := palettes[t]
	if !ok {
		t, p = Standard, palettes[Standard]
	}
	colorText, colorMuted, colorSubtle, colorAccent := p.text, p.muted, p.subtle, p.accent
	colorLeader, colorFollow, colorCandid, colorPreCand := p.leader, p.follow, p.candid, p.preCand
	colorBad, colorGood, colorBeat, colorApp, colorBarBg := p.bad, p.good, p.beat, p.app, p.barBg

	s := &Styles{Theme: t}
	fg := func(c lipgloss.TerminalColor) lipgloss.Style { return lipgloss.NewStyle().Foreground(c) }

	s.App = lipgloss.NewStyle().Foreground(colorText)

	s.Header.Bar = lipgloss.NewStyle().Background(colorBarBg)
	s.Header.Brand = fg(colorAccent).Background(colorBarBg).Bold(true)
	s.Header.Item = fg(colorText).Background(colorBarBg)
	s.Header.Muted = fg(colorMuted).Background(colorBarBg)
	s.Header.Tab = fg(colorMuted).Background(colorBarBg)
	s.Header.ActiveTab = fg(colorAccent).Background(colorBarBg).Bold(true).Underline(true)

	s.Footer.Bar = lipgloss.NewStyle()
	s.Footer.Help = help.Styles{
		ShortKey:       fg(colorAccent).Bold(true),
		ShortDesc:      fg(colorMuted),
		ShortSeparator: fg(colorSubtle),
		Ellipsis:       fg(colorSubtle),
		FullKey:        fg(colorAccent).Bold(true),
		FullDesc:       fg(colorText),
		FullSeparator:  fg(colorSubtle),
	}

	s.Status.Info = fg(colorMuted)
	s.Status.Success = fg(colorGood)
	s.Status.Error = fg(colorBad).Bold(true)

	s.Dialog.Box = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(colorAccent).Padding(0, 1)
	s.Dialog.Title = fg(colorAccent).Bold(true)
	s.Dialog.Item = fg(colorText)
	s.Dialog.ItemSelected = fg(colorAccent).Bold(true)
	s.Dialog.Note = fg(colorMuted)

	s.Home.Logo = fg(colorAccent).Bold(true)
	s.Home.Tagline = fg(colorMuted)
	s.Home.Label = fg(colorMuted)
	s.Home.LabelFocused = fg(colorAccent).Bold(true)
	s.Home.Value = fg(colorText)
	s.Home.ValueFocused = fg(colorAccent).Bold(true)
	s.Home.Note = fg(colorMuted)
	s.Home.Warning = fg(colorCandid)
	s.Home.Section = fg(colorText).Bold(true)
	s.Home.Action = fg(colorText)
	s.Home.ActionFocused = fg(colorAccent).Bold(true)
	s.Home.StepRunning = fg(colorCandid)
	s.Home.StepDone = fg(colorGood)
	s.Home.StepFailed = fg(colorBad).Bold(true)
	s.Home.StepTitle = fg(colorText)
	s.Home.StepTime = fg(colorMuted)

	s.Role.Leader = fg(colorLeader).Bold(true)
	s.Role.Follower = fg(colorFollow)
	s.Role.Candidate = fg(colorCandid).Bold(true)
	s.Role.PreCandidate = fg(colorPreCand).Bold(true)
	s.Role.Down = fg(colorBad)

	s.Raft.Box = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(colorSubtle).Padding(0, 1)
	s.Raft.BoxFocused = s.Raft.Box.BorderForeground(colorLeader)
	s.Raft.Title = fg(colorText).Bold(true)
	s.Raft.Key = fg(colorMuted)
	s.Raft.Value = fg(colorText)
	s.Raft.Muted = fg(colorMuted)
	s.Raft.LogCommitted = fg(colorGood)
	s.Raft.LogUncommitted = fg(colorCandid)
	s.Raft.LogAbsent = fg(colorSubtle)
	s.Raft.LogCompacted = fg(colorMuted)
	s.Raft.TimerFill = fg(colorCandid)
	s.Raft.TimerEmpty = fg(colorSubtle)
	s.Raft.TimerMark = fg(colorBad)
	s.Raft.MsgVote = fg(colorCandid)
	s.Raft.MsgApp = fg(colorApp)
	s.Raft.MsgBeat = fg(colorBeat)
	s.Raft.MsgSnap = fg(colorPreCand)
	s.Raft.MsgOther = fg(colorFollow)
	s.Raft.MsgLost = fg(colorBad)
	s.Raft.Alarm = fg(colorBad).Bold(true)
	s.Raft.Fresh = lipgloss.NewStyle().Bold(true)
	s.Raft.Faded = lipgloss.NewStyle().Faint(true)
	s.Raft.Lane = fg(colorSubtle)

	s.Overview.Node = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(colorSubtle).Padding(0, 1)
	s.Overview.NodeTitle = fg(colorText).Bold(true)
	s.Overview.Key = fg(colorMuted)
	s.Overview.Value = fg(colorText)
	s.Overview.Muted = fg(colorMuted)
	s.Overview.Healthy = fg(colorGood)
	s.Overview.Unhealthy = fg(colorBad).Bold(true)

	s.Scheduler.Title = fg(colorText).Bold(true)
	s.Scheduler.Text = fg(colorText)
	s.Scheduler.Muted = fg(colorMuted)
	s.Scheduler.Good = fg(colorGood)
	s.Scheduler.Bad = fg(colorBad).Bold(true)
	s.Scheduler.Warn = fg(colorCandid)
	s.Scheduler.Chosen = fg(colorLeader).Bold(true)
	s.Scheduler.Selected = fg(colorAccent).Bold(true)

	s.Proxy.Title = fg(colorText).Bold(true)
	s.Proxy.Value = fg(colorText)
	s.Proxy.Muted = fg(colorMuted)
	s.Proxy.Selected = fg(colorAccent).Bold(true)
	s.Proxy.Good = fg(colorGood)
	s.Proxy.Bad = fg(colorBad).Bold(true)
	s.Proxy.Busy = fg(colorCandid)
	s.Proxy.Added = fg(colorGood)
	s.Proxy.Removed = fg(colorBad)
	s.Proxy.Bar = fg(colorApp)
	s.Proxy.FailBar = fg(colorBad)
	s.Proxy.Rule = fg(colorSubtle)

	s.Events.Title = fg(colorText).Bold(true)
	s.Events.Text = fg(colorText)
	s.Events.Muted = fg(colorMuted)
	s.Events.Good = fg(colorGood)
	s.Events.Bad = fg(colorBad).Bold(true)
	s.Events.Warn = fg(colorCandid)
	s.Events.Selected = fg(colorAccent).Bold(true)
	s.Events.Prompt = fg(colorAccent).Bold(true)

	s.Lesson.Title = fg(colorText).Bold(true)
	s.Lesson.TitleFocused = fg(colorAccent).Bold(true)
	s.Lesson.Step = fg(colorAccent)
	s.Lesson.StepTitle = fg(colorText).Bold(true)
	s.Lesson.Rule = fg(colorSubtle)
	s.Lesson.Muted = fg(colorMuted)
	s.Lesson.DotCurrent = fg(colorAccent).Bold(true)
	s.Lesson.DotDone = fg(colorGood)
	s.Lesson.Passed = fg(colorGood).Bold(true)
	s.Lesson.Waiting = fg(colorCandid)

	s.Command.Prompt = fg(colorAccent).Bold(true)
	s.Command.Input = fg(colorText)
	s.Command.Echo = fg(colorAccent)
	s.Command.Output = fg(colorText)
	s.Command.Error = fg(colorBad)
	s.Command.Muted = fg(colorMuted)
	s.Command.Completion = fg(colorMuted)

	s.List.Item = fg(colorText)
	s.List.ItemSelected = fg(colorAccent).Bold(true)
	s.List.Progress = fg(colorMuted)
	s.List.Done = fg(colorGood)
	s.List.Muted = fg(colorMuted)
	return s
}

// RoleStyle returns the style of a role name as labstate words it.
func (s *Styles) RoleStyle(role string) lipgloss.Style {
	switch role {
	case "leader":
		return s.Role.Leader
	case "follower":
		return s.Role.Follower
	case "candidate":
		return s.Role.Candidate
	case "pre-candidate":
		return s.Role.PreCandidate
	}
	return s.Role.Down
}
