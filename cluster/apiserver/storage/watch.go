package storage

import (
	"context"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// DefaultBookmarkInterval is how often a watch that allows bookmarks gets
// one while nothing else happens; upstream's watch cache sends them about
// once a minute.
const DefaultBookmarkInterval = time.Minute

// WatchOptions selects what a watch delivers and from where.
type WatchOptions struct {
	Predicate *Predicate
	// ResourceVersion and SendInitialEvents follow upstream's rules: with
	// SendInitialEvents unset, "" and "0" start with a synthetic ADDED
	// event per existing object and a number N starts after revision N;
	// with SendInitialEvents true the initial events end with a bookmark
	// annotated k8s.io/initial-events-end (the watch-list protocol
	// client-go's reflectors use). "" reads etcd's current state; "0"
	// accepts the cache's; N with initial events, any state at N or later.
	ResourceVersion   string
	SendInitialEvents *bool
	// AllowBookmarks asks for BOOKMARK events carrying the latest revision.
	AllowBookmarks   bool
	BookmarkInterval time.Duration
}

// Watch starts a watch on res in namespace ("" for all). The objects it
// delivers may be shared with other watches: they must not be changed.
func (s *Store) Watch(ctx context.Context, res *registry.Resource, namespace string, opts WatchOptions) (watch.Interface, error) {
	if opts.Predicate == nil {
		pred, err := NewPredicate(res, nil, nil)
		if err != nil {
			return nil, err
		}
		opts.Predicate = pred
	}
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = DefaultBookmarkInterval
	}
	initial := opts.ResourceVersion == "" || opts.ResourceVersion == "0"
	if opts.SendInitialEvents != nil {
		initial = *opts.SendInitialEvents
		if initial && !opts.AllowBookmarks {
			return nil, apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless allowWatchBookmarks=true")
		}
	}
	var rev int64
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		parsed, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
		if err != nil || parsed < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %s", opts.ResourceVersion))
		}
		rev = parsed
	}
	// Without initial events, a watch at N resumes after N.
	var resumeRev int64
	if !initial {
		resumeRev = rev
	}
	c := s.cacherFor(res, resumeRev)
	if c == nil {
		return s.watchEtcd(ctx, res, namespace, opts, initial, resumeRev), nil
	}
	return c.watch(ctx, res.Prefix(namespace), opts, watchStart{
		initial:          initial,
		consistent:       opts.ResourceVersion == "",
		minRev:           rev,
		resume:           resumeRev > 0,
		initialEventsEnd: initial && opts.SendInitialEvents != nil && opts.AllowBookmarks,
	})
}

// bookmarkObject returns an object of res's kind carrying only a
// resourceVersion (and, at the end of initial events, upstream's
// annotation saying so).
func bookmarkObject(res *registry.Resource, rev int64, initialEventsEnd bool) runtime.Object {
	obj := res.New()
	m, err := meta.Accessor(obj)
	if err == nil {
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		if initialEventsEnd {
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
	}
	return obj
}

// errorEvent is the ERROR event that ends a watch because of err.
func errorEvent(err error) watch.Event {
	status := apierrors.NewInternalError(err).ErrStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s.Status()
	}
	return watch.Event{Type: watch.Error, Object: &status}
}

// errWatcher is a watch that only reports why it cannot start, as an
// ERROR event, the way upstream answers a watch from a revision it no
// longer has.
type errWatcher struct{ result chan watch.Event }

func newErrWatcher(err error) *errWatcher {
	w := &errWatcher{result: make(chan watch.Event, 1)}
	w.result <- errorEvent(err)
	close(w.result)
	return w
}

// ResultChan returns the one ERROR event.
func (w *errWatcher) ResultChan() <-chan watch.Event { return w.result }

// Stop does nothing: the watch is over already.
func (w *errWatcher) Stop() {}
