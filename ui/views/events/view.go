// Package events is the Events view: two panes, one above the other. The
// upper one lists the cluster's Events (events.k8s.io/v1, every namespace)
// as a watch delivers them, Warnings coloured; enter explains the selected
// one in the current language. The lower one is the API servers' request
// log: every request they serve, with its verb, resource, object, user,
// status code and latency. A filter (/) keeps the rows of both that
// contain its text.
package events

import (
	"context"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/views/events/feed"
)

// View is the Events view.
type View struct {
	c             *common.Common
	width, height int
	// loc is the time zone times are shown in.
	loc *time.Location

	feed    *feed.Feed
	started bool
	// ctx, info and srvs are what Start was given, for Show;
	// stopRequests ends the request logs' followers while hidden.
	ctx          context.Context
	info         *lab.Info
	srvs         []apiServer
	stopRequests context.CancelFunc
	events       eventLog
	// listed: the Events were listed at least once; watching: the watch
	// runs now; eventsErr: why it does not.
	listed, watching bool
	eventsErr        string
	requests         requestLog
	servers          []serverState

	// selected is the UID of the chosen event; "" follows the newest.
	selected string
	// explaining: the lower pane explains the selected event.
	explaining bool
	// filter is the text rows must contain; editing: it is being typed.
	filter  string
	editing bool
}

// serverState is one API server's request log as the view follows it.
type serverState struct {
	Node      string
	Connected bool
	Err       string
	// last is the time of the newest request taken: a log followed
	// again replays the requests it kept.
	last time.Time
}

var _ common.View = (*View)(nil)

// New returns the Events view, not yet following any cluster.
func New(c *common.Common) *View { return &View{c: c, loc: time.Local} }

// SetSize sets the cells the view draws in.
func (v *View) SetSize(width, height int) { v.width, v.height = width, height }

// Start follows the Events of the cluster described by info until ctx
// ends, forgetting another cluster's, and its API servers' request logs
// while the view is shown (Show).
func (v *View) Start(ctx context.Context, info *lab.Info) tea.Cmd {
	if v.stopRequests != nil {
		v.stopRequests()
	}
	*v = View{c: v.c, width: v.width, height: v.height, loc: v.loc, filter: v.filter}
	v.feed = feed.New(ctx)
	v.started = true
	v.ctx, v.info, v.srvs = ctx, info, apiServers(info)
	for _, s := range v.srvs {
		v.servers = append(v.servers, serverState{Node: s.Node})
	}
	f := v.feed
	start := func() tea.Msg {
		go watchEvents(ctx, f, info)
		return nil
	}
	return tea.Batch(start, f.Next())
}

// Show follows the API servers' request logs while the view is shown.
// They stream a steady cluster's lease renewals all the time, a few
// requests a second per server, which only this view's rows need. Shown
// again, the view reads each log anew, and the server replays the 256
// requests it keeps.
func (v *View) Show(shown bool) tea.Cmd {
	if !v.started || v.feed == nil || shown == (v.stopRequests != nil) {
		return nil
	}
	if !shown {
		v.stopRequests()
		v.stopRequests = nil
		return nil
	}
	ctx, cancel := context.WithCancel(v.ctx)
	v.stopRequests = cancel
	f, info, srvs := v.feed, v.info, v.srvs
	return func() tea.Msg {
		for _, s := range srvs {
			go followRequests(ctx, f, info, s)
		}
		return nil
	}
}

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

func (v *View) apply(item any) {
	switch it := item.(type) {
	case eventsListed:
		v.listed = true
		for _, r := range it.Rows {
			v.events.upsert(r)
		}
	case eventChanged:
		v.events.upsert(it.Row)
	case eventsState:
		v.watching, v.eventsErr = it.Err == nil, ""
		if it.Err != nil {
			v.eventsErr = it.Err.Error()
		}
	case requestItem:
		for i := range v.servers {
			if v.servers[i].Node == it.Row.Server {
				if !it.Row.Time.After(v.servers[i].last) {
					return // replayed: taken before
				}
				v.servers[i].last = it.Row.Time
			}
		}
		v.requests.add(it.Row)
	case requestState:
		for i := range v.servers {
			if v.servers[i].Node == it.Server {
				v.servers[i].Connected, v.servers[i].Err = it.Err == nil, ""
				if it.Err != nil {
					v.servers[i].Err = it.Err.Error()
				}
			}
		}
	}
}

// visibleEvents returns the indexes of the events the filter keeps.
func (v *View) visibleEvents() []int {
	var out []int
	f := strings.ToLower(v.filter)
	for i := range v.events.rows {
		if f == "" || strings.Contains(strings.ToLower(v.events.rows[i].text(v.loc)), f) {
			out = append(out, i)
		}
	}
	return out
}

// visibleRequests returns the indexes of the requests the filter keeps.
func (v *View) visibleRequests() []int {
	var out []int
	f := strings.ToLower(v.filter)
	for i := range v.requests.rows {
		if f == "" || strings.Contains(strings.ToLower(v.requests.rows[i].text(v.loc)), f) {
			out = append(out, i)
		}
	}
	return out
}

// cursor returns the position of the selected event among the visible
// ones: the newest when following, or when the selected one is filtered
// out; -1 when none is visible.
func (v *View) cursor(visible []int) int {
	if len(visible) == 0 {
		return -1
	}
	if v.selected != "" {
		for p, i := range visible {
			if v.events.rows[i].UID == v.selected {
				return p
			}
		}
	}
	return len(visible) - 1
}

// current returns the selected event, or nil.
func (v *View) current() *eventRow {
	visible := v.visibleEvents()
	p := v.cursor(visible)
	if p < 0 {
		return nil
	}
	return &v.events.rows[visible[p]]
}

// handleKey handles the filter line while it is open (every key but
// ctrl+c goes to it), and otherwise the selection, the explanation and the
// filter's keys.
func (v *View) handleKey(msg tea.KeyMsg) {
	k := v.c.Keys
	if v.editing {
		switch {
		case key.Matches(msg, k.ForceQuit):
		case key.Matches(msg, k.Back):
			v.filter, v.editing = "", false
		case key.Matches(msg, k.Select):
			v.editing = false
		case msg.Type == tea.KeyBackspace:
			if r := []rune(v.filter); len(r) > 0 {
				v.filter = string(r[:len(r)-1])
			}
		case msg.Type == tea.KeyRunes, msg.Type == tea.KeySpace:
			v.filter += string(msg.Runes)
		case key.Matches(msg, k.Up, k.Down, k.PageUp, k.PageDown):
			v.move(msg)
		}
		return
	}
	switch {
	case key.Matches(msg, k.Filter):
		v.editing = true
	case key.Matches(msg, k.Back) && v.explaining:
		v.explaining = false
	case key.Matches(msg, k.Back) && v.filter != "":
		v.filter = ""
	case key.Matches(msg, k.Select) && v.explaining:
		v.explaining = false
	case key.Matches(msg, k.Select):
		if cur := v.current(); cur != nil {
			// The explained event stays selected while new ones arrive.
			v.selected, v.explaining = cur.UID, true
		}
	case key.Matches(msg, k.Up, k.Down, k.PageUp, k.PageDown):
		v.move(msg)
	}
}

// move moves the selection: up to older events, down to newer ones, a
// page at a time with PageUp and PageDown. Reaching the newest, the
// selection follows new events again (unless one is being explained).
func (v *View) move(msg tea.KeyMsg) {
	k := v.c.Keys
	visible := v.visibleEvents()
	p := v.cursor(visible)
	if p < 0 {
		return
	}
	page := max(v.eventRows()-1, 1)
	switch {
	case key.Matches(msg, k.Up):
		p--
	case key.Matches(msg, k.Down):
		p++
	case key.Matches(msg, k.PageUp):
		p -= page
	case key.Matches(msg, k.PageDown):
		p += page
	}
	p = min(max(p, 0), len(visible)-1)
	v.selected = v.events.rows[visible[p]].UID
	if p == len(visible)-1 && !v.explaining {
		v.selected = ""
	}
}

// Typing reports whether the filter is being typed.
func (v *View) Typing() bool { return v.editing }

// ShortHelp lists the keys that work now.
func (v *View) ShortHelp() []key.Binding {
	k := v.c.Keys
	with := func(b key.Binding, desc string) key.Binding {
		b.SetHelp(b.Help().Key, desc)
		return b
	}
	if v.editing {
		return []key.Binding{with(k.Select, i18n.T("ui.events.key.keep-filter")), with(k.Back, i18n.T("ui.events.key.clear-filter"))}
	}
	var out []key.Binding
	if n := len(v.visibleEvents()); n > 0 {
		out = append(out, with(k.Up, i18n.T("ui.events.key.older")), with(k.Down, i18n.T("ui.events.key.newer")))
		if v.explaining {
			out = append(out, with(k.Select, i18n.T("ui.events.key.close")))
		} else {
			out = append(out, with(k.Select, i18n.T("ui.events.key.explain")))
		}
		if n > v.eventRows() {
			out = append(out, k.PageUp, k.PageDown)
		}
	}
	out = append(out, k.Filter)
	switch {
	case v.explaining:
		out = append(out, with(k.Back, i18n.T("ui.events.key.close")))
	case v.filter != "":
		out = append(out, with(k.Back, i18n.T("ui.events.key.clear-filter")))
	}
	return out
}

// FullHelp lists the keys that work now, as one group.
func (v *View) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }
