package record

import (
	"fmt"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/keys"
	"github.com/klab-dev/klab/ui/labstate"
)

// StateAt folds the session's observations up to at (after its start)
// into the picture the views draw: the same fold the live workspace
// makes, so a moment is drawn as it was. A session that keeps only a
// window starts from the state at its base; a moment before it is drawn
// as at the base.
func (s *Session) StateAt(at time.Duration) *labstate.State {
	st := s.emptyState()
	if s.base != nil {
		st = s.base.lab.Clone()
	}
	for _, o := range s.Observations[:s.index(at)] {
		st.Apply(o)
	}
	return st
}

// index is how many observations came by at.
func (s *Session) index(at time.Duration) int {
	end := s.Start.Add(at)
	return sort.Search(len(s.Observations), func(i int) bool {
		return s.taken(i).After(end)
	})
}

// News returns the moments (after the start) of the session's news: what
// is not a steady cluster's traffic (lab.Routine), such as a vote, a role
// change or a member that stopped answering. Scrubbing jumps between them.
func (s *Session) News() []time.Duration {
	var out []time.Duration
	for _, o := range s.Observations {
		if lab.Routine(o) {
			continue
		}
		d := o.Header().At.Sub(s.Start)
		if len(out) == 0 || d-out[len(out)-1] >= 100*time.Millisecond {
			out = append(out, d)
		}
	}
	return out
}

// Frame draws a view (one of ViewNames) of the session at a moment, with
// the timeline under it: what klab replay shows there.
func Frame(c *common.Common, s *Session, view string, at time.Duration, width, height int) (string, error) {
	v, err := s.ViewsAt(c, at)
	if err != nil {
		return "", err
	}
	v.SetSize(width, max(height-3, 1))
	return common.Lines(Tabs(c, view, width)+"\n"+v.Draw(view)+"\n"+Timeline(s, at, false, width), width, height), nil
}

// Tabs draws the line that names the views and marks the one shown, with
// the keys that show each.
func Tabs(c *common.Common, shown string, width int) string {
	var parts []string
	for i, name := range ViewNames {
		label := fmt.Sprintf("%d %s", i+1, i18n.T("ui.view."+name))
		if name == shown {
			label = c.Styles.Header.ActiveTab.Render(label)
		} else {
			label = c.Styles.Header.Tab.Render(label)
		}
		parts = append(parts, label)
	}
	return ansi.Truncate(strings.Join(parts, "  "), width, "…")
}

// Timeline draws where a moment is in the session, and the keys that move
// it, in one or two lines. A session that keeps only its latest moments
// (a workspace's window) says from when: its bar begins there.
func Timeline(s *Session, at time.Duration, playing bool, width int) string {
	from, total := s.From(), s.Duration()
	state := i18n.T("record.paused")
	if playing {
		state = i18n.T("record.playing")
	}
	head := fmt.Sprintf("%s %s / %s", state, clock(at), clock(total))
	if from > 0 {
		head += " · " + i18n.T("record.window", clock(from))
	}
	bar := max(width-common.Width(head)-1, 10)
	mark := func(d time.Duration) int {
		if total <= from {
			return 0
		}
		return min(max(int(float64(bar-1)*float64(d-from)/float64(total-from)), 0), bar-1)
	}
	marks := []rune(strings.Repeat("─", bar))
	for _, n := range s.News() {
		if n >= from {
			marks[mark(n)] = '╵'
		}
	}
	marks[mark(at)] = '●'
	return head + " " + string(marks) + "\n" + ansi.Truncate(i18n.T("record.keys"), width, "…")
}

func clock(d time.Duration) string {
	d = d.Round(100 * time.Millisecond)
	return fmt.Sprintf("%d:%04.1f", int(d.Minutes()), (d % time.Minute).Seconds())
}

// Player is klab replay's screen: a recorded session's views at a moment
// the user moves, paused or playing at the speed it was recorded.
type Player struct {
	c             *common.Common
	s             *Session
	views         *Views
	view          string
	news          []time.Duration
	at            time.Duration
	playing       bool
	width, height int
	err           error
}

// NewPlayer opens a session paused at its start, on the Raft view. It
// reads every tape first, and says which one it cannot.
func NewPlayer(c *common.Common, s *Session) (*Player, error) {
	p := &Player{c: c, s: s, view: ViewRaft, news: s.News(), width: 100, height: 30}
	v, err := s.ViewsAt(c, 0)
	if err != nil {
		return nil, err
	}
	p.views = v
	p.layout()
	return p, nil
}

type tickMsg struct{}

const playStep = 100 * time.Millisecond

func tick() tea.Cmd { return tea.Tick(playStep, func(time.Time) tea.Msg { return tickMsg{} }) }

// Init starts nothing: the player opens paused.
func (p *Player) Init() tea.Cmd { return nil }

// At reports the moment shown.
func (p *Player) At() time.Duration { return p.at }

// Show shows the named view, one of ViewNames.
func (p *Player) Show(view string) {
	if p.views.View(view) != nil {
		p.view = view
	}
}

// Seek moves to a moment, within the session.
func (p *Player) Seek(at time.Duration) {
	p.at = min(max(at, p.s.From()), p.s.Duration())
	v, err := p.s.Seek(p.c, p.views, p.at)
	if err != nil {
		p.err = err
		return
	}
	p.views = v
}

func (p *Player) layout() { p.views.SetSize(p.width, max(p.height-3, 1)) }

// Update moves the moment on keys and, playing, with time.
func (p *Player) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		p.width, p.height = msg.Width, msg.Height
		p.layout()
	case tickMsg:
		if !p.playing {
			return p, nil
		}
		p.Seek(p.at + playStep)
		if p.at >= p.s.Duration() {
			p.playing = false
			return p, nil
		}
		return p, tick()
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return p, tea.Quit
		case " ":
			p.playing = !p.playing
			if p.playing {
				if p.at >= p.s.Duration() {
					p.Seek(p.s.From())
				}
				return p, tick()
			}
		case "left", "h":
			p.playing = false
			p.Seek(p.at - time.Second)
		case "right", "l":
			p.playing = false
			p.Seek(p.at + time.Second)
		case ",", "<":
			p.playing = false
			p.Seek(p.at - playStep)
		case ".", ">":
			p.playing = false
			p.Seek(p.at + playStep)
		case "[":
			p.playing = false
			p.Seek(p.prevNews())
		case "]":
			p.playing = false
			p.Seek(p.nextNews())
		case "home", "g":
			p.Seek(p.s.From())
		case "end", "G":
			p.Seek(p.s.Duration())
		case "1", "2", "3", "4", "5":
			p.Show(ViewNames[msg.String()[0]-'1'])
		case "L":
			if i18n.Current() == i18n.Korean {
				i18n.SetLang(i18n.English)
			} else {
				i18n.SetLang(i18n.Korean)
			}
			*p.c.Keys = *keys.Default()
		default:
			// The view's own keys (choosing a pod, a Service, an event):
			// they change what is selected, never the cluster.
			p.views.View(p.view).Update(msg)
		}
	}
	return p, nil
}

func (p *Player) prevNews() time.Duration {
	best := p.s.From()
	for _, n := range p.news {
		if n < p.at {
			best = n
		}
	}
	return best
}

func (p *Player) nextNews() time.Duration {
	for _, n := range p.news {
		if n > p.at {
			return n
		}
	}
	return p.s.Duration()
}

// View draws the view shown at the moment, and the timeline.
func (p *Player) View() string {
	body := p.views.Draw(p.view)
	if p.err != nil {
		body = p.c.Styles.Status.Error.Render(i18n.Localize(p.err, i18n.Current()))
	}
	return common.Lines(Tabs(p.c, p.view, p.width)+"\n"+body+"\n"+Timeline(p.s, p.at, p.playing, p.width), p.width, p.height)
}
