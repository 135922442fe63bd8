package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// How the Observer reads a member's event stream: at its beat (?quiet=,
// the stream's flush interval), each flush ending with the member's status
// (?status=flush), and a pair's heartbeats of a flush as one, counted in
// its Beats (?series=true). A steady cluster's stream is mostly
// heartbeats, which the Raft view only counts. Each is also reported
// twice, by its sender and by the member that steps it: the Observer
// delivers it once, from its sender, and keeps the stepped ones only to
// know when a follower last heard from its leader.

// eventTier says what an event asks of its member's status. A heartbeat
// or a read-index round changes nothing a status shows but a follower's
// election timer (which the UI resets on it); replication moves the
// indexes, read again within replicationGap; anything else (a vote, a role
// change, a rejection, a lost message) is read at once.
func eventTier(e etcd.Event) int {
	switch {
	case e.Heartbeat() || e.ReadIndex():
		return tierNone
	case e.Replication():
		return tierSoon
	}
	return tierNow
}

const (
	tierNone = iota
	tierSoon
	tierNow
)

// eventCursor remembers where a member's event stream was left, so that a
// reconnect delivers what was missed and nothing twice. A member that was
// restarted numbers its events from 1 again; its events are told from old
// ones by their time, since the new process started after the old one's
// last event.
type eventCursor struct {
	seq  uint64    // last delivered event's Seq; MaxUint64 before the first
	time time.Time // last delivered event's time, or when observing began
}

// errRestream ends a stream that SetBeat asks to open again.
var errRestream = errors.New("the stream is opened again at a new beat")

// accept reports whether e is new, and how many events were lost before it.
func (c *eventCursor) accept(e etcd.Event) (ok bool, lost uint64) {
	switch {
	case c.seq != math.MaxUint64 && e.Seq > c.seq:
		// Events the stream wrote as part of a series are not lost.
		lost = e.Seq - c.seq - 1 - min(e.Skipped, e.Seq-c.seq-1)
	case e.Time.After(c.time):
		// A new process (or the first event seen): events before this
		// one that the ring no longer holds are lost, unless this is the
		// first event of all.
		if c.seq != math.MaxUint64 && e.Seq > 1 {
			lost = e.Seq - 1 - min(e.Skipped, e.Seq-1)
		}
	default:
		return false, 0
	}
	c.seq, c.time = e.Seq, e.Time
	return true, lost
}

// stepped reports whether e is a heartbeat, or an answer, that its member
// stepped: its sender reported it too.
func stepped(e etcd.Event) bool { return e.Heartbeat() && e.Kind == etcd.EventRecv }

// handStatus gives the poller the status a stream's flush ended with,
// in place of one it has not taken yet.
func (o *Observer) handStatus(member string, st etcd.Status) {
	c := o.streamed[member]
	for {
		select {
		case c <- st:
			return
		default:
		}
		select {
		case <-c:
		default:
		}
	}
}

// followEvents reads a member's event stream, reconnecting whenever it
// ends, until ctx ends.
func (o *Observer) followEvents(ctx context.Context, m MemberInfo) {
	cur := eventCursor{seq: math.MaxUint64, time: time.Now()}
	if o.opts.Replay {
		cur = eventCursor{}
	}
	wait := reconnectMin
	since := uint64(0)
	for ctx.Err() == nil {
		got, err := o.readEvents(ctx, m, &cur, since)
		since = 0
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errRestream) {
			// The same process, read again at the new beat from where
			// its stream was left.
			if cur.seq != math.MaxUint64 {
				since = cur.seq
			}
			continue
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

// streamLine is one line of a member's stream: an event, or the status
// line that ends a flush.
type streamLine struct {
	etcd.Event
	Status *etcd.Status `json:"status,omitempty"`
}

// readEvents reads one connection of a member's event stream, from the
// events after since. got reports whether the connection delivered
// anything.
func (o *Observer) readEvents(ctx context.Context, m MemberInfo, cur *eventCursor, since uint64) (got bool, err error) {
	// SetBeat ends the stream, to open it again at the new beat.
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	o.streamMu.Lock()
	o.restreams[m.Name] = cancel
	beat := o.Beat()
	o.streamMu.Unlock()
	defer func() {
		if parent.Err() == nil && ctx.Err() != nil {
			err = errRestream
		}
		cancel()
	}()
	// On a reconnect the whole retained ring is asked for (since 0): the
	// cursor drops what was already delivered, and keeps what a restarted
	// member reported before the stream reconnected.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		fmt.Sprintf("%s/events?since=%d&quiet=%s&status=flush&series=true", m.DebugURL, since, beat), nil)
	if err != nil {
		return false, err
	}
	// The members' shared transport: no overall timeout (the stream is
	// long-lived), only its dial and response-header ones, so that a dead
	// member is noticed quickly.
	resp, err := m.HTTPClient(0).Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	// What was read is delivered even when SetBeat ends the stream
	// meanwhile: the cursor has moved past it. Only the Observer's own
	// end stops it.
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line streamLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return got, fmt.Errorf("GET %s: decode event: %w", req.URL, err)
		}
		if line.Kind == eventstream.StatusKind {
			if line.Status != nil {
				o.handStatus(m.Name, *line.Status)
			}
			continue
		}
		e := line.Event
		ok, lost := cur.accept(e)
		if !ok {
			continue
		}
		got = true
		if e.HeardLeader() {
			o.heard[m.Name].Store(e.Time.UnixNano())
		}
		if lost > 0 && !o.emit(parent, m.Name, func(h Observed) Observation { return &GapObservation{Observed: h, Lost: lost} }) {
			return got, parent.Err()
		}
		if stepped(e) {
			continue
		}
		if !o.emit(parent, m.Name, func(h Observed) Observation { return &EventObservation{Observed: h, Event: e} }) {
			return got, parent.Err()
		}
		switch eventTier(e) {
		case tierNow:
			o.Refresh(m.Name)
		case tierSoon:
			if !o.replicating[m.Name].Swap(true) {
				select {
				case o.replicated[m.Name] <- struct{}{}:
				default:
				}
			}
		}
	}
	return got, sc.Err()
}
