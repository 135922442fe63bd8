// Package scheduler is the Scheduler view: the decisions the cluster's
// real kube-scheduler makes, pod by pod. For the selected pod it shows
// what every filter plugin said about every node and why a node was
// rejected, then how each score plugin rated the nodes that passed (raw,
// normalised, weighted), the totals and the node chosen; for a pod that
// fits nowhere, the scheduler's FailedScheduling message explained line
// by line. The decisions come from the schedulers' /debug/klab/events
// streams as they are made.
package scheduler

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	sched "github.com/klab-dev/klab/cluster/scheduler"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/styles"
	"github.com/klab-dev/klab/ui/views/events/feed"
)

// View is the Scheduler view.
type View struct {
	c             *common.Common
	width, height int
	// loc is the time zone times are shown in.
	loc *time.Location

	feed    *feed.Feed
	started bool
	sources []source
	// holder is the node whose scheduler holds the lease, as last
	// reported, and holderAt when that was.
	holder   string
	holderAt time.Time
	pods     pods
	// follow: the selection is the most recent pod, whichever it is;
	// otherwise selected names the pod chosen with the arrows.
	follow   bool
	selected string
}

var _ common.View = (*View)(nil)

// New returns the Scheduler view, not yet following any cluster.
func New(c *common.Common) *View { return &View{c: c, loc: time.Local, follow: true} }

// SetSize sets the cells the view draws in.
func (v *View) SetSize(width, height int) { v.width, v.height = width, height }

// Start follows the kube-schedulers of the cluster described by info
// until ctx ends, forgetting what the view knew of another cluster.
func (v *View) Start(ctx context.Context, info *lab.Info) tea.Cmd {
	v.feed = feed.New(ctx)
	v.started = true
	v.sources = schedulers(info)
	v.holder, v.holderAt = "", time.Time{}
	v.pods = pods{}
	v.follow, v.selected = true, ""
	var nodes []runtime.Node
	for _, n := range info.Nodes {
		for _, s := range v.sources {
			if s.Node == n.Name {
				nodes = append(nodes, n)
			}
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	f := v.feed
	start := func() tea.Msg {
		for _, n := range nodes {
			go follow(ctx, f, n)
		}
		return nil
	}
	return tea.Batch(start, f.Next())
}

// Show does nothing: the decisions are followed shown or not, since a
// student looks for the ones made while another view was shown.
func (v *View) Show(bool) tea.Cmd { return nil }

// Owns reports whether msg is a batch of the view's feed.
func (v *View) Owns(msg tea.Msg) bool {
	_, ok := v.feed.Take(msg)
	return ok
}

// Update takes the view's feed batches and waits for the next one, and
// keys while the view is shown; every other message is ignored.
func (v *View) Update(msg tea.Msg) tea.Cmd {
	if km, ok := msg.(tea.KeyMsg); ok {
		v.handleKey(km)
		return nil
	}
	b, ok := v.feed.Take(msg)
	if !ok {
		return nil
	}
	for _, it := range b.Items {
		v.apply(it)
	}
	return v.feed.Next()
}

// apply folds one item of the feed into the view's state.
func (v *View) apply(item any) {
	switch it := item.(type) {
	case stateItem:
		s := v.source(it.Node)
		if s == nil {
			return
		}
		s.Connected, s.Err = it.Err == nil, ""
		if it.Err != nil {
			s.Err, s.Leading = it.Err.Error(), false
		}
	case eventItem:
		e := it.Event
		switch e.Kind {
		case sched.EventDecision:
			if e.Decision != nil {
				v.pods.add(*e.Decision)
			}
		case sched.EventBind:
			v.pods.bind(e.Pod, e.Node, e.Error)
		case sched.EventLeader:
			if s := v.source(it.Node); s != nil {
				s.Leading = e.IsLeader
			}
			if !e.Time.Before(v.holderAt) {
				v.holder, v.holderAt = holderNode(e.Holder), e.Time
			}
		}
	}
}

func (v *View) source(node string) *source {
	for i := range v.sources {
		if v.sources[i].Node == node {
			return &v.sources[i]
		}
	}
	return nil
}

// current returns the selected pod's index, or -1 when there is none.
func (v *View) current() int {
	if len(v.pods.list) == 0 {
		return -1
	}
	if v.follow {
		return 0
	}
	if i := v.pods.index(v.selected); i >= 0 {
		return i
	}
	return 0
}

// handleKey moves the selection: up to more recent pods, down to older
// ones. Back at the most recent, the selection follows new pods again.
func (v *View) handleKey(msg tea.KeyMsg) {
	k := v.c.Keys
	n := len(v.pods.list)
	i := v.current()
	switch {
	case key.Matches(msg, k.Up) && n > 0:
		i = max(i-1, 0)
	case key.Matches(msg, k.Down) && n > 0:
		i = min(i+1, n-1)
	default:
		return
	}
	v.follow = i == 0
	v.selected = v.pods.list[i].Key
}

// Typing reports false: the Scheduler view takes no text.
func (v *View) Typing() bool { return false }

// ShortHelp lists the keys that work now: choosing a pod, when there are
// several.
func (v *View) ShortHelp() []key.Binding {
	if len(v.pods.list) < 2 {
		return nil
	}
	up, down := v.c.Keys.Up, v.c.Keys.Down
	up.SetHelp(up.Help().Key, i18n.T("ui.sched.key.newer"))
	down.SetHelp(down.Help().Key, i18n.T("ui.sched.key.older"))
	return []key.Binding{up, down}
}

// FullHelp lists the keys that work now, as one group.
func (v *View) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }

// View draws the view.
func (v *View) View() string {
	w, h := v.width, v.height
	if w <= 0 || h <= 0 {
		return ""
	}
	s := v.c.Styles
	out := []string{v.summary(s)}
	if !v.started || len(v.sources) == 0 || len(v.pods.list) == 0 {
		out = append(out, "")
		out = append(out, v.waiting(s)...)
		return common.Lines(strings.Join(out, "\n"), w, h)
	}
	cur := v.current()
	out = append(out, v.podList(s, cur, podRows(h, len(v.pods.list)))...)
	out = append(out, "")
	e := v.pods.list[cur]
	out = append(out, v.decisionLines(s, e, h-len(out))...)
	return common.Lines(strings.Join(out, "\n"), w, h)
}

// podRows is how many lines the pod list gets.
func podRows(height, pods int) int {
	return min(pods, max(1, min(5, (height-8)/5)))
}

// summary is the first line: the schedulers and who leads.
func (v *View) summary(s *styles.Styles) string {
	parts := []string{s.Scheduler.Title.Render(i18n.T("ui.sched.title"))}
	if !v.started {
		return common.JoinFitting(append(parts, s.Scheduler.Muted.Render(i18n.T("ui.sched.not-started"))), v.width, s.Scheduler.Muted.Render(" · "))
	}
	if v.holder != "" {
		if src := v.source(v.holder); src != nil && !src.Connected {
			// Its stream is down: it may be dead, and another may lead
			// without having said so to the view yet.
			parts = append(parts, s.Scheduler.Bad.Render(i18n.T("ui.sched.leader-lost", v.holder)))
		} else {
			parts = append(parts, s.Scheduler.Chosen.Render(i18n.T("ui.sched.leader", v.holder)))
		}
	}
	for _, src := range v.sources {
		switch {
		case src.Connected:
			parts = append(parts, s.Scheduler.Good.Render("✓ ")+src.Node)
		case src.Err != "":
			parts = append(parts, s.Scheduler.Bad.Render("✗ "+src.Node+" "+i18n.T("ui.sched.retrying")))
		default:
			parts = append(parts, s.Scheduler.Muted.Render("… "+src.Node))
		}
	}
	if n := len(v.pods.list); n > 0 {
		parts = append(parts, s.Scheduler.Muted.Render(i18n.T("ui.sched.pods", n)))
	}
	return common.JoinFitting(parts, v.width, s.Scheduler.Muted.Render(" · "))
}

// waiting says honestly why there is nothing to show yet.
func (v *View) waiting(s *styles.Styles) []string {
	switch {
	case !v.started:
		return common.Wrap(i18n.T("ui.sched.wait.no-cluster"), v.width, "")
	case len(v.sources) == 0:
		return common.Wrap(i18n.T("ui.sched.wait.no-scheduler"), v.width, "")
	}
	connected := 0
	var errs []string
	for _, src := range v.sources {
		if src.Connected {
			connected++
		} else if src.Err != "" {
			errs = append(errs, src.Node+": "+src.Err)
		}
	}
	var out []string
	switch {
	case connected > 0:
		out = common.Wrap(i18n.T("ui.sched.wait.no-decisions"), v.width, "")
	case len(errs) > 0:
		out = common.Wrap(i18n.T("ui.sched.wait.unreachable"), v.width, "")
	default:
		out = common.Wrap(i18n.T("ui.sched.wait.connecting"), v.width, "")
	}
	for _, e := range errs {
		out = append(out, common.WrapStyled(s.Scheduler.Bad, e, v.width, "  ")...)
	}
	return out
}

// podList draws rows pods around the selected one, the most recent first.
func (v *View) podList(s *styles.Styles, cur, rows int) []string {
	list := v.pods.list
	first := min(max(cur-rows/2, 0), max(len(list)-rows, 0))
	podW := 0
	for _, e := range list[first : first+rows] {
		podW = max(podW, len(e.Key))
	}
	podW = min(podW, max(v.width/2, 12))
	resW := 0
	for _, e := range list[first : first+rows] {
		resW = max(resW, common.Width(resultWord(s, e)))
	}
	var out []string
	for i := first; i < first+rows; i++ {
		e := list[i]
		name := "  " + common.Pad(e.Key, podW)
		if i == cur {
			name = s.Scheduler.Selected.Render("▸ " + common.Pad(e.Key, podW))
		}
		when := s.Scheduler.Muted.Render(i18n.T("ui.sched.attempt", e.Decision.Attempt) + " · " + common.Clock(e.Decision.Time, v.loc))
		out = append(out, common.Fit(name+"  "+common.Pad(resultWord(s, e), resW)+"  "+when, v.width))
	}
	if len(list) > rows {
		out[len(out)-1] = common.Pad(out[len(out)-1], v.width-8) + s.Scheduler.Muted.Render(common.PadLeft(fmt.Sprintf("%d/%d", cur+1, len(list)), 8))
	}
	return out
}

// resultWord is a pod's outcome in a few words.
func resultWord(s *styles.Styles, e *podEntry) string {
	d := e.Decision
	switch {
	case d.Result == sched.ResultScheduled && e.BindError != "":
		return s.Scheduler.Bad.Render("✗ " + i18n.T("ui.sched.result.bind-failed", d.Node))
	case d.Result == sched.ResultScheduled && e.Bound:
		return s.Scheduler.Good.Render("✓ " + i18n.T("ui.sched.result.bound", d.Node))
	case d.Result == sched.ResultScheduled:
		return s.Scheduler.Good.Render("✓ " + i18n.T("ui.sched.result.scheduled", d.Node))
	case d.Result == sched.ResultUnschedulable:
		return s.Scheduler.Warn.Render("✗ " + i18n.T("ui.sched.result.unschedulable"))
	}
	return s.Scheduler.Bad.Render("! " + i18n.T("ui.sched.result.error"))
}

// decisionLines draws the selected pod's latest decision in at most
// height lines: a line about the attempt, the Filter table, then the Score
// table or the reasons the pod waits. When they do not all fit, the
// tables give up rows first.
func (v *View) decisionLines(s *styles.Styles, e *podEntry, height int) []string {
	d := &e.Decision
	w := v.width
	head := []string{common.JoinFitting([]string{
		s.Scheduler.Title.Render(e.Key),
		i18n.T("ui.sched.attempt", d.Attempt),
		common.Clock(d.Time, v.loc),
		s.Scheduler.Muted.Render(i18n.T("ui.sched.cycle", fmt.Sprintf("%.1f ms", float64(d.Cycle.Microseconds())/1000))),
	}, w, s.Scheduler.Muted.Render(" · "))}
	filter := filterSection(s, d, w)
	var result section
	switch d.Result {
	case sched.ResultScheduled:
		result = scoreSection(s, d, w)
		if e.BindError != "" {
			result.Tail = append(result.Tail, common.WrapStyled(s.Scheduler.Bad, i18n.T("ui.sched.bind-error", e.BindError), w, "")...)
		}
	default:
		result = whySection(s, d, w)
	}
	room := height - len(head) - 1 // a blank line between the tables
	filterBudget := filter.size()
	if filterBudget+result.size() > room {
		filterBudget = max(filter.minSize(), room-result.size())
	}
	out := append(head, filter.lines(filterBudget)...)
	out = append(out, "")
	return append(out, result.lines(room-filterBudget)...)
}

// whySection explains why a pod was not scheduled: the scheduler's
// message as it wrote it, then each of its reasons in the current
// language.
func whySection(s *styles.Styles, d *sched.Decision, width int) section {
	sec := section{More: func(n int) string { return s.Scheduler.Muted.Render(i18n.T("ui.sched.more-reasons", n)) }}
	sec.Head = append(sec.Head, s.Scheduler.Title.Render(common.Fit(i18n.T("ui.sched.why.title"), width)))
	sec.Head = append(sec.Head, common.WrapStyled(s.Scheduler.Warn, d.Message, width, "")...)
	for _, wl := range whyLines(d.Result, d.Message) {
		sec.Rows = append(sec.Rows, common.Fit("  "+s.Scheduler.Text.Render(wl.Upstream), width))
		sec.Rows = append(sec.Rows, common.WrapStyled(s.Scheduler.Muted, wl.Text, width, "    ")...)
	}
	if d.Result == sched.ResultUnschedulable {
		sec.Tail = common.Wrap(i18n.T("ui.sched.why.retry"), width, "")
	}
	return sec
}
