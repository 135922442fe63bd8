package record

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/views/events"
	"github.com/klab-dev/klab/ui/views/overview"
	"github.com/klab-dev/klab/ui/views/proxy"
	"github.com/klab-dev/klab/ui/views/raft"
	"github.com/klab-dev/klab/ui/views/scheduler"
)

// The views' names in a recording, in the order of their keys (1–5).
const (
	ViewOverview  = "overview"
	ViewRaft      = "raft"
	ViewScheduler = "scheduler"
	ViewProxy     = "proxy"
	ViewEvents    = "events"
)

// ViewNames lists the views in the order of their keys.
var ViewNames = []string{ViewOverview, ViewRaft, ViewScheduler, ViewProxy, ViewEvents}

// checkpointEvery is how much recorded time lies between two keyframes:
// a seek folds at most this much of the session.
const checkpointEvery = 10 * time.Second

// Views are the five views drawn from a session at a moment: the same
// views the workspace draws live, given Replay instead of Start and the
// tapes instead of their sources' messages.
type Views struct {
	// c is the views' own Common, whose clock says the moment shown;
	// parent is the one whose styles and keys it follows.
	c, parent *common.Common
	now       time.Time
	Lab       *labstate.State
	views     map[string]common.View
	comps     []runtime.ComponentInfo
	at        time.Duration
	// width and height are the views' size.
	width, height int
	// next are the indexes of the first observation and tape not folded.
	nextObs, nextTape int
}

// checkpoint is what the views held at a moment: the keyframes a seek
// starts from.
type checkpoint struct {
	at                time.Duration
	nextObs, nextTape int
	lab               *labstate.State
	keyframes         map[string][]byte
	comps             []runtime.ComponentInfo
}

// newViews returns the views of info, empty, drawing with c's styles.
func newViews(parent *common.Common, info *lab.Info, st *labstate.State) *Views {
	v := &Views{parent: parent, Lab: st}
	c := *parent
	c.Now = func() time.Time { return v.now }
	v.c = &c
	v.views = map[string]common.View{
		ViewOverview:  overview.New(v.c, st),
		ViewRaft:      raft.New(v.c, st),
		ViewScheduler: scheduler.New(v.c),
		ViewProxy:     proxy.New(v.c),
		ViewEvents:    events.New(v.c),
	}
	for _, view := range v.views {
		view.Replay(info)
	}
	return v
}

// View returns the named view, nil for a name not among ViewNames.
func (v *Views) View(name string) common.View { return v.views[name] }

// At is the moment the views show.
func (v *Views) At() time.Duration { return v.at }

// SetSize sets every view's size.
func (v *Views) SetSize(width, height int) {
	v.width, v.height = width, height
	for _, view := range v.views {
		view.SetSize(width, height)
	}
}

// Draw draws the named view at the moment, in the parent's styles and
// language.
func (v *Views) Draw(name string) string {
	v.c.Styles, v.c.Keys = v.parent.Styles, v.parent.Keys
	if view := v.views[name]; view != nil {
		return view.View()
	}
	return ""
}

// fold brings the views from where they are to at (not before): the
// observations and tapes the workspace took by then, in the order it took
// them, the Observer's first on a tie.
func (v *Views) fold(s *Session, at time.Duration) error {
	end := s.Start.Add(at)
	for {
		var o lab.Observation
		var t *Tape
		if v.nextObs < len(s.Observations) && !s.taken(v.nextObs).After(end) {
			o = s.Observations[v.nextObs]
		}
		if v.nextTape < len(s.Tapes) && !s.Tapes[v.nextTape].At.After(end) {
			t = &s.Tapes[v.nextTape]
		}
		switch {
		case o == nil && t == nil:
			v.at, v.now = at, end
			return nil
		case o != nil && (t == nil || !t.At.Before(s.taken(v.nextObs))):
			v.now = s.taken(v.nextObs)
			v.Lab.Apply(o)
			v.nextObs++
		default:
			v.now = t.At
			if err := v.play(t); err != nil {
				return i18n.Wrap(err, "record.err.play", t.Line, t.View)
			}
			v.nextTape++
		}
	}
}

// play folds one tape.
func (v *Views) play(t *Tape) error {
	if t.View == Components {
		var infos []runtime.ComponentInfo
		if err := json.Unmarshal(t.Data, &infos); err != nil {
			return err
		}
		v.setComponents(infos)
		return nil
	}
	view := v.views[t.View]
	if view == nil {
		return i18n.NewError("record.err.view", t.View)
	}
	return view.Play(t.Data)
}

// setComponents gives the runtime's report to the members and the views,
// as the workspace does.
func (v *Views) setComponents(infos []runtime.ComponentInfo) {
	v.comps = infos
	v.Lab.SetComponents(infos)
	for _, view := range v.views {
		view.Update(labio.ComponentsMsg{Infos: infos})
	}
}

// checkpoint keeps what the views hold now.
func (v *Views) checkpoint() *checkpoint {
	cp := &checkpoint{at: v.at, nextObs: v.nextObs, nextTape: v.nextTape, lab: v.Lab.Clone(),
		comps: v.comps, keyframes: map[string][]byte{}}
	for name, view := range v.views {
		if k := view.Keyframe(); k != nil {
			cp.keyframes[name] = k
		}
	}
	return cp
}

// prepare folds the whole session once, from its base if it has one,
// keeping a checkpoint every checkpointEvery; it reports the first tape
// that cannot be read.
func (s *Session) prepare(c *common.Common) error {
	if s.checkpoints != nil {
		return nil
	}
	v, err := s.restore(c, s.base)
	if err != nil {
		return err
	}
	cps := []*checkpoint{s.base}
	if s.base == nil {
		cps[0] = v.checkpoint()
	}
	for at := s.From() + checkpointEvery; ; at += checkpointEvery {
		if err := v.fold(s, min(at, s.Duration())); err != nil {
			return err
		}
		if at >= s.Duration() {
			break
		}
		cps = append(cps, v.checkpoint())
	}
	s.checkpoints = cps
	return nil
}

// emptyState is the members' state before anything was observed.
func (s *Session) emptyState() *labstate.State { return labstate.New(s.Info.Name, s.Info.Members) }

// restore returns the views as they were at a checkpoint, or empty at
// the session's start for none.
func (s *Session) restore(c *common.Common, cp *checkpoint) (*Views, error) {
	if cp == nil {
		return newViews(c, s.Info, s.emptyState()), nil
	}
	v := newViews(c, s.Info, cp.lab.Clone())
	v.nextObs, v.nextTape, v.at = cp.nextObs, cp.nextTape, cp.at
	v.now = s.Start.Add(cp.at)
	for _, name := range ViewNames {
		if k, ok := cp.keyframes[name]; ok {
			if err := v.views[name].Play(k); err != nil {
				return nil, err
			}
		}
	}
	if cp.comps != nil {
		// The members' runtime states are in the checkpoint's copy.
		for _, view := range v.views {
			view.Update(labio.ComponentsMsg{Infos: cp.comps})
		}
		v.comps = cp.comps
	}
	return v, nil
}

// Check reads every tape of the session into the views, and says which
// one cannot be read, if any.
func (s *Session) Check() error { return s.prepare(common.New()) }

// ViewsAt returns the views as they were at (after the session's start;
// From at the earliest): from the last checkpoint before it, the
// observations and tapes that came since, folded as the live workspace
// folded them.
func (s *Session) ViewsAt(c *common.Common, at time.Duration) (*Views, error) {
	if err := s.prepare(c); err != nil {
		return nil, err
	}
	at = max(at, s.From())
	i := sort.Search(len(s.checkpoints), func(i int) bool { return s.checkpoints[i].at > at }) - 1
	v, err := s.restore(c, s.checkpoints[max(i, 0)])
	if err != nil {
		return nil, err
	}
	if err := v.fold(s, at); err != nil {
		return nil, err
	}
	return v, nil
}

// Seek moves the views to at: forward by folding what came since, back
// (or far forward) from a checkpoint. v may be nil; the views returned
// draw with c's styles, in v's size.
func (s *Session) Seek(c *common.Common, v *Views, at time.Duration) (*Views, error) {
	if v != nil && at >= v.at && at-v.at <= checkpointEvery {
		if err := v.fold(s, at); err != nil {
			return nil, err
		}
		return v, nil
	}
	nv, err := s.ViewsAt(c, at)
	if err != nil {
		return nil, err
	}
	if v != nil {
		nv.SetSize(v.width, v.height)
	}
	return nv, nil
}
