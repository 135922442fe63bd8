package record

import (
	"slices"
	"time"
	"unsafe"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/common"
)

// A workspace stays open for hours in a class, and a busy cluster's
// Observer and views send hundreds of records a second: kept whole, the
// session the timeline scrubs would grow by about a gigabyte an hour (see
// BenchmarkLiveBusyHour). The recording file keeps everything, for klab
// replay; in memory a Live keeps only a window of the latest moments, and
// the state at the window's start as a base (a checkpoint: the members'
// state, each view's keyframe and the runtime's report), so that every
// moment still inside it is drawn exactly as from the whole session.
// Before the window the timeline has nothing to show, and says where it
// begins.

// Window bounds what a Live keeps in memory for the timeline: the latest
// Span of the session, in at most about Bytes of the heap. A zero field
// sets no bound.
type Window struct {
	Span  time.Duration
	Bytes int64
}

// DefaultWindow is what a workspace keeps. Thirty minutes is more than a
// lesson step or a demonstration takes (stop the leader, watch the
// election, watch the pods come back), so a teacher can still rewind to
// "when I stopped master-1" well after it; the timeline is for the
// class's last moments, and klab replay shows the whole session from the
// file. 96 MiB holds those thirty minutes of a three-member cluster left
// alone (the recording benchmark's steady phase, some 90 observations a
// second: about 90 MiB) and, under that benchmark's heavy load (700 a
// second, where a whole hour took a gigabyte), the last four to five
// minutes: the demonstration just made, in a workspace that shares the
// students' laptops with the cluster.
var DefaultWindow = Window{Span: 30 * time.Minute, Bytes: 96 << 20}

// trimKeep is the share of a bound a trim leaves: past a bound, the
// oldest sixteenth goes at once, so that trimming (a fold of what goes, a
// keyframe of every view, a copy of what stays) comes every half minute
// or so at the heaviest load, not with every record. A trim then takes
// the workspace's Update loop some 40 ms on a loaded machine, where an
// eighth took 70 ms for the same CPU an hour (BenchmarkLiveBusyHour).
const trimKeep = 15.0 / 16

// over reports whether the session passed a bound of the window.
func (l *Live) over() bool {
	w := l.window
	return w.Span > 0 && l.s.Duration()-l.s.From() > w.Span || w.Bytes > 0 && l.kept > w.Bytes
}

// trim drops the oldest records, down to trimKeep of the window's bounds,
// and keeps the state at the new start as the session's base.
func (l *Live) trim() {
	s, w := l.s, l.window
	from, end := s.From(), s.Duration()
	to := from
	if w.Span > 0 {
		to = max(to, end-time.Duration(float64(w.Span)*trimKeep))
	}
	if w.Bytes > 0 && l.kept > int64(float64(w.Bytes)*trimKeep) {
		to = max(to, s.dropping(l.kept-int64(float64(w.Bytes)*trimKeep)))
	}
	// On the keyframes' grid the base falls where a seek over the whole
	// session would start from too: the next point of it, so that the
	// trim drops no less than it must.
	if g := (to + checkpointEvery - 1).Truncate(checkpointEvery); g <= end {
		to = g
	}
	if to <= from {
		return
	}
	if l.c == nil {
		l.c = common.New()
	}
	l.kept -= s.trimTo(l.c, to)
	l.trims++
}

// dropping returns the moment by which the session's first records add
// up to n bytes, in the order they were taken.
func (s *Session) dropping(n int64) time.Duration {
	var i, j int
	var at time.Time
	for n > 0 && (i < len(s.Observations) || j < len(s.Tapes)) {
		if j >= len(s.Tapes) || i < len(s.Observations) && !s.taken(i).After(s.Tapes[j].At) {
			at = s.taken(i)
			n -= sizeOfObservation(s.Observations[i])
			i++
		} else {
			at = s.Tapes[j].At
			n -= sizeOfTape(&s.Tapes[j])
			j++
		}
	}
	return at.Sub(s.Start)
}

// trimTo folds the session from its base to to, keeps that as its new
// base and drops the records it folded; it returns how many fewer bytes
// the session holds. The records are copied to new arrays: the old ones
// may be a copy's (Live.Session) that the timeline is drawing.
func (s *Session) trimTo(c *common.Common, to time.Duration) int64 {
	v, err := s.restore(c, s.base)
	if err != nil {
		// A keyframe the views made cannot fail to play; if one did,
		// the base starts over from nothing rather than keep everything.
		v = newViews(c, s.Info, s.emptyState())
	}
	for v.fold(s, to) != nil {
		// A tape no view reads: scrubbing the whole session would
		// have stopped at it, and it is in the file; the window goes
		// past it.
		v.nextTape++
	}
	base := v.checkpoint()
	base.nextObs, base.nextTape = 0, 0
	var dropped int64
	for _, o := range s.Observations[:v.nextObs] {
		dropped += sizeOfObservation(o)
	}
	for i := range s.Tapes[:v.nextTape] {
		dropped += sizeOfTape(&s.Tapes[i])
	}
	if s.base != nil {
		dropped += s.base.bytes()
	}
	s.Observations = slices.Clone(s.Observations[v.nextObs:])
	if len(s.Taken) > 0 {
		s.Taken = slices.Clone(s.Taken[v.nextObs:])
	}
	s.Tapes = slices.Clone(s.Tapes[v.nextTape:])
	s.base, s.checkpoints = base, nil
	return dropped - base.bytes()
}

// bytes estimates the heap the session holds: its records and its base.
// A Live keeps the sum as records come and go.
func (s *Session) bytes() int64 {
	var n int64
	for _, o := range s.Observations {
		n += sizeOfObservation(o)
	}
	for i := range s.Tapes {
		n += sizeOfTape(&s.Tapes[i])
	}
	if s.base != nil {
		n += s.base.bytes()
	}
	return n
}

// bytes estimates a checkpoint's heap: the keyframes, and the members'
// state (a few hundred bytes a member, its recent messages and notes).
func (cp *checkpoint) bytes() int64 {
	n := int64(4 << 10)
	for _, k := range cp.keyframes {
		n += int64(len(k))
	}
	return n
}

// The estimates below count each record's structs and strings, rounded to
// the allocator's classes by padding each allocation, and its place in the
// session's arrays. BenchmarkLiveBusyHour compares them with the heap
// measured.
const (
	// allocPad is what an allocation costs past its bytes, on average.
	allocPad = 8
	// slotBytes is an observation's place in Observations and Taken.
	slotBytes = int64(unsafe.Sizeof(lab.Observation(nil)) + unsafe.Sizeof(time.Time{}))
)

// strBytes estimates the heap strings hold.
func strBytes(ss ...string) int64 {
	var n int64
	for _, s := range ss {
		if s != "" {
			n += int64(len(s)) + allocPad
		}
	}
	return n
}

// sizeOfObservation estimates the heap an observation holds in a session.
func sizeOfObservation(o lab.Observation) int64 {
	n := slotBytes + allocPad
	switch o := o.(type) {
	case *lab.StatusObservation:
		s := &o.Status
		n += int64(unsafe.Sizeof(*o)) + strBytes(o.Member, s.ID, s.Name, s.ClusterID, s.State, s.Vote, s.Leader, s.ClientURL, s.PeerURL)
		n += strBytes(s.Alarms...) + strBytes(s.AlarmMembers...)
		// A map's entry is its key and value, in buckets about half
		// full, and the map's header.
		if len(s.Progress) > 0 {
			n += 48 + int64(len(s.Progress))*2*int64(unsafe.Sizeof("")+unsafe.Sizeof(etcd.Progress{}))
			for k, p := range s.Progress {
				n += strBytes(k, p.State)
			}
		}
	case *lab.EventObservation:
		e := &o.Event
		n += int64(unsafe.Sizeof(*o)) + strBytes(o.Member, e.Member, e.Kind, e.State, e.Leader, e.Detail)
		if m := e.Msg; m != nil {
			n += int64(unsafe.Sizeof(*m)) + allocPad + strBytes(m.Type, m.From, m.To, m.FromName, m.ToName)
		}
	case *lab.UnreachableObservation:
		n += int64(unsafe.Sizeof(*o)) + strBytes(o.Member) + 64
	default:
		n += 64
	}
	return n
}

// sizeOfTape estimates the heap a tape holds in a session.
func sizeOfTape(t *Tape) int64 {
	return int64(unsafe.Sizeof(*t)) + int64(cap(t.Data)) + allocPad
}
