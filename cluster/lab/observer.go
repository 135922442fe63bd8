package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
)

// The Observer is how the TUI (and, later, lesson checks) sees the cluster:
// it follows every etcd member's event stream (/debug/klab/events) and
// status (/debug/klab/status) over HTTP, as any other process could, and
// merges what they report into one ordered stream of typed observations.
//
// A member's status is fetched again whenever the member reports an event,
// at most once per refreshGap, so the picture follows raft as it happens
// without a busy poll; a slower fallback poll notices members that died
// (a dead member sends no events) and follows the election timer of a
// member that hears nothing. A member that stops and starts again is
// followed on its new process without losing the events it reported while
// nobody was listening, as far as its event ring still holds them.

// Observer timings.
const (
	// refreshGap is the shortest time between two status fetches of one
	// member: about one raft tick at etcd's default 100 ms, so a busy
	// member is read once per tick, not once per message.
	refreshGap = 100 * time.Millisecond
	// maxPollInterval is the fallback poll of a member that reports no
	// events: how soon a dead or frozen member is noticed.
	maxPollInterval = time.Second
	// reconnectMin and reconnectMax bound the wait before reconnecting to
	// a member's event stream, doubling in between.
	reconnectMin = 100 * time.Millisecond
	reconnectMax = time.Second
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
	hc      *http.Client

	// emitMu keeps Seq in the order observations enter the channel.
	emitMu sync.Mutex
	seq    uint64

	refresh map[string]chan struct{}
}

// NewObserver returns an Observer of the given members (as cluster.json
// lists them).
func NewObserver(members []MemberInfo, opts ObserverOptions) *Observer {
	o := &Observer{
		members: append([]MemberInfo(nil), members...),
		opts:    opts,
		out:     make(chan Observation, observationBuffer),
		refresh: map[string]chan struct{}{},
		// The event stream is long-lived: no overall timeout, only one
		// on connecting, so that a dead member is noticed quickly.
		hc: &http.Client{Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: time.Second}).DialContext,
			ResponseHeaderTimeout: 2 * time.Second,
		}},
	}
	for _, m := range members {
		o.refresh[m.Name] = make(chan struct{}, 1)
	}
	return o
}

// Observations returns the stream of observations. It is closed when Run
// returns.
func (o *Observer) Observations() <-chan Observation { return o.out }

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
	o.hc.CloseIdleConnections()
	close(o.out)
	return ctx.Err()
}

// emit numbers an observation built by build and hands it to the reader,
// waiting while the buffer is full. It reports false when ctx ended first.
func (o *Observer) emit(ctx context.Context, member string, build func(Observed) Observation) bool {
	o.emitMu.Lock()
	defer o.emitMu.Unlock()
	o.seq++
	obs := build(Observed{Seq: o.seq, Member: member, At: time.Now()})
	select {
	case o.out <- obs:
		return true
	case <-ctx.Done():
		return false
	}
}

// pollStatus reads a member's status when asked (its events, Refresh) and
// at least every pollInterval.
func (o *Observer) pollStatus(ctx context.Context, m MemberInfo) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	reachable := true
	var last etcd.Status
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.refresh[m.Name]:
		case <-timer.C:
		}
		st, err := FetchStatus(ctx, statusClient, m.DebugURL)
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
		timer.Reset(pollInterval(reachable, last))
		// Coalesce a burst of refresh requests into the next fetch.
		select {
		case <-ctx.Done():
			return
		case <-time.After(refreshGap):
		}
	}
}

// pollInterval is how long to wait for a member that reports nothing. A
// running member is read about once per raft tick, so that its election
// timer can be drawn as it fills; a paused clock or a dead member changes
// nothing worth more than the slowest poll.
func pollInterval(reachable bool, st etcd.Status) time.Duration {
	if !reachable || st.Clock.Paused || st.Clock.TickIntervalMS <= 0 {
		return maxPollInterval
	}
	d := time.Duration(st.Clock.TickIntervalMS * float64(time.Millisecond))
	return min(max(d, refreshGap), maxPollInterval)
}

// eventCursor remembers where a member's event stream was left, so that a
// reconnect delivers what was missed and nothing twice. A member that was
// restarted numbers its events from 1 again; its events are told from old
// ones by their time, since the new process started after the old one's
// last event.
type eventCursor struct {
	seq  uint64    // last delivered event's Seq; MaxUint64 before the first
	time time.Time // last delivered event's time, or when observing began
}

// accept reports whether e is new, and how many events were lost before it.
func (c *eventCursor) accept(e etcd.Event) (ok bool, lost uint64) {
	switch {
	case c.seq != math.MaxUint64 && e.Seq > c.seq:
		lost = e.Seq - c.seq - 1
	case e.Time.After(c.time):
		// A new process (or the first event seen): events before this
		// one that the ring no longer holds are lost, unless this is the
		// first event of all.
		if c.seq != math.MaxUint64 && e.Seq > 1 {
			lost = e.Seq - 1
		}
	default:
		return false, 0
	}
	c.seq, c.time = e.Seq, e.Time
	return true, lost
}

// followEvents reads a member's event stream, reconnecting whenever it
// ends, until ctx ends.
func (o *Observer) followEvents(ctx context.Context, m MemberInfo) {
	cur := eventCursor{seq: math.MaxUint64, time: time.Now()}
	if o.opts.Replay {
		cur = eventCursor{}
	}
	wait := reconnectMin
	for ctx.Err() == nil {
		got, _ := o.readEvents(ctx, m, &cur)
		if ctx.Err() != nil {
			return
		}
		// The stream ended: the member stopped, or never answered. Its
		// status says which; read it now rather than at the next poll.
		o.Refresh(m.Name)
		if got {
			wait = reconnectMin
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, reconnectMax)
	}
}

// readEvents reads one connection of a member's event stream. got reports
// whether the connection delivered anything.
func (o *Observer) readEvents(ctx context.Context, m MemberInfo, cur *eventCursor) (got bool, err error) {
	// The whole retained ring is asked for: the cursor drops what was
	// already delivered, and keeps what a restarted member reported
	// before the stream reconnected.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.DebugURL+"/events?since=0", nil)
	if err != nil {
		return false, err
	}
	resp, err := o.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var e etcd.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return got, fmt.Errorf("GET %s: decode event: %w", req.URL, err)
		}
		ok, lost := cur.accept(e)
		if !ok {
			continue
		}
		got = true
		if lost > 0 {
			o.emit(ctx, m.Name, func(h Observed) Observation { return &GapObservation{Observed: h, Lost: lost} })
		}
		if !o.emit(ctx, m.Name, func(h Observed) Observation { return &EventObservation{Observed: h, Event: e} }) {
			return got, ctx.Err()
		}
		o.Refresh(m.Name)
	}
	return got, sc.Err()
}
