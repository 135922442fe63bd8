package dns

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// stats counts the queries answered, by protocol and type, and the
// answers by response code, as CoreDNS's prometheus plugin does.
type stats struct {
	mu        sync.Mutex
	requests  map[[2]string]uint64 // proto, type
	responses map[string]uint64    // rcode
}

func newStats() *stats {
	return &stats{requests: map[[2]string]uint64{}, responses: map[string]uint64{}}
}

func (st *stats) record(proto string, qtype uint16, rcode int) {
	t := dns.TypeToString[qtype]
	if t == "" {
		t = "other"
	}
	rc := dns.RcodeToString[rcode]
	st.mu.Lock()
	st.requests[[2]string{proto, t}]++
	st.responses[rc]++
	st.mu.Unlock()
}

// Status is what /debug/klab/status answers.
type Status struct {
	Component string    `json:"component"`
	Identity  string    `json:"identity,omitempty"`
	Listen    string    `json:"listen"`
	Domain    string    `json:"domain"`
	TTL       uint32    `json:"ttl"`
	Ready     bool      `json:"ready"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	// Services and EndpointSlices are the objects in the caches.
	Services       int `json:"services"`
	EndpointSlices int `json:"endpointSlices"`
	// Queries counts the queries answered; Responses the answers by
	// response code (NOERROR, NXDOMAIN, SERVFAIL, ...).
	Queries   uint64            `json:"queries"`
	Responses map[string]uint64 `json:"responses"`
	// Upstream says what happens to names outside the cluster's zones.
	Upstream string `json:"upstream"`
}

// Status reports the server's state.
func (s *Server) Status() Status {
	s.mu.Lock()
	st := Status{Component: ComponentName, Identity: s.cfg.Identity, Listen: s.addr, Domain: s.zone.domain, TTL: s.zone.ttl, Ready: s.ready, StartedAt: s.started}
	s.mu.Unlock()
	st.Services = len(s.cache.services.GetStore().ListKeys())
	st.EndpointSlices = len(s.cache.slices.GetStore().ListKeys())
	st.Responses = map[string]uint64{}
	s.stats.mu.Lock()
	for _, n := range s.stats.requests {
		st.Queries += n
	}
	for rc, n := range s.stats.responses {
		st.Responses[rc] = n
	}
	s.stats.mu.Unlock()
	st.Upstream = "none: names outside " + s.zone.domain + " answer SERVFAIL"
	return st
}

func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "OK") })
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		ready := s.ready
		s.mu.Unlock()
		if !ready {
			http.Error(w, "not ready: caches not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "OK")
	})
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	mux.HandleFunc("GET /debug/klab/status", func(w http.ResponseWriter, _ *http.Request) {
		componentbase.WriteJSON(w, http.StatusOK, s.Status())
	})
	return mux
}

// serveMetrics writes the counters in the Prometheus text format, under
// CoreDNS's metric names so that a dashboard made for it reads them.
func (s *Server) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	var b strings.Builder
	zone := s.zone.domain
	s.stats.mu.Lock()
	b.WriteString("# HELP coredns_dns_requests_total Counter of DNS requests made per zone, protocol and family.\n")
	b.WriteString("# TYPE coredns_dns_requests_total counter\n")
	keys := make([][2]string, 0, len(s.stats.requests))
	for k := range s.stats.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
	for _, k := range keys {
		fmt.Fprintf(&b, "coredns_dns_requests_total{proto=%q,server=\"dns://:53\",type=%q,zone=%q} %d\n", k[0], k[1], zone, s.stats.requests[k])
	}
	b.WriteString("# HELP coredns_dns_responses_total Counter of response status codes.\n")
	b.WriteString("# TYPE coredns_dns_responses_total counter\n")
	rcodes := make([]string, 0, len(s.stats.responses))
	for rc := range s.stats.responses {
		rcodes = append(rcodes, rc)
	}
	slices.Sort(rcodes)
	for _, rc := range rcodes {
		fmt.Fprintf(&b, "coredns_dns_responses_total{rcode=%q,server=\"dns://:53\",zone=%q} %d\n", rc, zone, s.stats.responses[rc])
	}
	s.stats.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(b.String()))
}
