package allocator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The etcd keys kube-apiserver keeps its range allocations under.
const (
	// ServiceIPsKey holds the ClusterIP bitmap.
	ServiceIPsKey = "/registry/ranges/serviceips"
	// ServiceNodePortsKey holds the NodePort bitmap.
	ServiceNodePortsKey = "/registry/ranges/servicenodeports"
)

// errNoChange tells update that the change left the bitmap as it was, so
// there is nothing to write.
var errNoChange = errors.New("no change")

// rangeStore keeps one bitmap in etcd as a RangeAllocation and changes it
// only by compare-and-swap on the key's ModRevision. It caches the last
// state it saw so that an uncontended change costs one transaction; a
// cached state is never trusted for a refusal (full, taken, nothing to do)
// without reading etcd first, as upstream's GuaranteedUpdate does.
type rangeStore struct {
	cli       *clientv3.Client
	key       string
	rangeSpec string
	// mismatch is the error returned when etcd holds another range.
	mismatch error

	// mu serialises this process's changes; other processes are held off
	// by the compare-and-swap.
	mu sync.Mutex
	// cached is the last bitmap seen or written, at revision modRevision
	// (0 while the key does not exist).
	cached      *bitmap
	modRevision int64
}

func newRangeStore(cli *clientv3.Client, key, rangeSpec string, size, staticBand int, mismatch error) *rangeStore {
	return &rangeStore{
		cli:       cli,
		key:       key,
		rangeSpec: rangeSpec,
		mismatch:  mismatch,
		cached:    newBitmap(size, staticBand),
	}
}

// allocateNext takes a random free offset, or returns ErrFull.
func (s *rangeStore) allocateNext(ctx context.Context) (int, error) {
	var offset int
	err := s.update(ctx, func(b *bitmap) error {
		var ok bool
		if offset, ok = b.takeRandom(rand.IntN); !ok {
			return ErrFull
		}
		return nil
	})
	return offset, err
}

// allocate takes offset, or returns taken if it is not free.
func (s *rangeStore) allocate(ctx context.Context, offset int, taken error) error {
	return s.update(ctx, func(b *bitmap) error {
		if !b.take(offset) {
			return taken
		}
		return nil
	})
}

// release frees offset; freeing a free offset writes nothing.
func (s *rangeStore) release(ctx context.Context, offset int) error {
	return s.update(ctx, func(b *bitmap) error {
		if !b.free(offset) {
			return errNoChange
		}
		return nil
	})
}

// used returns the taken offsets as etcd holds them now.
func (s *rangeStore) used(ctx context.Context) ([]int, error) {
	b, _, err := s.read(ctx)
	if err != nil {
		return nil, err
	}
	return b.offsets(), nil
}

// update applies change to a copy of the current bitmap and writes the copy
// back if nobody else wrote the key meanwhile, deciding again on the newer
// state as often as it has to. change returns errNoChange when there is
// nothing to write, or another error to refuse the change. A refusal made
// on the cached state is checked once more against a fresh read.
func (s *rangeStore) update(ctx context.Context, change func(*bitmap) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := false
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("update %s: %w", s.key, err)
		}
		next := s.cached.clone()
		if err := change(next); err != nil {
			if !fresh {
				if err := s.refresh(ctx); err != nil {
					return err
				}
				fresh = true
				continue
			}
			if errors.Is(err, errNoChange) {
				return nil
			}
			return err
		}
		won, err := s.swap(ctx, next)
		if err != nil {
			return err
		}
		if won {
			return nil
		}
		// swap has loaded what the other writer left.
		fresh = true
	}
}

// swap writes next if the key is still at s.modRevision. If it is not,
// swap loads the key's current state into the cache and reports false.
func (s *rangeStore) swap(ctx context.Context, next *bitmap) (bool, error) {
	data, err := s.encode(next)
	if err != nil {
		return false, err
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(s.key), "=", s.modRevision)).
		Then(clientv3.OpPut(s.key, string(data))).
		Else(clientv3.OpGet(s.key)).
		Commit()
	if err != nil {
		return false, fmt.Errorf("write %s: %w", s.key, err)
	}
	if resp.Succeeded {
		// A put inside a transaction gets the transaction's revision.
		s.cached, s.modRevision = next, resp.Header.Revision
		return true, nil
	}
	if len(resp.Responses) == 0 {
		return false, s.refresh(ctx)
	}
	_, err = s.load(resp.Responses[0].GetResponseRange())
	return false, err
}

// refresh reads the key into the cache.
func (s *rangeStore) refresh(ctx context.Context) error {
	_, err := s.get(ctx)
	return err
}

// get reads the key into the cache and returns the stored object, or nil if
// the key does not exist.
func (s *rangeStore) get(ctx context.Context) (*corev1.RangeAllocation, error) {
	resp, err := s.cli.Get(ctx, s.key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.key, err)
	}
	return s.load((*pb.RangeResponse)(resp))
}

// load replaces the cache with the key's value in resp and returns it as an
// object, or, if the key does not exist, with an empty bitmap at revision 0
// and returns nil.
func (s *rangeStore) load(resp *pb.RangeResponse) (*corev1.RangeAllocation, error) {
	if resp == nil || len(resp.Kvs) == 0 {
		s.cached = newBitmap(s.cached.size, s.cached.staticBand)
		s.modRevision = 0
		return nil, nil
	}
	kv := resp.Kvs[0]
	obj, err := s.decode(kv.Value, kv.ModRevision)
	if err != nil {
		return nil, err
	}
	b := newBitmap(s.cached.size, s.cached.staticBand)
	b.restore(obj.Data)
	s.cached, s.modRevision = b, kv.ModRevision
	return obj, nil
}

// read returns the bitmap and the object as etcd holds them now. When the
// key does not exist yet, the object is the empty range without a
// resourceVersion, as upstream's storage returns it.
func (s *rangeStore) read(ctx context.Context) (*bitmap, *corev1.RangeAllocation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, err := s.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	if obj == nil {
		obj = s.object(s.cached)
	}
	return s.cached.clone(), obj, nil
}

// object builds the RangeAllocation for b, without a resourceVersion.
func (s *rangeStore) object(b *bitmap) *corev1.RangeAllocation {
	return &corev1.RangeAllocation{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "RangeAllocation"},
		Range:    s.rangeSpec,
		Data:     b.bytes(),
	}
}

// encode is the stored form of b. Like upstream's etcd3 store, it leaves
// metadata.resourceVersion out: the key's ModRevision is the version.
func (s *rangeStore) encode(b *bitmap) ([]byte, error) {
	data, err := json.Marshal(s.object(b))
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", s.key, err)
	}
	return data, nil
}

// decode parses a stored RangeAllocation, sets its resourceVersion from
// modRevision and checks that it describes this store's range.
func (s *rangeStore) decode(value []byte, modRevision int64) (*corev1.RangeAllocation, error) {
	obj := &corev1.RangeAllocation{}
	if err := json.Unmarshal(value, obj); err != nil {
		return nil, fmt.Errorf("decode %s: %w", s.key, err)
	}
	if obj.Range != s.rangeSpec {
		return nil, fmt.Errorf("%s holds range %q, not %q: %w", s.key, obj.Range, s.rangeSpec, s.mismatch)
	}
	obj.ResourceVersion = strconv.FormatInt(modRevision, 10)
	return obj, nil
}
