package dns

import (
	"testing"
	"time"

	"github.com/miekg/dns"
)

// BenchmarkQuery measures queries per second from one client, one query
// at a time, as a pod's resolver asks: an A query for a Service over UDP,
// and over one reused TCP connection.
func BenchmarkQuery(b *testing.B) {
	s, _ := startServer(b, fixtureObjects()...)
	for _, network := range []string{"udp", "tcp"} {
		b.Run(network, func(b *testing.B) {
			c := &dns.Client{Net: network, Timeout: 5 * time.Second}
			conn, err := c.Dial(s.Addr())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			m := new(dns.Msg)
			m.SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				r, _, err := c.ExchangeWithConn(m, conn)
				if err != nil {
					b.Fatal(err)
				}
				if len(r.Answer) != 1 {
					b.Fatalf("answer %v", r.Answer)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "queries/s")
		})
	}
}
