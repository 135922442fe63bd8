package lab

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
)

// The Observer is how the TUI and lesson checks see the cluster: it
// follows every etcd member's event stream (/debug/klab/events) and status
// (/debug/klab/status) over HTTP, as any other process could, and merges
// what they report into one ordered stream of typed observations.
//
// The pacing of a screen lives here, not in the members: they serve what
// any client of an event stream may ask for (a flush interval for routine
// traffic, a status line ending each flush; see package eventstream), and
// the Observer asks for them on its beat (RoutineBeat, or CalmBeat for a
// calm screen), folds a steady cluster's heartbeats (observerstream.go),
// and reads statuses on the same beat.
//
// Each flush of a member's stream ends with its status, so that a steady
// member is not asked for it at all; a member's status is fetched again
// when the member reports an event that changes it (eventTier), so the
// picture follows raft as it happens without a busy poll. A slower
// fallback poll notices members that died (a dead member sends no
// events); a follower that stops hearing heartbeats is read once per
// tick, so that its election timer can be drawn as it fills. A steady
// cluster's heartbeats change nothing in a status but the followers'
// timers, which they reset, so an idle cluster is read about once a
// second. A member that stops and starts again is followed on its new
// process without losing the events it reported while nobody was
// listening, as far as its event ring still holds them.

// Observer timings.
const (
	// refreshGap is the shortest time between two status fetches of one
	// member: about one raft tick at etcd's default 100 ms, so a busy
	// member is read once per tick, not once per message.
	refreshGap = 100 * time.Millisecond
	// replicationGap is the shortest time between two status fetches
	// that replication asks for: the indexes move with every write, and
	// a screen shows them a few times a second.
	replicationGap = 250 * time.Millisecond
	// maxPollInterval is the fallback poll of a member that reports no
	// events: how soon a dead or frozen member is noticed.
	maxPollInterval = time.Second
	// reconnectMin and reconnectMax bound the wait before reconnecting to
	// a member's event stream, doubling in between.
	reconnectMin = 100 * time.Millisecond
	reconnectMax = time.Second
	// RoutineBeat is the beat on which a steady cluster's traffic is
	// reported: the Observer reads the members' streams with it as their
	// flush interval (?quiet=), so that their heartbeats, read-index
	// rounds and replication (etcd.Event.Routine) come on its multiples
	// since the zero time, all members at once, and reach the Observer
	// and the TUI in one wake-up. Anything else comes within 50 ms.
	RoutineBeat = 250 * time.Millisecond
	// CalmBeat is the beat of a calm reader, one that draws a steady
	// cluster's traffic once a second (Observer.SetBeat).
	CalmBeat = time.Second
	// lookAfterBeat is how long after a beat a follower's heartbeats
	// are looked for: the streams' reads land within a few milliseconds.
	lookAfterBeat = 50 * time.Millisecond
	// observationBuffer is how many observations wait for a slow reader
	// before the readers of the event streams block; a member's event
	// hub then drops events for this subscriber rather than slow raft,
	// and the Observer reports the gap.
	observationBuffer = 4096
)

// Observation is one thing the Observer saw. It is one of
// *StatusObservation, *UnreachableObservation, *EventObservation and
// *GapObservation.
type Observation interface {
	// Header returns what every observation carries.
	Header() Observed
}

// Observed is what every observation carries.
type Observed struct {
	// Seq numbers observations in the order the Observer emitted them,
	// from 1.
	Seq uint64
	// Member names the member the observation is about.
	Member string
	// At is when the Observer received it.
	At time.Time
}

// Header returns o itself; embedding Observed makes a type an Observation.
func (o Observed) Header() Observed { return o }

// Routine reports whether o is a steady cluster's traffic: a heartbeat, a
// read-index round or replication, sent or stepped (etcd.Event.Routine),
// or the status of a leader or of a follower whose heartbeats keep its
// election timer from filling. A timer that fills, a candidate, a member
// without a leader, an election, a lost message are news: the Observer
// signals them on News.
func Routine(o Observation) bool {
	switch o := o.(type) {
	case *StatusObservation:
		st := o.Status
		switch st.State {
		case "StateLeader":
			return true
		case "StateFollower":
			return st.Leader != "" && st.Leader != "0" && st.ElectionElapsed <= max(st.HeartbeatTicks, 1)
		}
		return false
	case *EventObservation:
		return o.Event.Routine()
	}
	return false
}

// StatusObservation is a member's answer to GET /debug/klab/status.
type StatusObservation struct {
	Observed
	Status etcd.Status
}

// UnreachableObservation says that a member stopped answering: it is
// emitted once when its status cannot be read, and again only after it has
// answered in between.
type UnreachableObservation struct {
	Observed
	Err error
}

// EventObservation is one event from a member's raft event stream.
type EventObservation struct {
	Observed
	Event etcd.Event
}

// GapObservation says that events of a member were lost before the
// Observer read them: the member's event hub drops events for a reader that
// falls behind, and its ring holds only the latest ones for a reader that
// reconnects late.
type GapObservation struct {
	Observed
	Lost uint64
}

// ObserverOptions tunes an Observer.
type ObserverOptions struct {
	// Replay delivers the events each member still holds from before the
	// Observer started; without it, only events from then on are
	// delivered.
	Replay bool
}

// Observer follows the members of one cluster. Create it with NewObserver,
// run it with Run, and read Observations until the channel closes.
type Observer struct {
	members []MemberInfo
	opts    ObserverOptions
	out     chan Observation
	news    chan struct{}

	// emitMu keeps Seq in the order observations enter the channel.
	emitMu sync.Mutex
	seq    uint64

	refresh map[string]chan struct{}
	// replicated says, per member, that replication moved its indexes;
	// replicating is set from the first such event until the next read,
	// so that a burst of them wakes the poller once.
	replicated  map[string]chan struct{}
	replicating map[string]*atomic.Bool
	// heard holds, per member, when (UnixNano) it last stepped a message
	// from a leader: a heartbeat or an append.
	heard map[string]*atomic.Int64
	// streamed hands the poller, per member, the latest status its stream
	// ended a flush with: a status it need not read.
	streamed map[string]chan etcd.Status
	// reads counts the statuses read over HTTP (for tests).
	reads atomic.Int64

	// beat is the RoutineBeat or CalmBeat (SetBeat); streamMu guards
	// restreams, which ends each member's current stream when it changes.
	beat      atomic.Int64
	streamMu  sync.Mutex
	restreams map[string]context.CancelFunc
}

// NewObserver returns an Observer of the given members (as cluster.json
// lists them).
func NewObserver(members []MemberInfo, opts ObserverOptions) *Observer {
	o := &Observer{
		members: append([]MemberInfo(nil), members...),
		opts:    opts,
		out:     make(chan Observation, observationBuffer),
		news:    make(chan struct{}, 1),
		refresh: map[string]chan struct{}{},
	}
	o.heard = map[string]*atomic.Int64{}
	o.beat.Store(int64(RoutineBeat))
	o.restreams = map[string]context.CancelFunc{}
	o.replicated = map[string]chan struct{}{}
	o.replicating = map[string]*atomic.Bool{}
	o.streamed = map[string]chan etcd.Status{}
	for _, m := range members {
		o.streamed[m.Name] = make(chan etcd.Status, 1)
		o.refresh[m.Name] = make(chan struct{}, 1)
		o.replicated[m.Name] = make(chan struct{}, 1)
		o.replicating[m.Name] = new(atomic.Bool)
		o.heard[m.Name] = new(atomic.Int64)
	}
	return o
}

// Observations returns the stream of observations. It is closed when Run
// returns.
func (o *Observer) Observations() <-chan Observation { return o.out }

// News is signalled after an observation that is not Routine entered the
// Observations channel, so that a reader gathering routine traffic until
// the next RoutineBeat can draw news at once without waking for each
// observation. A signal may stand for news already read.
func (o *Observer) News() <-chan struct{} { return o.news }

// SetBeat sets the beat on which members send a steady cluster's traffic
// and steady members are read: RoutineBeat, or CalmBeat for a reader that
// draws it once a second. The streams are opened again with it.
func (o *Observer) SetBeat(beat time.Duration) {
	if time.Duration(o.beat.Swap(int64(beat))) == beat {
		return
	}
	o.streamMu.Lock()
	defer o.streamMu.Unlock()
	for _, cancel := range o.restreams {
		cancel()
	}
}

// Beat returns the beat SetBeat set.
func (o *Observer) Beat() time.Duration { return time.Duration(o.beat.Load()) }

// Members returns the members observed, in cluster.json's order.
func (o *Observer) Members() []MemberInfo { return append([]MemberInfo(nil), o.members...) }

// Refresh asks for the named member's status now (after a chaos operation,
// say) instead of at its next event or poll. Unknown names are ignored.
func (o *Observer) Refresh(member string) {
	if c, ok := o.refresh[member]; ok {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// RefreshAll asks for every member's status now.
func (o *Observer) RefreshAll() {
	for _, m := range o.members {
		o.Refresh(m.Name)
	}
}

// Run follows the members until ctx ends, then closes the observation
// channel. It returns ctx's error.
func (o *Observer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, m := range o.members {
		wg.Add(2)
		go func() {
			defer wg.Done()
			o.pollStatus(ctx, m)
		}()
		go func() {
			defer wg.Done()
			o.followEvents(ctx, m)
		}()
	}
	wg.Wait()
	close(o.out)
	return ctx.Err()
}

// emit numbers an observation built by build and hands it to the reader,
// waiting while the buffer is full. It reports false when ctx ended
// before there was room; the number is then not used, so that Seq has no
// gap for an observation never delivered.
func (o *Observer) emit(ctx context.Context, member string, build func(Observed) Observation) bool {
	o.emitMu.Lock()
	defer o.emitMu.Unlock()
	obs := build(Observed{Seq: o.seq + 1, Member: member, At: time.Now()})
	// Room in the buffer wins over an ended ctx: a select of both ready
	// picks either.
	select {
	case o.out <- obs:
	default:
		select {
		case o.out <- obs:
		case <-ctx.Done():
			return false
		}
	}
	o.seq++
	if !Routine(obs) {
		select {
		case o.news <- struct{}{}:
		default:
		}
	}
	return true
}

// pollStatus reads a member's status when asked (its events, Refresh),
// on the beat after replication moved its indexes, and whenever nextLook
// says. It sleeps on one timer: a steady member costs a wake-up or two a
// second.
func (o *Observer) pollStatus(ctx context.Context, m MemberInfo) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	due := time.Now()
	reachable := true
	var last etcd.Status
	var fetched time.Time
	wanted := false // a read is wanted at due, whatever nextLook says
	want := func(at time.Time) {
		wanted = true
		if at.Before(due) {
			due = at
			timer.Reset(max(time.Until(due), 0))
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.refresh[m.Name]:
			// A burst of requests is read once: not within refreshGap
			// of the last read.
			if at := fetched.Add(refreshGap); time.Now().Before(at) {
				want(at)
				continue
			}
		case <-o.replicated[m.Name]:
			want(onBeat(fetched.Add(replicationGap), o.Beat()))
			continue
		case st := <-o.streamed[m.Name]:
			// The stream's flush brought the status after what the
			// batch did: it stands for a read, and for the reads that
			// the batch's replication asked for.
			o.replicating[m.Name].Store(false)
			fetched, wanted, reachable, last = time.Now(), false, true, st
			o.emit(ctx, m.Name, func(h Observed) Observation { return &StatusObservation{Observed: h, Status: st} })
			due = nextLook(reachable, last, time.Unix(0, o.heard[m.Name].Load()), fetched, fetched, o.Beat())
			timer.Reset(time.Until(due))
			continue
		case now := <-timer.C:
			// The look may find a steady follower whose heartbeats
			// moved its deadline on: look again then.
			if next := nextLook(reachable, last, time.Unix(0, o.heard[m.Name].Load()), fetched, now, o.Beat()); !wanted && next.After(now) {
				due = next
				timer.Reset(time.Until(due))
				continue
			}
		}
		o.replicating[m.Name].Store(false)
		o.reads.Add(1)
		st, err := FetchStatus(ctx, m.HTTPClient(statusTimeout), m.DebugURL)
		fetched, wanted = time.Now(), false
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && reachable:
			reachable = false
			o.emit(ctx, m.Name, func(h Observed) Observation { return &UnreachableObservation{Observed: h, Err: err} })
		case err == nil:
			reachable, last = true, st
			o.emit(ctx, m.Name, func(h Observed) Observation { return &StatusObservation{Observed: h, Status: st} })
		}
		due = nextLook(reachable, last, time.Unix(0, o.heard[m.Name].Load()), fetched, fetched, o.Beat())
		timer.Reset(time.Until(due))
	}
}

// nextLook returns when to read a member next, its status last read as st
// at fetched, looking at now. A dead member, or one whose clock is paused,
// changes nothing worth more than the slowest poll. A leader is read once
// per maxPollInterval: what changes in it comes with events. A follower in
// a steady state (steady) is read as seldom, and looked at again when its
// heartbeats would be overdue. These reads and looks fall on the
// RoutineBeat, with the streams' routine traffic. Any other member is read
// once per raft tick, so that its election timer can be drawn as it fills.
func nextLook(reachable bool, st etcd.Status, heard, fetched, now time.Time, beat time.Duration) time.Time {
	if !reachable || st.Clock.Paused || st.Clock.TickIntervalMS <= 0 {
		return fetched.Add(maxPollInterval)
	}
	tick := min(max(time.Duration(st.Clock.TickIntervalMS*float64(time.Millisecond)), refreshGap), maxPollInterval)
	switch {
	case st.State == "StateLeader":
		return onBeat(fetched.Add(maxPollInterval), beat)
	case steady(st, heard, now, beat):
		poll := onBeat(fetched.Add(maxPollInterval), beat)
		if !now.Before(poll) {
			return now
		}
		// Looked at just after the beat that brings its heartbeats.
		overdue := onBeat(heard.Add(beatWindow(st, beat)), beat).Add(lookAfterBeat)
		return earlier(poll, later(overdue, now.Add(tick)))
	}
	return later(fetched.Add(tick), now)
}

// onBeat returns t, or the first multiple of beat after it.
func onBeat(t time.Time, beat time.Duration) time.Time {
	b := t.Truncate(beat)
	if b.Before(t) {
		b = b.Add(beat)
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// beatWindow is how long a follower of a live leader goes at most without
// the Observer hearing that it heard from it: two heartbeat intervals, the
// beat its stream holds them for, and a little.
func beatWindow(st etcd.Status, beat time.Duration) time.Duration {
	tick := time.Duration(st.Clock.TickIntervalMS * float64(time.Millisecond))
	return 2*time.Duration(max(st.HeartbeatTicks, 1))*tick + beat + refreshGap
}

// steady reports whether a follower, last read as st, is in a steady
// state at now: it follows a known leader and heard from it within
// beatWindow, so its election timer is kept from filling.
func steady(st etcd.Status, heard, now time.Time, beat time.Duration) bool {
	if st.State != "StateFollower" || st.Leader == "" || st.Leader == "0" || st.Clock.TickIntervalMS <= 0 {
		return false
	}
	return now.Sub(heard) <= beatWindow(st, beat)
}
