package dns

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const soaOwner = "cluster.local."

func TestRecords(t *testing.T) {
	s, _ := startServer(t, fixtureObjects()...)
	tests := []struct {
		name  string
		qname string
		qtype uint16
		rcode int
		// answer and extra as rrs writes them; soa is the owner of the
		// SOA expected in the authority section ("" for none).
		answer []string
		extra  []string
		soa    string
	}{
		{name: "schema version", qname: "dns-version.cluster.local.", qtype: dns.TypeTXT,
			answer: []string{`dns-version.cluster.local. TXT "1.1.0"`}},
		{name: "ClusterIP A", qname: "web.default.svc.cluster.local.", qtype: dns.TypeA,
			answer: []string{"web.default.svc.cluster.local. A 10.96.0.50"}},
		{name: "kubernetes A", qname: "kubernetes.default.svc.cluster.local.", qtype: dns.TypeA,
			answer: []string{"kubernetes.default.svc.cluster.local. A 10.96.0.1"}},
		{name: "names are case-insensitive", qname: "WEB.Default.SVC.cluster.local.", qtype: dns.TypeA,
			answer: []string{"WEB.Default.SVC.cluster.local. A 10.96.0.50"}},
		{name: "IPv4-only Service has no AAAA: NODATA", qname: "web.default.svc.cluster.local.", qtype: dns.TypeAAAA, soa: soaOwner},
		{name: "dual-stack AAAA", qname: "dual.default.svc.cluster.local.", qtype: dns.TypeAAAA,
			answer: []string{"dual.default.svc.cluster.local. AAAA fd00:10:96::60"}},
		{name: "dual-stack A", qname: "dual.default.svc.cluster.local.", qtype: dns.TypeA,
			answer: []string{"dual.default.svc.cluster.local. A 10.96.0.60"}},
		{name: "Service asked for MX: NODATA", qname: "web.default.svc.cluster.local.", qtype: dns.TypeMX, soa: soaOwner},
		{name: "SRV of a named port", qname: "_http._tcp.web.default.svc.cluster.local.", qtype: dns.TypeSRV,
			answer: []string{"_http._tcp.web.default.svc.cluster.local. SRV 0 100 80 web.default.svc.cluster.local."},
			extra:  []string{"web.default.svc.cluster.local. A 10.96.0.50"}},
		{name: "SRV over UDP of kube-dns", qname: "_dns._udp.kube-dns.kube-system.svc.cluster.local.", qtype: dns.TypeSRV,
			answer: []string{"_dns._udp.kube-dns.kube-system.svc.cluster.local. SRV 0 100 53 kube-dns.kube-system.svc.cluster.local."},
			extra:  []string{"kube-dns.kube-system.svc.cluster.local. A 10.96.0.10"}},
		{name: "SRV with the wrong protocol", qname: "_http._udp.web.default.svc.cluster.local.", qtype: dns.TypeSRV, rcode: dns.RcodeNameError, soa: soaOwner},
		{name: "SRV of an unknown port", qname: "_nope._tcp.web.default.svc.cluster.local.", qtype: dns.TypeSRV, rcode: dns.RcodeNameError, soa: soaOwner},
		{name: "SRV name asked for A: NODATA", qname: "_http._tcp.web.default.svc.cluster.local.", qtype: dns.TypeA, soa: soaOwner},
		{name: "protocol label is an empty non-terminal", qname: "_tcp.web.default.svc.cluster.local.", qtype: dns.TypeA, soa: soaOwner},
		{name: "headless: ready endpoints only", qname: "db.default.svc.cluster.local.", qtype: dns.TypeA,
			answer: []string{"db.default.svc.cluster.local. A 10.244.1.5", "db.default.svc.cluster.local. A 10.244.2.6"}},
		{name: "headless endpoint by hostname", qname: "db-0.db.default.svc.cluster.local.", qtype: dns.TypeA,
			answer: []string{"db-0.db.default.svc.cluster.local. A 10.244.1.5"}},
		{name: "a not-ready endpoint has no record", qname: "db-2.db.default.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: soaOwner},
		{name: "headless endpoint without hostname, by dashed address", qname: "10-244-3-3.anon.default.svc.cluster.local.", qtype: dns.TypeA,
			answer: []string{"10-244-3-3.anon.default.svc.cluster.local. A 10.244.3.3"}},
		{name: "headless SRV: one per ready endpoint and named port", qname: "_pg._tcp.db.default.svc.cluster.local.", qtype: dns.TypeSRV,
			answer: []string{
				"_pg._tcp.db.default.svc.cluster.local. SRV 0 50 5432 db-0.db.default.svc.cluster.local.",
				"_pg._tcp.db.default.svc.cluster.local. SRV 0 50 5432 db-1.db.default.svc.cluster.local.",
			},
			extra: []string{"db-0.db.default.svc.cluster.local. A 10.244.1.5", "db-1.db.default.svc.cluster.local. A 10.244.2.6"}},
		{name: "headless without ready endpoints: NXDOMAIN", qname: "empty.default.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: soaOwner},
		{name: "ClusterIP Service has no endpoint names", qname: "10-244-1-20.web.default.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: soaOwner},
		{name: "ExternalName: CNAME", qname: "ext.default.svc.cluster.local.", qtype: dns.TypeA,
			answer: []string{"ext.default.svc.cluster.local. CNAME www.example.com."}},
		{name: "ExternalName inside the zone is chased", qname: "alias.default.svc.cluster.local.", qtype: dns.TypeA,
			answer: []string{"alias.default.svc.cluster.local. CNAME web.default.svc.cluster.local.", "web.default.svc.cluster.local. A 10.96.0.50"}},
		{name: "PTR of a ClusterIP", qname: "50.0.96.10.in-addr.arpa.", qtype: dns.TypePTR,
			answer: []string{"50.0.96.10.in-addr.arpa. PTR web.default.svc.cluster.local."}},
		{name: "PTR of an IPv6 ClusterIP", qname: mustReverse(t, "fd00:10:96::60"), qtype: dns.TypePTR,
			answer: []string{mustReverse(t, "fd00:10:96::60") + " PTR dual.default.svc.cluster.local."}},
		{name: "PTR of a headless endpoint", qname: "5.1.244.10.in-addr.arpa.", qtype: dns.TypePTR,
			answer: []string{"5.1.244.10.in-addr.arpa. PTR db-0.db.default.svc.cluster.local."}},
		{name: "PTR of an endpoint without hostname", qname: "3.3.244.10.in-addr.arpa.", qtype: dns.TypePTR,
			answer: []string{"3.3.244.10.in-addr.arpa. PTR 10-244-3-3.anon.default.svc.cluster.local."}},
		{name: "PTR of an unknown address", qname: "9.9.9.9.in-addr.arpa.", qtype: dns.TypePTR, rcode: dns.RcodeNameError, soa: "in-addr.arpa."},
		{name: "pod record", qname: "10-244-1-5.default.pod.cluster.local.", qtype: dns.TypeA,
			answer: []string{"10-244-1-5.default.pod.cluster.local. A 10.244.1.5"}},
		{name: "pod record that is no address", qname: "web.default.pod.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: soaOwner},
		{name: "missing Service: NXDOMAIN", qname: "nope.default.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: soaOwner},
		{name: "missing namespace: NXDOMAIN", qname: "web.nope.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: soaOwner},
		{name: "namespace with Services exists: NODATA", qname: "default.svc.cluster.local.", qtype: dns.TypeA, soa: soaOwner},
		{name: "namespace without Services: NXDOMAIN", qname: "empty-ns.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: soaOwner},
		{name: "svc is an empty non-terminal", qname: "svc.cluster.local.", qtype: dns.TypeA, soa: soaOwner},
		{name: "unknown name under the zone", qname: "what.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: soaOwner},
		// The search list of a pod in default turns "web" into these; the
		// ones that do not exist are NXDOMAIN whatever the list.
		{name: "search expansion of a full name", qname: "web.default.svc.cluster.local.default.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: soaOwner},
		{name: "web.default expanded by svc.cluster.local", qname: "web.default.svc.cluster.local.", qtype: dns.TypeA,
			answer: []string{"web.default.svc.cluster.local. A 10.96.0.50"}},
		{name: "web.default expanded by the namespace", qname: "web.default.default.svc.cluster.local.", qtype: dns.TypeA, rcode: dns.RcodeNameError, soa: soaOwner},
		{name: "apex SOA", qname: "cluster.local.", qtype: dns.TypeSOA, answer: []string{"cluster.local. SOA ns.dns.cluster.local. hostmaster.cluster.local. SERIAL 7200 1800 86400 30"}},
		{name: "apex NS", qname: "cluster.local.", qtype: dns.TypeNS, answer: []string{"cluster.local. NS ns.dns.cluster.local."},
			extra: []string{"ns.dns.cluster.local. A 10.96.0.10"}},
		{name: "outside the cluster domain: SERVFAIL", qname: "example.com.", qtype: dns.TypeA, rcode: dns.RcodeServerFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, network := range []string{"udp", "tcp"} {
				r := query(t, s, network, tt.qname, tt.qtype)
				if r.Rcode != tt.rcode {
					t.Errorf("%s: rcode %s, want %s", network, dns.RcodeToString[r.Rcode], dns.RcodeToString[tt.rcode])
				}
				if diff := cmp.Diff(tt.answer, serialless(rrs(r.Answer))); diff != "" {
					t.Errorf("%s: answer (-want +got):\n%s", network, diff)
				}
				if diff := cmp.Diff(tt.extra, rrs(r.Extra)); diff != "" {
					t.Errorf("%s: additional (-want +got):\n%s", network, diff)
				}
				var soa string
				if len(r.Ns) == 1 {
					if rr, ok := r.Ns[0].(*dns.SOA); ok {
						soa = rr.Hdr.Name
						if rr.Minttl != DefaultTTL {
							t.Errorf("%s: SOA minimum %d, want %d", network, rr.Minttl, DefaultTTL)
						}
					}
				}
				if soa != tt.soa || len(r.Ns) > 1 {
					t.Errorf("%s: authority %v, want the SOA of %q", network, r.Ns, tt.soa)
				}
				if tt.rcode != dns.RcodeServerFailure && !r.Authoritative {
					t.Errorf("%s: answer not authoritative", network)
				}
			}
		})
	}
}

// serialless writes SOA serials, which are times, as SERIAL.
func serialless(list []string) []string {
	for i, s := range list {
		if f := strings.Fields(s); len(f) == 9 && f[1] == "SOA" {
			f[4] = "SERIAL"
			list[i] = strings.Join(f, " ")
		}
	}
	return list
}

func mustReverse(t *testing.T, ip string) string {
	t.Helper()
	r, err := dns.ReverseAddr(ip)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOutsideZoneSaysWhy(t *testing.T) {
	s, _ := startServer(t)
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion("klab.dev.", dns.TypeA)
	m.SetEdns0(1232, false)
	r, _, err := c.Exchange(m, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	var ede *dns.EDNS0_EDE
	if opt := r.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if e, ok := o.(*dns.EDNS0_EDE); ok {
				ede = e
			}
		}
	}
	if ede == nil || ede.InfoCode != dns.ExtendedErrorCodeNoReachableAuthority || !strings.Contains(ede.ExtraText, "no upstream") {
		t.Errorf("extended error %+v, want No Reachable Authority saying there is no upstream", ede)
	}
}

func TestFollowsChanges(t *testing.T) {
	s, client := startServer(t, fixtureObjects()...)
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.7.7", ClusterIPs: []string{"10.96.7.7"}}}
	if _, err := client.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRcode(t, s, "cart.shop.svc.cluster.local.", dns.RcodeSuccess, 1)
	if err := client.CoreV1().Services("shop").Delete(ctx, "cart", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRcode(t, s, "cart.shop.svc.cluster.local.", dns.RcodeNameError, 0)
}

func waitRcode(t *testing.T, s *Server, name string, rcode, answers int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := query(t, s, "udp", name, dns.TypeA)
		if r.Rcode == rcode && len(r.Answer) == answers {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s with %d answers, want %s with %d", name, dns.RcodeToString[r.Rcode], len(r.Answer), dns.RcodeToString[rcode], answers)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTruncatesOverUDP(t *testing.T) {
	objs := fixtureObjects()
	// A headless Service with more endpoints than 512 bytes can carry.
	objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "big"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}})
	objs = append(objs, bigSlice("big", 60))
	s, _ := startServer(t, objs...)
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion("big.default.svc.cluster.local.", dns.TypeA)
	r, _, err := c.Exchange(m, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	r.Compress = true // as it came over the wire
	if !r.Truncated || r.Len() > dns.MinMsgSize || len(r.Answer) >= 60 {
		t.Errorf("UDP answer of %d bytes, truncated %v; want at most %d and TC set", r.Len(), r.Truncated, dns.MinMsgSize)
	}
	if r := query(t, s, "tcp", "big.default.svc.cluster.local.", dns.TypeA); r.Truncated || len(r.Answer) != 60 {
		t.Errorf("TCP answer has %d records, truncated %v; want all 60", len(r.Answer), r.Truncated)
	}
}

func TestBadQueries(t *testing.T) {
	s, _ := startServer(t)
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
	m.Question = append(m.Question, m.Question[0])
	r, _, err := c.Exchange(m, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if r.Rcode != dns.RcodeFormatError {
		t.Errorf("two questions: %s, want FORMERR", dns.RcodeToString[r.Rcode])
	}
	m = new(dns.Msg)
	m.SetNotify("cluster.local.")
	if r, _, err = c.Exchange(m, s.Addr()); err != nil {
		t.Fatal(err)
	}
	if r.Rcode != dns.RcodeNotImplemented {
		t.Errorf("NOTIFY: %s, want NOTIMP", dns.RcodeToString[r.Rcode])
	}
	// Garbage does not stop the server.
	conn, err := c.Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte{1, 2, 3})
	conn.Close()
	if r := query(t, s, "udp", "kubernetes.default.svc.cluster.local.", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("after garbage: %s", dns.RcodeToString[r.Rcode])
	}
}

func TestStatusAndMetrics(t *testing.T) {
	s, _ := startServer(t, fixtureObjects()...)
	query(t, s, "udp", "web.default.svc.cluster.local.", dns.TypeA)
	query(t, s, "tcp", "nope.default.svc.cluster.local.", dns.TypeA)
	get := func(path string) string {
		resp, err := http.Get("http://" + s.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	var st Status
	if err := json.Unmarshal([]byte(get("/debug/klab/status")), &st); err != nil {
		t.Fatal(err)
	}
	if !st.Ready || st.Queries != 2 || st.Responses["NOERROR"] != 1 || st.Responses["NXDOMAIN"] != 1 || st.Services != 9 || st.Domain != "cluster.local." {
		t.Errorf("status %+v", st)
	}
	metrics := get("/metrics")
	for _, want := range []string{
		`coredns_dns_requests_total{proto="udp",server="dns://:53",type="A",zone="cluster.local."} 1`,
		`coredns_dns_responses_total{rcode="NXDOMAIN",server="dns://:53",zone="cluster.local."} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
	if got := get("/ready"); got != "OK\n" {
		t.Errorf("/ready %q", got)
	}
}

func TestClusterIP(t *testing.T) {
	for cidr, want := range map[string]string{"10.96.0.0/12": "10.96.0.10", "10.100.0.0/16": "10.100.0.10", "fd00:10:96::/108": "fd00:10:96::a"} {
		if got, err := ClusterIP(cidr); err != nil || got != want {
			t.Errorf("ClusterIP(%s) = %q, %v; want %s", cidr, got, err, want)
		}
	}
	for _, bad := range []string{"10.96.0.0/29", "nonsense"} {
		if _, err := ClusterIP(bad); err == nil {
			t.Errorf("ClusterIP(%s) gave no error", bad)
		}
	}
}
