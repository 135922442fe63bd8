package proxier

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// IPVS scheduler names, as --ipvs-scheduler and ipvsadm spell them.
const (
	SchedulerRoundRobin            = "rr"
	SchedulerLeastConnection       = "lc"
	SchedulerDestinationHashing    = "dh"
	SchedulerSourceHashing         = "sh"
	SchedulerShortestExpectedDelay = "sed"
	SchedulerNeverQueue            = "nq"
)

// SchedulerNames lists the ipvs schedulers klab implements.
var SchedulerNames = []string{
	SchedulerRoundRobin, SchedulerLeastConnection, SchedulerDestinationHashing,
	SchedulerSourceHashing, SchedulerShortestExpectedDelay, SchedulerNeverQueue,
}

// realServer is an IPVS destination: an endpoint with a weight and the
// connection counters the kernel keeps for it.
type realServer struct {
	ep          Endpoint
	weight      int
	activeConns int
	inactConns  int
}

// available is the kernel's test: weight above zero (klab never sets the
// overload flag, which needs connection thresholds).
func (rs *realServer) available() bool { return rs.weight > 0 }

// scheduler is one of the kernel's ip_vs_sched modules. The real servers
// are in the order of the service's destination list.
type scheduler interface {
	name() string
	// update rebuilds the scheduler's state after the real servers changed
	// (the kernel's add_dest/del_dest/upd_dest hooks).
	update(rs []*realServer)
	// schedule returns the real server for a new connection from src to
	// dst, or nil when none is available.
	schedule(rs []*realServer, src, dst netip.Addr) *realServer
}

// newScheduler returns a fresh scheduler by name.
func newScheduler(name string) (scheduler, error) {
	switch name {
	case SchedulerRoundRobin:
		return &rrScheduler{last: -1}, nil
	case SchedulerLeastConnection:
		return lcScheduler{}, nil
	case SchedulerDestinationHashing:
		return &dhScheduler{}, nil
	case SchedulerSourceHashing:
		return &shScheduler{}, nil
	case SchedulerShortestExpectedDelay:
		return sedScheduler{}, nil
	case SchedulerNeverQueue:
		return nqScheduler{}, nil
	}
	return nil, fmt.Errorf("unknown ipvs scheduler %q: use one of %s", name, strings.Join(SchedulerNames, ", "))
}

// rrScheduler is ip_vs_rr: it remembers the last server it chose and takes
// the next available one in list order.
type rrScheduler struct{ last int }

func (s *rrScheduler) name() string { return SchedulerRoundRobin }

func (s *rrScheduler) update(rs []*realServer) {
	if s.last >= len(rs) {
		s.last = -1
	}
}

func (s *rrScheduler) schedule(rs []*realServer, _, _ netip.Addr) *realServer {
	for step := 1; step <= len(rs); step++ {
		i := (s.last + step) % len(rs)
		if rs[i].available() {
			s.last = i
			return rs[i]
		}
	}
	return nil
}

// lcScheduler is ip_vs_lc: the server with the least connection overhead,
// active connections counting 256 times as much as inactive ones; the first
// one in list order wins a tie.
type lcScheduler struct{}

func (lcScheduler) name() string         { return SchedulerLeastConnection }
func (lcScheduler) update([]*realServer) {}
func (lcScheduler) overhead(rs *realServer) int {
	return rs.activeConns<<8 + rs.inactConns
}

func (s lcScheduler) schedule(rs []*realServer, _, _ netip.Addr) *realServer {
	var least *realServer
	for _, r := range rs {
		if !r.available() {
			continue
		}
		if least == nil || s.overhead(r) < s.overhead(least) {
			least = r
		}
	}
	return least
}

// sedScheduler is ip_vs_sed, shortest expected delay: the server with the
// smallest (active connections + 1) / weight.
type sedScheduler struct{}

func (sedScheduler) name() string         { return SchedulerShortestExpectedDelay }
func (sedScheduler) update([]*realServer) {}

func (sedScheduler) schedule(rs []*realServer, _, _ netip.Addr) *realServer {
	var least *realServer
	for _, r := range rs {
		if !r.available() {
			continue
		}
		if least == nil || (least.activeConns+1)*r.weight > (r.activeConns+1)*least.weight {
			least = r
		}
	}
	return least
}

// nqScheduler is ip_vs_nq, never queue: an idle server if there is one,
// otherwise the shortest expected delay.
type nqScheduler struct{}

func (nqScheduler) name() string         { return SchedulerNeverQueue }
func (nqScheduler) update([]*realServer) {}

func (nqScheduler) schedule(rs []*realServer, _, _ netip.Addr) *realServer {
	var least *realServer
	for _, r := range rs {
		if !r.available() {
			continue
		}
		if r.activeConns == 0 {
			return r
		}
		if least == nil || (least.activeConns+1)*r.weight > (r.activeConns+1)*least.weight {
			least = r
		}
	}
	return least
}

// hashTableBits is CONFIG_IP_VS_DH_TAB_BITS and CONFIG_IP_VS_SH_TAB_BITS: the
// hashing schedulers map addresses onto 256 buckets.
const hashTableBits = 8

// hash32 is the kernel's hash_32: multiply by the 32-bit golden ratio and
// keep the top bits.
func hash32(v uint32, bits uint) uint32 {
	return (v * 0x61C88647) >> (32 - bits)
}

func addrValue(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

// dhScheduler is ip_vs_dh: it hashes the destination address. For a
// Service, the destination is always the virtual address, so every
// connection goes to the same real server: dh is meant for caches in front
// of many destinations, and teaches why a scheduler must fit the traffic.
type dhScheduler struct {
	buckets [1 << hashTableBits]*realServer
}

func (s *dhScheduler) name() string { return SchedulerDestinationHashing }

// update assigns the buckets to the servers in turn, as ip_vs_dh_reassign.
func (s *dhScheduler) update(rs []*realServer) {
	for i := range s.buckets {
		s.buckets[i] = nil
		if len(rs) > 0 {
			s.buckets[i] = rs[i%len(rs)]
		}
	}
}

func (s *dhScheduler) schedule(_ []*realServer, _, dst netip.Addr) *realServer {
	r := s.buckets[hash32(addrValue(dst), hashTableBits)]
	if r == nil || !r.available() {
		return nil
	}
	return r
}

// shScheduler is ip_vs_sh: it hashes the source address, so one client
// always reaches the same real server while the servers do not change.
type shScheduler struct {
	buckets [1 << hashTableBits]*realServer
}

func (s *shScheduler) name() string { return SchedulerSourceHashing }

// update assigns the buckets in turn, each server taking as many
// consecutive buckets as its weight, as ip_vs_sh_reassign.
func (s *shScheduler) update(rs []*realServer) {
	next, taken := 0, 0
	for i := range s.buckets {
		s.buckets[i] = nil
		if len(rs) == 0 {
			continue
		}
		s.buckets[i] = rs[next]
		taken++
		if taken >= rs[next].weight {
			next, taken = (next+1)%len(rs), 0
		}
	}
}

func (s *shScheduler) schedule(_ []*realServer, src, _ netip.Addr) *realServer {
	// Without the sh-port flag the port is zero; without sh-fallback an
	// unavailable server means no server.
	r := s.buckets[hash32(addrValue(src), hashTableBits)&(1<<hashTableBits-1)]
	if r == nil || !r.available() {
		return nil
	}
	return r
}
