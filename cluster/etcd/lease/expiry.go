package lease

import (
	"sort"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Promote makes this the leader's lessor: from now on it tracks expiry, and
// every lease expires TTL plus extend from now. extend covers the time the
// leadership change took, during which clients could not renew.
func (l *Lessor) Promote(extend time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.primary = true
	now := l.now()
	for _, ls := range l.leases {
		ls.expiry = now.Add(time.Duration(ls.ttl)*time.Second + extend)
		ls.retryAt = time.Time{}
	}
}

// Demote stops expiry tracking: this member is no longer the leader, and on
// a follower every lease lives until a replicated revocation removes it.
func (l *Lessor) Demote() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.primary = false
	for _, ls := range l.leases {
		ls.expiry = time.Time{}
		ls.retryAt = time.Time{}
	}
}

// Renew resets the lease's expiry to TTL from now and returns the TTL. Only
// the leader's lessor renews (ErrNotPrimary otherwise). An expired lease
// cannot be renewed: its revocation is already due, so the answer is
// rpctypes.ErrGRPCLeaseNotFound, what etcd answers once the revocation is
// applied.
func (l *Lessor) Renew(id int64) (ttl int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return -1, ErrNotPrimary
	}
	ls, ok := l.leases[id]
	if !ok {
		return -1, rpctypes.ErrGRPCLeaseNotFound
	}
	now := l.now()
	if !now.Before(ls.expiry) {
		return -1, rpctypes.ErrGRPCLeaseNotFound
	}
	ls.expiry = now.Add(time.Duration(ls.ttl) * time.Second)
	ls.retryAt = time.Time{}
	return ls.ttl, nil
}

// Expired returns, on the leader's lessor, up to maxExpiredBatch leases
// whose expiry has passed, soonest expired first. The member proposes a
// LeaseRevoke for each; a lease is not reported again for
// expiredLeaseRetryInterval, the time its revocation gets to go through.
func (l *Lessor) Expired() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return nil
	}
	now := l.now()
	var due []*lease
	for _, ls := range l.leases {
		if !ls.expiry.IsZero() && !now.Before(ls.expiry) && !now.Before(ls.retryAt) {
			due = append(due, ls)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].expiry.Equal(due[j].expiry) {
			return due[i].expiry.Before(due[j].expiry)
		}
		return due[i].id < due[j].id
	})
	if len(due) > maxExpiredBatch {
		due = due[:maxExpiredBatch]
	}
	ids := make([]int64, len(due))
	for i, ls := range due {
		ls.retryAt = now.Add(expiredLeaseRetryInterval)
		ids[i] = ls.id
	}
	return ids
}

// TimeToLive returns the lease's granted TTL, its remaining seconds and its
// keys, sorted. Remaining time is known only on the leader: elsewhere the
// answer carries the granted TTL as remaining and ErrNotPrimary, so the
// member can forward the request or settle for that. It fails with
// rpctypes.ErrGRPCLeaseNotFound.
func (l *Lessor) TimeToLive(id int64) (granted, remaining int64, keys [][]byte, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	ls, ok := l.leases[id]
	if !ok {
		return -1, -1, nil, rpctypes.ErrGRPCLeaseNotFound
	}
	names := make([]string, 0, len(ls.keys))
	for k := range ls.keys {
		names = append(names, k)
	}
	sort.Strings(names)
	keys = make([][]byte, len(names))
	for i, k := range names {
		keys[i] = []byte(k)
	}
	if !l.primary {
		return ls.ttl, ls.ttl, keys, ErrNotPrimary
	}
	// Whole seconds, truncated, as etcd reports them.
	remaining = max(int64(ls.expiry.Sub(l.now())/time.Second), 0)
	return ls.ttl, remaining, keys, nil
}
