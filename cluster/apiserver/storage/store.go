package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// Store reads and writes objects in etcd, and serves watches (and lists
// that may be stale) from a watch cache per resource.
type Store struct {
	cli    *clientv3.Client
	opts   Options
	logger *slog.Logger

	// progressRequestInterval is how often a watch cache with watchers
	// asks etcd for a progress notification (a field for tests).
	progressRequestInterval time.Duration

	mu sync.Mutex
	// cachers are the running watch caches, by key prefix.
	cachers map[string]*cacher
	closed  bool
}

// Options tune a store.
type Options struct {
	// DisableWatchCache serves every watch from an etcd watch of its own
	// and every list from etcd, as kube-apiserver started with
	// --watch-cache=false.
	DisableWatchCache bool
	// WatchCacheCapacity fixes how many recent events a resource's watch
	// cache keeps. 0 lets it size itself as upstream's does: from 100 up
	// to 102400 events, growing while the events it would drop are less
	// than 75 seconds old.
	WatchCacheCapacity int
	// Logger receives the watch caches' reports; nil discards them.
	Logger *slog.Logger
}

// New returns a store using cli, with watch caches.
func New(cli *clientv3.Client) *Store { return NewWithOptions(cli, Options{}) }

// NewWithOptions returns a store using cli, tuned by opts.
func NewWithOptions(cli *clientv3.Client, opts Options) *Store {
	logger := componentbase.Logger(opts.Logger)
	return &Store{cli: cli, opts: opts, logger: logger, progressRequestInterval: defaultProgressRequestInterval, cachers: map[string]*cacher{}}
}

// Close stops the watch caches, which ends the watches they serve. Watches
// started afterwards are served by etcd directly. The caches also stop
// when the etcd client is closed.
func (s *Store) Close() {
	s.mu.Lock()
	s.closed = true
	cachers := s.cachers
	s.cachers = map[string]*cacher{}
	s.mu.Unlock()
	for _, c := range cachers {
		c.stop()
	}
}

// cacherFor returns the watch cache of res, starting it if this is its
// first use: at startRev, when not 0, so that a watch resuming there finds
// the changes since. It returns nil when watches are served by etcd.
func (s *Store) cacherFor(res *registry.Resource, startRev int64) *cacher {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.DisableWatchCache || s.closed {
		return nil
	}
	key := res.Prefix("")
	c := s.cachers[key]
	if c == nil {
		c = newCacher(s.cli.Ctx(), s, res)
		s.cachers[key] = c
		c.start(startRev)
	}
	return c
}

// Client returns the etcd client the store uses.
func (s *Store) Client() *clientv3.Client { return s.cli }

// Get returns the named object.
func (s *Store) Get(ctx context.Context, res *registry.Resource, namespace, name string) (runtime.Object, error) {
	resp, err := s.cli.Get(ctx, res.Key(namespace, name))
	if err != nil {
		return nil, etcdError(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, apierrors.NewNotFound(res.GroupResource(), name)
	}
	return s.decodeKV(res, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

// Create stores obj, which must not exist yet, and returns it as stored,
// with its resourceVersion.
func (s *Store) Create(ctx context.Context, res *registry.Resource, obj runtime.Object) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	data, err := encode(obj, res.GroupVersion())
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	key := res.Key(m.GetNamespace(), m.GetName())
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(data))).
		Commit()
	if err != nil {
		return nil, etcdError(err)
	}
	if !resp.Succeeded {
		return nil, apierrors.NewAlreadyExists(res.GroupResource(), m.GetName())
	}
	return s.decodeKV(res, data, resp.Header.Revision)
}

// UpdateFunc computes the new object from the current one. It gets a copy
// it may change and return. Returning an error aborts the update with it.
type UpdateFunc func(current runtime.Object) (runtime.Object, error)

// GuaranteedUpdate applies tryUpdate to the current object and writes the
// result if the object is still at the revision it was read at; if somebody
// wrote in between, it reads the object again and retries. A caller that
// needs "fail if changed" (an update carrying a resourceVersion) checks the
// version inside tryUpdate and returns a Conflict. An update that changes
// nothing is not written, as upstream.
func (s *Store) GuaranteedUpdate(ctx context.Context, res *registry.Resource, namespace, name string, tryUpdate UpdateFunc) (runtime.Object, error) {
	key := res.Key(namespace, name)
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return nil, etcdError(err)
	}
	for {
		if len(resp.Kvs) == 0 {
			return nil, apierrors.NewNotFound(res.GroupResource(), name)
		}
		kv := resp.Kvs[0]
		current, err := s.decodeKV(res, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		updated, err := tryUpdate(current.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		m, err := meta.Accessor(updated)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		m.SetResourceVersion("")
		data, err := encode(updated, res.GroupVersion())
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if bytes.Equal(data, kv.Value) { // stored objects carry no resourceVersion
			return current, nil
		}
		txn, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpPut(key, string(data))).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return nil, etcdError(err)
		}
		if txn.Succeeded {
			return s.decodeKV(res, data, txn.Header.Revision)
		}
		// Somebody else wrote first: compute the update again on top of
		// what they wrote.
		resp = (*clientv3.GetResponse)(txn.Responses[0].GetResponseRange())
	}
}

// Precondition checks the current object before a delete.
type Precondition func(current runtime.Object) error

// Delete removes the named object if precondition (which may be nil)
// accepts it, and returns the object as it was, at the deletion's revision.
func (s *Store) Delete(ctx context.Context, res *registry.Resource, namespace, name string, precondition Precondition) (runtime.Object, error) {
	key := res.Key(namespace, name)
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return nil, etcdError(err)
	}
	for {
		if len(resp.Kvs) == 0 {
			return nil, apierrors.NewNotFound(res.GroupResource(), name)
		}
		kv := resp.Kvs[0]
		current, err := s.decodeKV(res, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		if precondition != nil {
			if err := precondition(current); err != nil {
				return nil, err
			}
		}
		txn, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(key)).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return nil, etcdError(err)
		}
		if txn.Succeeded {
			setResourceVersion(current, txn.Header.Revision)
			return current, nil
		}
		resp = (*clientv3.GetResponse)(txn.Responses[0].GetResponseRange())
	}
}

// decodeKV decodes a stored object and gives it its resourceVersion.
func (s *Store) decodeKV(res *registry.Resource, data []byte, rev int64) (runtime.Object, error) {
	obj := res.New()
	if err := decode(data, obj); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("decode %s from etcd: %w", res.Resource, err))
	}
	setResourceVersion(obj, rev)
	return obj, nil
}

func setResourceVersion(obj runtime.Object, rev int64) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
	}
}

// etcdError turns an etcd client error into an API error: an unreachable
// or quorum-less etcd is a timeout the client may retry, as upstream
// reports it.
func etcdError(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	if errors.Is(err, rpctypes.ErrNoSpace) {
		// As upstream, which passes etcd's error through unwrapped: a 500
		// whose message is etcd's own ("etcdserver: mvcc: database space
		// exceeded"), so that kubectl prints what etcd's documentation
		// explains.
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error(),
		}}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return apierrors.NewTimeoutError(fmt.Sprintf("etcd did not answer in time: %v", err), 2)
	}
	return apierrors.NewInternalError(fmt.Errorf("etcd: %w", err))
}
