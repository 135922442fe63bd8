package live

import (
	"context"
	"errors"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/lessons"
)

// Key reads and watches. A read waits for a quorum (it is linearizable:
// a value only one member in a minority still holds is not "the value"),
// so it is bounded and retried while the cluster has none.
const (
	keyReadTimeout = 5 * time.Second
	etcdDial       = 2 * time.Second
	// etcdKeepalive notices a member that froze or vanished without
	// closing its connections, so that the watch moves to another member.
	etcdKeepalive = 2 * time.Second
)

// keyWatches are a Feed's etcd key watches, one goroutine per key, on one
// client made when the first key is set.
type keyWatches struct {
	f      *Feed
	mu     sync.Mutex
	client *clientv3.Client
	active map[string]context.CancelFunc
	closed bool
	wg     sync.WaitGroup
}

func (k *keyWatches) init(f *Feed) {
	k.f = f
	k.active = map[string]context.CancelFunc{}
}

// set watches exactly keys.
func (k *keyWatches) set(keys []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed || k.f.ctx.Err() != nil {
		return
	}
	want := map[string]bool{}
	for _, key := range keys {
		want[key] = true
	}
	for key, stop := range k.active {
		if !want[key] {
			stop()
			delete(k.active, key)
		}
	}
	for key := range want {
		if _, ok := k.active[key]; ok {
			continue
		}
		if k.client == nil {
			tc, err := k.f.info.EtcdCredentials.TLS()
			if err != nil {
				k.f.logger.Warn("lessons feed: etcd client", "err", err)
				return
			}
			cli, err := clientv3.New(clientv3.Config{
				TLS:                  tc,
				Endpoints:            k.f.info.EtcdEndpoints,
				DialTimeout:          etcdDial,
				DialKeepAliveTime:    etcdKeepalive,
				DialKeepAliveTimeout: etcdKeepalive,
				Logger:               zap.NewNop(),
				// Its reads are not the student's: the members' request
				// streams count them as a component's.
				DialOptions: []grpc.DialOption{grpc.WithUserAgent(etcd.ComponentUserAgent + "/klab-lessons")},
			})
			if err != nil {
				k.f.logger.Warn("lessons feed: etcd client", "err", err)
				return
			}
			k.client = cli
		}
		ctx, cancel := context.WithCancel(k.f.ctx)
		k.active[key] = cancel
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			k.watch(ctx, key)
		}()
	}
}

// close stops every watch and closes the client.
func (k *keyWatches) close() {
	k.mu.Lock()
	k.closed = true
	for _, stop := range k.active {
		stop()
	}
	k.active = nil
	k.mu.Unlock()
	k.wg.Wait()
	if k.client != nil {
		k.client.Close()
	}
}

// watch reports key's current value, then every change, until ctx ends.
// When the watch breaks (its revision was compacted, say), the key is read
// again and watched from there.
func (k *keyWatches) watch(ctx context.Context, key string) {
	wait := retryMin
	for {
		rev, err := k.read(ctx, key)
		if err == nil {
			wait = retryMin
			err = k.follow(ctx, key, rev)
		}
		if ctx.Err() != nil {
			return
		}
		k.f.logger.Debug("lessons feed: key watch retried", "key", key, "err", err)
		if !sleep(ctx, wait) {
			return
		}
		wait = min(2*wait, retryMax)
	}
}

// read reports the key's value now and returns the revision it was read at.
func (k *keyWatches) read(ctx context.Context, key string) (int64, error) {
	rctx, cancel := context.WithTimeout(ctx, keyReadTimeout)
	defer cancel()
	resp, err := k.client.Get(rctx, key)
	if err != nil {
		return 0, err
	}
	obs := lessons.KeyObserved{Key: key, Deleted: true}
	if len(resp.Kvs) > 0 {
		obs = lessons.KeyObserved{Key: key, Value: string(resp.Kvs[0].Value)}
	}
	if !k.f.send(item{obs: []lessons.Observation{obs}}) {
		return 0, ctx.Err()
	}
	return resp.Header.Revision, nil
}

// follow reports the key's changes after revision rev. clientv3 moves the
// watch to another member when the one it is on goes away, resuming after
// the last revision it delivered.
func (k *keyWatches) follow(ctx context.Context, key string, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range k.client.Watch(wctx, key, clientv3.WithRev(rev+1)) {
		if err := resp.Err(); err != nil {
			return err
		}
		var obs []lessons.Observation
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete {
				obs = append(obs, lessons.KeyObserved{Key: key, Deleted: true})
			} else {
				obs = append(obs, lessons.KeyObserved{Key: key, Value: string(ev.Kv.Value)})
			}
		}
		if len(obs) > 0 && !k.f.send(item{obs: obs}) {
			return ctx.Err()
		}
	}
	return errors.New("watch closed")
}
