package dns

import (
	"net"
	"strings"

	"github.com/miekg/dns"
)

// noUpstream is the text of the Extended DNS Error for a name outside the
// server's zones.
const noUpstream = "klab's cluster DNS has no upstream resolver (klab runs offline): only names of the cluster domain and the reverse zones are answered"

// ServeDNS answers one query.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	proto := "udp"
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		proto = "tcp"
	}
	m := s.answer(req)
	if proto == "udp" {
		// Truncate to the client's buffer, which sets TC when records had
		// to go, so that the client asks again over TCP.
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = max(int(opt.UDPSize()), dns.MinMsgSize)
		}
		m.Truncate(size)
	}
	var qtype uint16
	if len(req.Question) == 1 {
		qtype = req.Question[0].Qtype
	}
	s.stats.record(proto, qtype, m.Rcode)
	if err := w.WriteMsg(m); err != nil {
		s.log.Debug("write answer", "remote", w.RemoteAddr().String(), "err", err)
	}
}

// answer builds the response to req.
func (s *Server) answer(req *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	if req.Opcode != dns.OpcodeQuery {
		m.SetRcode(req, dns.RcodeNotImplemented)
		return m
	}
	if len(req.Question) != 1 {
		// RFC 9619: a query has exactly one question.
		m.SetRcodeFormatError(req)
		return m
	}
	m.SetReply(req)
	m.RecursionAvailable = true
	q := req.Question[0]
	if q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY {
		m.Rcode = dns.RcodeRefused
		return m
	}
	r := s.zone.resolve(strings.ToLower(dns.Fqdn(q.Name)), q.Qtype)
	m.Rcode = r.rcode
	m.Answer, m.Extra = r.answer, r.extra
	if r.outside {
		if opt := req.IsEdns0(); opt != nil {
			ede := &dns.EDNS0_EDE{InfoCode: dns.ExtendedErrorCodeNoReachableAuthority, ExtraText: noUpstream}
			m.SetEdns0(dns.DefaultMsgSize, false)
			m.IsEdns0().Option = append(m.IsEdns0().Option, ede)
		}
		return m
	}
	m.Authoritative = true
	// Answers keep the case the client asked in (0x20 randomisation).
	for _, rr := range m.Answer {
		if strings.EqualFold(rr.Header().Name, q.Name) {
			rr.Header().Name = q.Name
		}
	}
	if len(m.Answer) == 0 || m.Rcode == dns.RcodeNameError {
		m.Ns = []dns.RR{s.zone.soa(r.zone)}
	}
	if req.IsEdns0() != nil {
		m.SetEdns0(dns.DefaultMsgSize, false)
	}
	return m
}
