package etcd

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Buckets of etcd's backend schema that hold the membership. klab writes them
// in the same format as etcd (hex member ID → JSON), so a snapshot taken from
// klab describes its members the way etcd's would.
var (
	membersBucket        = []byte("members")
	membersRemovedBucket = []byte("members_removed")
)

// memberInfo is one member as the cluster knows it.
type memberInfo struct {
	ID         uint64   `json:"id"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs,omitempty"`
	IsLearner  bool     `json:"isLearner,omitempty"`
}

func memberKey(id uint64) []byte { return []byte(strconv.FormatUint(id, 16)) }

// membership is the applied member list. It changes only when a conf change
// is applied, and is persisted in the same transaction.
type membership struct {
	mu      sync.RWMutex
	members map[uint64]*memberInfo
	removed map[uint64]bool
}

func newMembership() *membership {
	return &membership{members: map[uint64]*memberInfo{}, removed: map[uint64]bool{}}
}

func createMembershipBuckets(tx *bolt.Tx) error {
	for _, b := range [][]byte{membersBucket, membersRemovedBucket} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	return nil
}

// load replaces the in-memory list with the persisted one.
func (ms *membership) load(tx *bolt.Tx) error {
	members := map[uint64]*memberInfo{}
	removed := map[uint64]bool{}
	if b := tx.Bucket(membersBucket); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			mi := &memberInfo{}
			if err := json.Unmarshal(v, mi); err != nil {
				return fmt.Errorf("decode member %s: %w", k, err)
			}
			members[mi.ID] = mi
			return nil
		})
		if err != nil {
			return err
		}
	}
	if b := tx.Bucket(membersRemovedBucket); b != nil {
		err := b.ForEach(func(k, _ []byte) error {
			id, err := strconv.ParseUint(string(k), 16, 64)
			if err != nil {
				return fmt.Errorf("decode removed member %q: %w", k, err)
			}
			removed[id] = true
			return nil
		})
		if err != nil {
			return err
		}
	}
	ms.mu.Lock()
	ms.members, ms.removed = members, removed
	ms.mu.Unlock()
	return nil
}

func (ms *membership) put(tx *bolt.Tx, mi *memberInfo) error {
	b, err := json.Marshal(mi)
	if err != nil {
		return err
	}
	if err := tx.Bucket(membersBucket).Put(memberKey(mi.ID), b); err != nil {
		return fmt.Errorf("save member %x: %w", mi.ID, err)
	}
	ms.mu.Lock()
	ms.members[mi.ID] = mi
	ms.mu.Unlock()
	return nil
}

func (ms *membership) remove(tx *bolt.Tx, id uint64) error {
	if err := tx.Bucket(membersBucket).Delete(memberKey(id)); err != nil {
		return err
	}
	if err := tx.Bucket(membersRemovedBucket).Put(memberKey(id), []byte("removed")); err != nil {
		return err
	}
	ms.mu.Lock()
	delete(ms.members, id)
	ms.removed[id] = true
	ms.mu.Unlock()
	return nil
}

func (ms *membership) get(id uint64) *memberInfo {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	if mi, ok := ms.members[id]; ok {
		c := *mi
		return &c
	}
	return nil
}

func (ms *membership) isRemoved(id uint64) bool {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	return ms.removed[id]
}

// list returns the members sorted by name, then ID.
func (ms *membership) list() []*memberInfo {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	out := make([]*memberInfo, 0, len(ms.members))
	for _, mi := range ms.members {
		c := *mi
		out = append(out, &c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (ms *membership) name(id uint64) string {
	if mi := ms.get(id); mi != nil && mi.Name != "" {
		return mi.Name
	}
	return ""
}
