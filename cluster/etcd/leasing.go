package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/raft/v3"
)

// leaseLoop runs on every member and acts only on the leader: it revokes
// expired leases through raft (expiry is the leader's decision, replicated as
// a LeaseRevoke entry) and compacts old revisions automatically.
func (m *Member) leaseLoop() {
	defer m.wg.Done()
	expiry := time.NewTicker(500 * time.Millisecond)
	defer expiry.Stop()
	compaction := time.NewTicker(5 * time.Second)
	defer compaction.Stop()
	for {
		select {
		case <-m.stopc:
			return
		case <-expiry.C:
			if !m.isLeader() || m.gate.isShut() {
				continue
			}
			for _, id := range m.lessor.Expired() {
				id := id
				m.go_(func() {
					ctx, cancel := context.WithTimeout(context.Background(), m.requestTimeout())
					defer cancel()
					_, err := m.propose(ctx, &pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: id}})
					if err != nil && !errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) {
						m.lg.Debug("revoke expired lease", "lease", id, "err", err)
					}
				})
			}
		case <-compaction.C:
			if !m.isLeader() || m.cfg.CompactRetention < 0 || m.gate.isShut() {
				continue
			}
			target := m.store.Rev() - m.cfg.CompactRetention
			// Compact in steps of at least a tenth of the retention, so a
			// busy cluster does not propose a compaction every few seconds.
			if target-m.store.CompactRev() < m.cfg.CompactRetention/10+1 {
				continue
			}
			m.go_(func() {
				ctx, cancel := context.WithTimeout(context.Background(), m.requestTimeout())
				defer cancel()
				if _, err := m.propose(ctx, &pb.InternalRaftRequest{Compaction: &pb.CompactionRequest{Revision: target}}); err != nil {
					m.lg.Debug("automatic compaction", "revision", target, "err", err)
				}
			})
		}
	}
}

func (m *Member) isLeader() bool {
	st, _ := m.raftState.Load().(raft.StateType)
	return st == raft.StateLeader
}

// leaseRequest is the body of the leader-forwarding endpoints on the peer
// port, the counterpart of etcd's /leases.
type leaseRequest struct {
	ID   int64 `json:"id"`
	Keys bool  `json:"keys,omitempty"`
}

type leaseReply struct {
	TTL        int64    `json:"ttl"`
	GrantedTTL int64    `json:"grantedTTL,omitempty"`
	Keys       [][]byte `json:"keys,omitempty"`
	Error      string   `json:"error,omitempty"`
	NotFound   bool     `json:"notFound,omitempty"`
}

// renewLease renews a lease on the leader, forwarding the request there if
// this member is not the leader. A lease that does not exist renews to TTL 0,
// which is how etcd answers a keep-alive for it.
func (m *Member) renewLease(ctx context.Context, id int64) (int64, error) {
	if m.isLeader() {
		ttl, err := m.lessor.Renew(id)
		if isLeaseNotFound(err) {
			return 0, nil
		}
		return ttl, err
	}
	var reply leaseReply
	if err := m.forwardToLeader(ctx, "/klab/lease/keepalive", leaseRequest{ID: id}, &reply); err != nil {
		return 0, err
	}
	return reply.TTL, nil
}

// leaseTimeToLive answers TimeToLive from the leader, which alone knows how
// long a lease has left.
func (m *Member) leaseTimeToLive(ctx context.Context, id int64, keys bool) (*leaseReply, error) {
	if m.isLeader() {
		granted, remaining, ks, err := m.lessor.TimeToLive(id)
		if isLeaseNotFound(err) {
			return &leaseReply{TTL: -1, NotFound: true}, nil
		}
		if err != nil {
			return nil, err
		}
		r := &leaseReply{TTL: remaining, GrantedTTL: granted}
		if keys {
			r.Keys = ks
		}
		return r, nil
	}
	var reply leaseReply
	if err := m.forwardToLeader(ctx, "/klab/lease/ttl", leaseRequest{ID: id, Keys: keys}, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

func isLeaseNotFound(err error) bool {
	return err != nil && (errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) || errors.Is(err, rpctypes.ErrLeaseNotFound) ||
		rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCLeaseNotFound))
}

func (m *Member) forwardToLeader(ctx context.Context, path string, body, out any) error {
	if err := m.waitLeader(ctx); err != nil {
		return err
	}
	lead := m.lead.Load()
	mi := m.members.get(lead)
	if mi == nil || len(mi.PeerURLs) == 0 {
		return rpctypes.ErrGRPCNoLeader
	}
	if ok, _ := m.cfg.Faults.Deliver(m.cfg.Name, mi.Name); !ok {
		// The fault layer cuts this link: the leader cannot be reached.
		return rpctypes.ErrGRPCNoLeader
	}
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(ctx, m.requestTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mi.PeerURLs[0]+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.peerHTTP.Do(req)
	if err != nil {
		return rpctypes.ErrGRPCNoLeader
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("leader answered %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	return json.Unmarshal(data, out)
}

// serveLeaseForward answers forwarded lease requests on the leader.
func (m *Member) serveLeaseForward(keepalive bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req leaseRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
			http.Error(w, "bad lease request: "+err.Error(), http.StatusBadRequest)
			return
		}
		if !m.isLeader() {
			http.Error(w, rpctypes.ErrNotLeader.Error(), http.StatusServiceUnavailable)
			return
		}
		var reply *leaseReply
		if keepalive {
			ttl, err := m.renewLease(r.Context(), req.ID)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			reply = &leaseReply{TTL: ttl}
		} else {
			var err error
			if reply, err = m.leaseTimeToLive(r.Context(), req.ID, req.Keys); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(reply)
	}
}
