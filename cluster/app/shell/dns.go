package shell

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// dnsTimeout bounds one DNS exchange, as a resolver's timeout:5.
const dnsTimeout = 5 * time.Second

// exchange sends one query for name and qtype to server (an address of
// resolv.conf, port 53) through the pod's dialer: over UDP, and again over
// TCP when the answer came back truncated. A dialer that can only carry a
// stream (the local runtime's way to a ClusterIP, through kube-proxy)
// gets the query over TCP at once.
func (t *tool) exchange(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(dns.DefaultMsgSize, false)
	r, proto, err := t.exchangeOver(ctx, "udp", server, m)
	if err == nil && r.Truncated {
		r, proto, err = t.exchangeOver(ctx, "tcp", server, m)
	}
	return r, proto, err
}

func (t *tool) exchangeOver(ctx context.Context, network, server string, m *dns.Msg) (*dns.Msg, string, error) {
	ctx, cancel := context.WithTimeout(ctx, dnsTimeout)
	defer cancel()
	c, err := t.dial(ctx, network, net.JoinHostPort(server, "53"))
	if err != nil {
		return nil, "", err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	proto := "UDP"
	if _, ok := c.(net.PacketConn); !ok {
		proto = "TCP"
	}
	// dns.Conn frames by the connection's kind: bare datagrams on a
	// packet connection, a length prefix on a stream.
	conn := &dns.Conn{Conn: c}
	if err := conn.WriteMsg(m); err != nil {
		return nil, proto, err
	}
	for {
		r, err := conn.ReadMsg()
		if err != nil {
			return nil, proto, err
		}
		if r.Id == m.Id {
			return r, proto, nil
		}
	}
}

// searchNames returns the names a resolver tries for name, in order, with
// the search list and ndots of resolv.conf.
func searchNames(name string, rc resolvConf) []string {
	if strings.HasSuffix(name, ".") {
		return []string{name}
	}
	var out []string
	dots := strings.Count(name, ".")
	if dots >= rc.ndots {
		out = append(out, name+".")
	}
	for _, s := range rc.search {
		out = append(out, name+"."+strings.TrimSuffix(s, ".")+".")
	}
	if dots < rc.ndots {
		out = append(out, name+".")
	}
	return out
}

// nslookup asks the pod's nameserver (or the one given) as busybox's
// nslookup does: each name of the search list in turn, A and AAAA (or
// -type=T), printing what the server answered; an address is looked up
// in reverse (PTR).
func nslookup(t *tool, args []string) int {
	qtypes := []uint16{dns.TypeA, dns.TypeAAAA}
	var ops []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "-type="); ok {
			qtypes = nil
			if qt, ok := dns.StringToType[strings.ToUpper(v)]; ok {
				qtypes = []uint16{qt}
			}
			if len(qtypes) == 0 {
				fmt.Fprintf(t.stderr, "nslookup: invalid query type \"%s\"\n", v)
				return 1
			}
			continue
		}
		if v, ok := strings.CutPrefix(a, "-query="); ok {
			return nslookup(t, append([]string{"-type=" + v}, ops...))
		}
		ops = append(ops, a)
	}
	if len(ops) == 0 || len(ops) > 2 {
		fmt.Fprintln(t.stderr, "usage: nslookup [-type=QUERY_TYPE] HOST [DNS_SERVER]")
		return 1
	}
	rc := t.resolvConf()
	if len(ops) == 2 {
		rc.nameservers = []string{ops[1]}
	}
	if len(rc.nameservers) == 0 {
		fmt.Fprintln(t.stderr, "nslookup: no nameserver in /etc/resolv.conf")
		return 1
	}
	server := rc.nameservers[0]
	fmt.Fprintf(t.stdout, "Server:\t\t%s\nAddress:\t%s\n\n", server, net.JoinHostPort(server, "53"))

	host := ops[0]
	names := searchNames(host, rc)
	if arpa, err := dns.ReverseAddr(host); err == nil && net.ParseIP(host) != nil {
		names, qtypes = []string{arpa}, []uint16{dns.TypePTR}
	}
	// As a resolver does, the names of the search list are tried in turn
	// and only the first that answers is printed; the ones that did not
	// exist are no news to the reader. When none answers, the name as
	// typed is reported once, with the last name's answer code.
	failed := ""
	for _, name := range names {
		found := false
		failed = ""
		for _, qt := range qtypes {
			r, _, err := t.exchange(t.ctx, server, name, qt)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					fmt.Fprintf(t.stdout, ";; connection timed out; no servers could be reached\n\n")
				} else {
					fmt.Fprintf(t.stdout, ";; connection to %s failed: %v\n\n", server, err)
				}
				return 1
			}
			if r.Rcode != dns.RcodeSuccess {
				failed = dns.RcodeToString[r.Rcode]
				break
			}
			for _, rr := range r.Answer {
				found = true
				printNslookupRR(t, rr)
			}
		}
		if found {
			fmt.Fprintln(t.stdout)
			return 0
		}
	}
	if failed == "" {
		fmt.Fprintf(t.stdout, "*** Can't find %s: No answer\n\n", strings.TrimSuffix(host, "."))
		return 1
	}
	fmt.Fprintf(t.stdout, "** server can't find %s: %s\n\n", strings.TrimSuffix(host, "."), failed)
	return 1
}

// printNslookupRR prints one answer record in busybox's words.
func printNslookupRR(t *tool, rr dns.RR) {
	name := strings.TrimSuffix(rr.Header().Name, ".")
	switch v := rr.(type) {
	case *dns.A:
		fmt.Fprintf(t.stdout, "Name:\t%s\nAddress: %s\n", name, v.A)
	case *dns.AAAA:
		fmt.Fprintf(t.stdout, "Name:\t%s\nAddress: %s\n", name, v.AAAA)
	case *dns.CNAME:
		fmt.Fprintf(t.stdout, "%s\tcanonical name = %s\n", name, strings.TrimSuffix(v.Target, "."))
	case *dns.PTR:
		fmt.Fprintf(t.stdout, "%s\tname = %s\n", name, strings.TrimSuffix(v.Ptr, "."))
	case *dns.SRV:
		fmt.Fprintf(t.stdout, "%s\tservice = %d %d %d %s\n", name, v.Priority, v.Weight, v.Port, strings.TrimSuffix(v.Target, "."))
	case *dns.TXT:
		fmt.Fprintf(t.stdout, "%s\ttext = \"%s\"\n", name, strings.Join(v.Txt, ""))
	case *dns.NS:
		fmt.Fprintf(t.stdout, "%s\tnameserver = %s\n", name, strings.TrimSuffix(v.Ns, "."))
	case *dns.SOA:
		fmt.Fprintf(t.stdout, "%s\n\torigin = %s\n\tmail addr = %s\n\tserial = %d\n\trefresh = %d\n\tretry = %d\n\texpire = %d\n\tminimum = %d\n",
			name, strings.TrimSuffix(v.Ns, "."), strings.TrimSuffix(v.Mbox, "."), v.Serial, v.Refresh, v.Retry, v.Expire, v.Minttl)
	default:
		fmt.Fprintln(t.stdout, rr.String())
	}
}

// dig asks one question and prints the whole answer as dig does:
// dig [@SERVER] NAME [TYPE] [+short] [+search] [+tcp], or dig -x ADDR.
// Unlike nslookup it uses the search list only with +search.
func dig(t *tool, args []string) int {
	rc := t.resolvConf()
	var name, server string
	qtype := dns.TypeA
	short, search := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "@"):
			server = a[1:]
		case a == "+short":
			short = true
		case a == "+search":
			search = true
		case strings.HasPrefix(a, "+"):
			// Other query options change only how dig prints.
		case a == "-x" && i+1 < len(args):
			arpa, err := dns.ReverseAddr(args[i+1])
			if err != nil {
				return t.errorf("'%s' is not a legal IP address", args[i+1])
			}
			name, qtype, i = arpa, dns.TypePTR, i+1
		case a == "-t" && i+1 < len(args):
			qt, ok := dns.StringToType[strings.ToUpper(args[i+1])]
			if !ok {
				return t.errorf("invalid type: %s", args[i+1])
			}
			qtype, i = qt, i+1
		default:
			if qt, ok := dns.StringToType[strings.ToUpper(a)]; ok && name != "" {
				qtype = qt
			} else if name == "" {
				name = a
			} else {
				return t.errorf("too many names: %s", a)
			}
		}
	}
	if name == "" {
		fmt.Fprintln(t.stderr, "usage: dig [@SERVER] NAME [TYPE] [+short] [+search] | dig -x ADDR")
		return 1
	}
	if server == "" {
		if len(rc.nameservers) == 0 {
			return t.errorf("no nameserver in /etc/resolv.conf")
		}
		server = rc.nameservers[0]
	}
	names := []string{dns.Fqdn(name)}
	if search {
		names = searchNames(name, rc)
	}
	var r *dns.Msg
	var proto string
	start := time.Now()
	for _, n := range names {
		var err error
		r, proto, err = t.exchange(t.ctx, server, n, qtype)
		if err != nil {
			fmt.Fprintf(t.stdout, ";; communications error to %s#53: %v\n", server, err)
			return 9
		}
		if r.Rcode != dns.RcodeNameError {
			break
		}
	}
	elapsed := time.Since(start)
	if short {
		for _, rr := range r.Answer {
			fmt.Fprintln(t.stdout, strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
		return 0
	}
	fmt.Fprintf(t.stdout, "\n; <<>> klab dig <<>> %s\n", strings.Join(args, " "))
	// miekg/dns prints the message as dig's sections.
	fmt.Fprintln(t.stdout, r.String())
	fmt.Fprintf(t.stdout, ";; Query time: %d msec\n;; SERVER: %s#53(%s) (%s)\n;; WHEN: %s\n;; MSG SIZE  rcvd: %d\n\n",
		elapsed.Milliseconds(), server, server, proto, time.Now().Format("Mon Jan 02 15:04:05 MST 2006"), r.Len())
	return 0
}
