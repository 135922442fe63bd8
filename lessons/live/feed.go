package live

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

// maxPending bounds the observations a Feed holds for a reader that does
// not keep up. Beyond it the Feed stops taking from its sources, which
// then wait in turn; the Observer's members drop raft events for a reader
// that lags that far rather than slow raft down.
const maxPending = 8192

// syncWait bounds Refresh's wait for the initial lists of the objects
// Follow watches.
const syncWait = 10 * time.Second

// Retry delays of a source whose server does not answer (an etcd key read
// while the cluster has no quorum, say).
const (
	retryMin = 200 * time.Millisecond
	retryMax = 2 * time.Second
)

// FeedOptions tunes a Feed.
type FeedOptions struct {
	// NoMembers leaves the etcd members out: the TUI runs an Observer of
	// its own for its views and feeds its observations through Convert.
	NoMembers bool
	// Logger receives what the sources report going wrong (a watch that
	// failed and is retried); nil discards it.
	Logger *slog.Logger
}

// Feed is every source of observations about one cluster, merged: the
// Observer of its etcd members, informers on its nodes and pods, and
// watches of the etcd keys set with SetKeys. Start it with StartFeed, read
// Observations, and Close it.
type Feed struct {
	info   *lab.Info
	logger *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	noMembers bool
	// hc reads the members' status for Refresh; its connections are
	// closed with the Feed.
	hc *http.Client

	// mu guards closing against goroutines started after Close began.
	mu      sync.Mutex
	closing bool

	in     chan item
	out    chan []lessons.Observation
	synced chan struct{}

	keys keyWatches
	// kube are the object and Event watches Follow starts; following
	// names the other sources it started.
	kube      kubeWatches
	following map[string]bool

	closeOnce sync.Once
}

// item is what a source hands the Feed: observations, and, once, word
// that its initial state is all in (ready names the source). An item with
// a barrier has the barrier closed once it has been read.
type item struct {
	obs     []lessons.Observation
	ready   string
	barrier chan struct{}
}

// Names of the sources whose initial state Synced waits for.
const (
	sourceNodes  = "nodes"
	sourcePods   = "pods"
	sourceMember = "member/"
)

// StartFeed starts following the cluster described by info (as
// cluster.json describes it) until Close or the end of ctx.
func StartFeed(ctx context.Context, info *lab.Info, opts FeedOptions) *Feed {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &Feed{
		info:      info,
		logger:    logger,
		ctx:       ctx,
		cancel:    cancel,
		in:        make(chan item),
		out:       make(chan []lessons.Observation),
		synced:    make(chan struct{}),
		noMembers: opts.NoMembers,
		hc:        &http.Client{Timeout: time.Second, Transport: &http.Transport{}},
		following: map[string]bool{},
	}
	f.keys.init(f)
	waiting := map[string]bool{sourceNodes: true, sourcePods: true}
	if !opts.NoMembers {
		for _, m := range info.Members {
			waiting[sourceMember+m.Name] = true
		}
		f.followMembers()
	}
	f.followKube()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.pump(waiting)
	}()
	return f
}

// Observations returns the stream of observations, in batches: all that
// arrived while the reader was busy with the previous batch. It is closed
// when the Feed is closed.
func (f *Feed) Observations() <-chan []lessons.Observation { return f.out }

// Synced is closed once every source has reported its initial state (each
// member's first status, the initial lists of nodes and pods) and the
// batches holding it have been read from Observations. A reader that
// judges a check should wait for it first, so that "the leader when the
// step began" is the real one and not just the first one heard of.
func (f *Feed) Synced() <-chan struct{} { return f.synced }

// Close stops every source and waits for them to end. The Observations
// channel is closed. It is safe to call more than once.
func (f *Feed) Close() {
	f.closeOnce.Do(func() {
		f.mu.Lock()
		f.closing = true
		f.mu.Unlock()
		f.cancel()
		f.wg.Wait()
		f.keys.close()
		// The status reads ended with the goroutines that made them; the
		// API server's connections were closed with the informers.
		f.hc.CloseIdleConnections()
	})
}

// send hands a source's item to the pump; false once the Feed is closing.
func (f *Feed) send(it item) bool {
	select {
	case f.in <- it:
		return true
	case <-f.ctx.Done():
		return false
	}
}

// pump gathers what the sources send and hands it to the reader, all that
// gathered at once. waiting holds the sources whose initial state has not
// arrived yet.
func (f *Feed) pump(waiting map[string]bool) {
	defer close(f.out)
	var (
		pending []lessons.Observation
		// barriers are closed once what came before them has been read.
		barriers []chan struct{}
	)
	// allIn is set once every source is ready; synced is closed when
	// what they sent before that has been read too.
	allIn, syncedClosed := len(waiting) == 0, false
	for {
		if len(pending) == 0 {
			if allIn && !syncedClosed {
				close(f.synced)
				syncedClosed = true
			}
			for _, b := range barriers {
				close(b)
			}
			barriers = nil
		}
		in := f.in
		if len(pending) >= maxPending {
			in = nil
		}
		var out chan []lessons.Observation
		if len(pending) > 0 {
			out = f.out
		}
		select {
		case it := <-in:
			pending = append(pending, it.obs...)
			if it.ready != "" {
				delete(waiting, it.ready)
				allIn = len(waiting) == 0
			}
			if it.barrier != nil {
				barriers = append(barriers, it.barrier)
			}
		case out <- pending:
			pending = nil
		case <-f.ctx.Done():
			return
		}
	}
}

// followMembers runs an Observer of the etcd members and converts what it
// sees.
func (f *Feed) followMembers() {
	o := lab.NewObserver(f.info.Members, lab.ObserverOptions{})
	f.wg.Add(2)
	go func() {
		defer f.wg.Done()
		o.Run(f.ctx)
	}()
	go func() {
		defer f.wg.Done()
		seen := map[string]bool{}
		for obs := range o.Observations() {
			it := item{obs: Convert(obs, f.info.Members)}
			switch obs.(type) {
			case *lab.StatusObservation, *lab.UnreachableObservation:
				if m := obs.Header().Member; !seen[m] {
					seen[m] = true
					it.ready = sourceMember + m
				}
			}
			if len(it.obs) == 0 && it.ready == "" {
				continue
			}
			if !f.send(it) {
				return
			}
		}
	}()
}

// Refresh reads every member's status (and every kube-proxy's, when
// followed) now and hands it on, after everything the Feed took in
// before, once the objects Follow watches have their initial lists in. The channel it returns is closed
// once that has been read from Observations, so that a reader knows its
// picture of the members is current (a step begins on it). Without the
// members (NoMembers) it is a plain barrier. It is closed at once if
// the Feed is closing; a reader waiting on it while the Feed closes sees
// Observations close instead.
func (f *Feed) Refresh() <-chan struct{} {
	done := make(chan struct{})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		close(done)
		return done
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		// The objects Follow watches are current once their initial
		// lists are in (an API server that does not answer is not
		// waited for long); the members and kube-proxies are read
		// afresh.
		sctx, cancel := context.WithTimeout(f.ctx, syncWait)
		f.kube.waitSynced(sctx)
		cancel()
		it := item{barrier: done}
		if !f.noMembers {
			it.obs = f.readStatuses()
		}
		f.mu.Lock()
		proxies := f.following[followProxies]
		f.mu.Unlock()
		if proxies {
			it.obs = append(it.obs, f.readProxies()...)
		}
		if !f.send(it) {
			close(done)
		}
	}()
	return done
}

// readStatuses asks every member for its status at once.
func (f *Feed) readStatuses() []lessons.Observation {
	answers := make([][]lessons.Observation, len(f.info.Members))
	var wg sync.WaitGroup
	for i, m := range f.info.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := lab.FetchStatus(f.ctx, m.HTTPClient(time.Second), m.DebugURL)
			if err != nil {
				answers[i] = []lessons.Observation{lessons.MemberObserved{Member: m.Name, State: lessons.MemberUnreachable}}
				return
			}
			answers[i] = convertStatus(m.Name, st, f.info.Members)
		}()
	}
	wg.Wait()
	var out []lessons.Observation
	for _, a := range answers {
		out = append(out, a...)
	}
	return out
}

// SetKeys sets the etcd keys to watch: each one's current value is
// reported at once, then every change. Keys no longer in the list stop
// being watched (a reader keeps their last value, so watch a key for as
// long as a check may read it).
func (f *Feed) SetKeys(keys []string) { f.keys.set(keys) }

// sleep waits d, or less if ctx ends; it reports whether ctx is still on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
