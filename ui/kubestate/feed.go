package kubestate

import (
	"context"
	"reflect"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"k8s.io/client-go/kubernetes"
)

// coalesce is how long the feed gathers changes after the first one before
// handing them over: a burst (a Deployment scaled to a thousand, a relist
// after a reconnect) reaches the UI as a few redraws, a single change
// within a frame's time. Nothing waits while nothing changes.
const coalesce = 50 * time.Millisecond

// Retry delays while the API server or a kube-proxy does not answer.
const (
	retryInitial = 500 * time.Millisecond
	retryMax     = 10 * time.Second
	probeTimeout = 3 * time.Second
)

// UpdateMsg carries what changed since the feed's last message. The
// Overview folds it into its State with Apply and runs Next to wait for
// the following one.
type UpdateMsg struct {
	feed    *feed
	changes []change
	// last is set on the message that says the feed ended.
	last bool
}

// Next waits for the feed's next message; nil once the feed has ended.
func (m UpdateMsg) Next() tea.Cmd {
	if m.feed == nil || m.last {
		return nil
	}
	return m.feed.wait
}

// Len returns how many objects changed.
func (m UpdateMsg) Len() int { return len(m.changes) }

// change is one object's new projection, or its deletion. value is a Node,
// Pod, Lease, Proxy, ProxyConfig or Connection; for a deletion it carries
// just the name.
type change struct {
	key     string
	value   any
	deleted bool
}

// Apply folds a feed message into the state.
func (s *State) Apply(msg UpdateMsg) {
	for _, c := range msg.changes {
		switch v := c.value.(type) {
		case Node:
			if c.deleted {
				s.DeleteNode(v.Name)
			} else {
				s.SetNode(v)
			}
		case Pod:
			if c.deleted {
				s.DeletePod(v.Key())
			} else {
				s.SetPod(v)
			}
		case Lease:
			if c.deleted {
				s.DeleteLease(v.Name)
			} else {
				s.SetLease(v)
			}
		case Proxy:
			s.SetProxy(v)
		case ProxyConfig:
			// Without the ConfigMap, kube-proxies run their defaults.
			if c.deleted {
				v = ProxyConfig{}
			}
			s.SetProxyConfig(v)
		case Connection:
			s.SetConnection(v)
		}
	}
}

// Keys of the changes that are not objects.
const (
	keyConn   = "conn"
	keyConfig = "config"
)

// feed turns informer callbacks and kube-proxy events into batches of
// changes. Callbacks arrive on many goroutines; mu guards what follows it.
type feed struct {
	ctx context.Context
	// client is the feed's clientset, set before anything runs.
	client kubernetes.Interface
	// wake holds a token while changes are pending.
	wake chan struct{}

	mu sync.Mutex
	// known is the last projection of every object, to drop updates that
	// change nothing shown.
	known   map[string]any
	pending map[string]change
	order   []string
	conn    Connection
	probing bool
	// pokes ask every kube-proxy follower to look again.
	pokes []chan struct{}
}

func newFeed(ctx context.Context) *feed {
	return &feed{ctx: ctx, wake: make(chan struct{}, 1), known: map[string]any{}, pending: map[string]change{}}
}

// put records an object's projection, or its deletion; it is dropped when
// it is what the UI has already.
func (f *feed) put(key string, value any, deleted bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.putLocked(key, value, deleted)
}

func (f *feed) putLocked(key string, value any, deleted bool) {
	old, had := f.known[key]
	switch {
	case deleted && !had:
		return
	case deleted:
		delete(f.known, key)
	case had && reflect.DeepEqual(old, value):
		return
	default:
		f.known[key] = value
	}
	if _, queued := f.pending[key]; !queued {
		f.order = append(f.order, key)
	}
	f.pending[key] = change{key: key, value: value, deleted: deleted}
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// wait is the command that delivers the next batch: it sleeps until a
// change arrives, gathers what follows within coalesce, and returns it
// all. The UI runs it again after each message, so changes wait in
// pending (one entry per object, however often it changed) while the UI
// is busy drawing.
func (f *feed) wait() tea.Msg {
	for {
		select {
		case <-f.wake:
		case <-f.ctx.Done():
			return f.stop()
		}
		t := time.NewTimer(coalesce)
		select {
		case <-t.C:
		case <-f.ctx.Done():
			t.Stop()
			return f.stop()
		}
		if msg, ok := f.take(); ok {
			return msg
		}
	}
}

func (f *feed) take() (UpdateMsg, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.order) == 0 {
		return UpdateMsg{}, false
	}
	msg := UpdateMsg{feed: f, changes: make([]change, 0, len(f.order))}
	for _, k := range f.order {
		msg.changes = append(msg.changes, f.pending[k])
	}
	clear(f.pending)
	f.order = f.order[:0]
	return msg, true
}

// stop hands over what was pending and that the feed ended.
func (f *feed) stop() tea.Msg {
	msg, _ := f.take()
	f.mu.Lock()
	c := f.conn
	f.mu.Unlock()
	c.Stopped, c.Connected = true, false
	msg.feed = f
	msg.changes = append(msg.changes, change{key: keyConn, value: c})
	msg.last = true
	return msg
}

// setConn changes the connection's state.
func (f *feed) setConn(fn func(c *Connection)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.conn)
	f.putLocked(keyConn, f.conn, false)
}
