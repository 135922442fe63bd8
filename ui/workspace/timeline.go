package workspace

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/record"
)

// The timeline pauses the views on the recording: T takes the session
// recorded so far and draws every view as it was at a moment the arrow
// keys move, from the recording alone, the way klab replay does. The live
// views go on taking what their sources send meanwhile, so T (or esc)
// brings them back as they are now.

// timelineHeight is the lines the timeline takes under the view.
const timelineHeight = 2

// recordNames are the views' names in a recording.
var recordNames = map[ViewID]string{
	ViewOverview:  record.ViewOverview,
	ViewRaft:      record.ViewRaft,
	ViewScheduler: record.ViewScheduler,
	ViewProxy:     record.ViewProxy,
	ViewEvents:    record.ViewEvents,
}

// rewind is the timeline open on a session.
type rewind struct {
	s     *record.Session
	views *record.Views
	news  []time.Duration
	at    time.Duration
}

// recordTapes records what msg tells the views that follow it (before
// they take it), and the runtime's report when it changed.
func (m *Model) recordTapes(msg tea.Msg) {
	rec := m.opts.Recording
	if rec == nil {
		return
	}
	if c, ok := msg.(labio.ComponentsMsg); ok && c.Err == nil {
		b, err := json.Marshal(c.Infos)
		if err == nil && string(b) != string(m.comps) {
			m.comps = b
			rec.Tape(record.Components, time.Now(), b)
		}
		return
	}
	for id, v := range m.views {
		if name := recordNames[id]; name != "" && v.Owns(msg) {
			if t := v.Tape(msg); t != nil {
				rec.Tape(name, time.Now(), t)
			}
		}
	}
}

// Rewound reports whether the views are paused on the recording.
func (m *Model) Rewound() bool { return m.rewind != nil }

// openTimeline pauses the views on the recording so far, at its end.
func (m *Model) openTimeline() {
	if m.opts.Recording == nil {
		m.status = status{err: i18n.NewError("record.nothing")}
		return
	}
	s := m.opts.Recording.Session()
	if s.Duration() <= 0 {
		m.status = status{err: i18n.NewError("record.nothing")}
		return
	}
	v, err := s.ViewsAt(m.c, s.Duration())
	if err != nil {
		m.status = status{err: err}
		return
	}
	m.rewind = &rewind{s: s, views: v, news: s.News(), at: s.Duration()}
	m.layout()
}

// seek moves the timeline to at, within what the session keeps.
func (m *Model) seek(at time.Duration) {
	r := m.rewind
	r.at = min(max(at, r.s.From()), r.s.Duration())
	v, err := r.s.Seek(m.c, r.views, r.at)
	if err != nil {
		m.status = status{err: err}
		return
	}
	r.views = v
}

// timelineKey handles a key while the views are rewound: the keys that
// move the moment, and the one that goes back to live. It reports false
// for the keys it leaves to the workspace.
func (m *Model) timelineKey(msg tea.KeyMsg) bool {
	r := m.rewind
	const step = 100 * time.Millisecond
	switch msg.String() {
	case "left", "h":
		m.seek(r.at - time.Second)
	case "right", "l":
		m.seek(r.at + time.Second)
	case ",", "<":
		m.seek(r.at - step)
	case ".", ">":
		m.seek(r.at + step)
	case "[":
		best := r.s.From()
		for _, n := range r.news {
			if n < r.at {
				best = n
			}
		}
		m.seek(best)
	case "]":
		next := r.s.Duration()
		for _, n := range r.news {
			if n > r.at {
				next = n
				break
			}
		}
		m.seek(next)
	case "home", "g":
		// The window's start: what the workspace keeps in memory.
		m.seek(r.s.From())
	case "end", "G":
		m.seek(r.s.Duration())
	default:
		if key.Matches(msg, m.c.Keys.Live) {
			m.rewind = nil
			m.layout()
			return true
		}
		return false
	}
	return true
}

// rewoundView draws the view shown as it was at the timeline's moment,
// with the timeline under it.
func (m *Model) rewoundView() string {
	r := m.rewind
	body := r.views.Draw(recordNames[m.view])
	// The bar leaves room for "rewound" in place of "paused", which is
	// one cell longer in English: the line fits the view, its end
	// (the moment, at the end of the session) not cut off.
	paused, rewound := i18n.T("record.paused"), i18n.T("record.rewound")
	line := record.Timeline(r.s, r.at, false, m.viewW-max(common.Width(rewound)-common.Width(paused), 0))
	head, _, _ := strings.Cut(line, "\n")
	head = strings.Replace(head, paused, rewound, 1)
	keys := ansi.Truncate(i18n.T("record.live-keys"), m.viewW, "…")
	return body + "\n" + head + "\n" + m.c.Styles.Status.Info.Render(keys)
}
