package proxier

import (
	"bytes"
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// This file is a small netfilter: tables of chains of rules, each rule both
// the words kube-proxy writes (for iptables-save output) and the matches and
// target the kernel evaluates. A rule is built once, by calling its builder
// methods in the order kube-proxy writes the arguments, so the rule a student
// reads is exactly the rule that is evaluated.

// ipTable is one iptables table ("filter" or "nat").
type ipTable struct {
	name   string
	chains []*ipChain // in the order iptables-save lists them
	byName map[string]*ipChain
	lines  int // "-A" lines, for the rule count
}

func newIPTable(name string) *ipTable {
	return &ipTable{name: name, byName: make(map[string]*ipChain)}
}

// ipChain is a chain; built-in chains have a policy, kube-proxy's have none.
type ipChain struct {
	name    string
	builtin bool
	rules   []*ipRule
}

// chain returns the named chain, declaring it if it is new.
func (t *ipTable) chain(name string, builtin bool) *ipChain {
	if c, ok := t.byName[name]; ok {
		return c
	}
	c := &ipChain{name: name, builtin: builtin}
	t.chains = append(t.chains, c)
	t.byName[name] = c
	return c
}

// appendRule adds a finished rule at the end of its chain ("-A").
func (t *ipTable) appendRule(chain string, r *ipRule) {
	c := t.byName[chain]
	c.rules = append(c.rules, r)
	t.lines++
}

// write prints the table as iptables-save does: "*table", the chain
// declarations, the rules of each chain in order, "COMMIT".
func (t *ipTable) write(buf *bytes.Buffer) {
	buf.WriteString("*" + t.name + "\n")
	for _, c := range t.chains {
		if c.builtin {
			buf.WriteString(":" + c.name + " ACCEPT [0:0]\n")
		} else {
			buf.WriteString(":" + c.name + " - [0:0]\n")
		}
	}
	for _, c := range t.chains {
		for _, r := range c.rules {
			buf.WriteString("-A " + c.name)
			for _, w := range r.words {
				buf.WriteByte(' ')
				buf.WriteString(w)
			}
			buf.WriteByte('\n')
		}
	}
	buf.WriteString("COMMIT\n")
}

// targetKind is what a rule does when it matches.
type targetKind int

const (
	targetJump       targetKind = iota // continue in another chain, come back
	targetReturn                       // leave this chain
	targetMark                         // set bits of the packet mark, continue
	targetXorMark                      // flip bits of the packet mark, continue
	targetDNAT                         // rewrite the destination: the endpoint
	targetRedirect                     // rewrite the destination to a local port
	targetMasquerade                   // SNAT to the outgoing interface
	targetAccept
	targetDrop
	targetReject
)

// ipRule is one rule: the words as written and the compiled matches.
type ipRule struct {
	words []string

	proto      string
	dst, src   addrMatch
	dport      int
	dstLocal   bool // -m addrtype --dst-type LOCAL
	srcLocal   bool // -m addrtype --src-type LOCAL
	mark       uint32
	markMask   uint32
	markNeg    bool
	ctState    string // -m conntrack --ctstate / -m state --state
	recent     string // -m recent --name
	recentSecs int    // --rcheck --seconds; zero with recent set means --set
	threshold  uint32 // -m statistic: (rand & 0x7FFFFFFF) < threshold
	statistic  bool

	target    targetKind
	jumpTo    string
	jump      *ipChain // resolved by link
	markBits  uint32
	dnat      Endpoint
	redirect  int
	hasMark   bool
	hasDport  bool
	hasRecent bool
}

// addrMatch is "-d" or "-s" as the kernel keeps it: address and mask as
// 32-bit numbers, possibly negated.
type addrMatch struct {
	set, negated bool
	addr, mask   uint32
}

func newAddrMatch(p netip.Prefix, negated bool) addrMatch {
	mask := ^uint32(0) << (32 - p.Bits())
	if p.Bits() == 0 {
		mask = 0
	}
	return addrMatch{set: true, negated: negated, addr: addrValue(p.Addr()) & mask, mask: mask}
}

func (m addrMatch) matches(a uint32) bool {
	return !m.set || (a&m.mask == m.addr) != m.negated
}

func newRule() *ipRule { return &ipRule{} }

func (r *ipRule) add(words ...string) *ipRule {
	r.words = append(r.words, words...)
	return r
}

// comment adds "-m comment --comment"; text with spaces is quoted, as
// kube-proxy quotes it.
func (r *ipRule) comment(text string) *ipRule {
	if strings.ContainsRune(text, ' ') {
		text = `"` + text + `"`
	}
	return r.add("-m", "comment", "--comment", text)
}

// mProto adds "-m tcp -p tcp", the order the iptables proxier writes.
func (r *ipRule) mProto(p string) *ipRule {
	r.proto = p
	return r.add("-m", p, "-p", p)
}

// pProto adds "-p tcp -m tcp", the order the userspace proxier writes.
func (r *ipRule) pProto(p string) *ipRule {
	r.proto = p
	return r.add("-p", p, "-m", p)
}

func (r *ipRule) dstAddr(text string, p netip.Prefix, negated bool) *ipRule {
	r.dst = newAddrMatch(p, negated)
	if negated {
		r.add("!")
	}
	return r.add("-d", text)
}

// destination adds "-d ip" (kube-proxy writes ClusterIPs without "/32").
func (r *ipRule) destination(a netip.Addr) *ipRule {
	return r.dstAddr(a.String(), netip.PrefixFrom(a, 32), false)
}

func (r *ipRule) source(a netip.Addr) *ipRule {
	r.src = newAddrMatch(netip.PrefixFrom(a, 32), false)
	return r.add("-s", a.String())
}

func (r *ipRule) sourceNet(p netip.Prefix, negated bool) *ipRule {
	r.src = newAddrMatch(p, negated)
	if negated {
		r.add("!")
	}
	return r.add("-s", p.String())
}

func (r *ipRule) destPort(port int) *ipRule {
	r.dport, r.hasDport = port, true
	return r.add("--dport", strconv.Itoa(port))
}

func (r *ipRule) addrTypeDstLocal() *ipRule {
	r.dstLocal = true
	return r.add("-m", "addrtype", "--dst-type", "LOCAL")
}

func (r *ipRule) addrTypeSrcLocal() *ipRule {
	r.srcLocal = true
	return r.add("-m", "addrtype", "--src-type", "LOCAL")
}

// markMatch adds "-m mark [!] --mark value/mask".
func (r *ipRule) markMatch(mark string, bits uint32, negated bool) *ipRule {
	r.mark, r.markMask, r.markNeg, r.hasMark = bits, bits, negated, true
	r.add("-m", "mark")
	if negated {
		r.add("!")
	}
	return r.add("--mark", mark+"/"+mark)
}

func (r *ipRule) conntrack(states string) *ipRule {
	r.ctState = states
	return r.add("-m", "conntrack", "--ctstate", states)
}

func (r *ipRule) state(states string) *ipRule {
	r.ctState = states
	return r.add("-m", "state", "--state", states)
}

// probability adds "-m statistic --mode random --probability p" with p as
// kube-proxy prints it; the kernel keeps lround(p * 2^31), as iptables'
// libxt_statistic computes it.
func (r *ipRule) probability(p string) *ipRule {
	f, _ := strconv.ParseFloat(p, 64)
	r.statistic = true
	r.threshold = uint32(math.Round(f * 0x80000000))
	return r.add("-m", "statistic", "--mode", "random", "--probability", p)
}

// recentCheck adds "-m recent --name n --rcheck --seconds s --reap".
func (r *ipRule) recentCheck(name string, seconds int) *ipRule {
	r.recent, r.recentSecs, r.hasRecent = name, seconds, true
	return r.add("-m", "recent", "--name", name, "--rcheck", "--seconds", strconv.Itoa(seconds), "--reap")
}

// recentSet adds "-m recent --name n --set".
func (r *ipRule) recentSet(name string) *ipRule {
	r.recent, r.hasRecent = name, true
	return r.add("-m", "recent", "--name", name, "--set")
}

func (r *ipRule) jumpChain(name string) *ipRule {
	r.target, r.jumpTo = targetJump, name
	return r.add("-j", name)
}

func (r *ipRule) verdict(kind targetKind, name string) *ipRule {
	r.target = kind
	return r.add("-j", name)
}

func (r *ipRule) orMark(mark string, bits uint32) *ipRule {
	r.target, r.markBits = targetMark, bits
	return r.add("-j", "MARK", "--or-mark", mark)
}

func (r *ipRule) xorMark(mark string, bits uint32) *ipRule {
	r.target, r.markBits = targetXorMark, bits
	return r.add("-j", "MARK", "--xor-mark", mark)
}

func (r *ipRule) masquerade() *ipRule {
	r.target = targetMasquerade
	return r.add("-j", "MASQUERADE", "--random-fully")
}

func (r *ipRule) dnatTo(ep Endpoint) *ipRule {
	r.target, r.dnat = targetDNAT, ep
	return r.add("-j", "DNAT", "--to-destination", ep.String())
}

func (r *ipRule) redirectTo(port int) *ipRule {
	r.target, r.redirect = targetRedirect, port
	return r.add("-j", "REDIRECT", "--to-ports", strconv.Itoa(port))
}

func (r *ipRule) dnatToProxy(host netip.Addr, port int) *ipRule {
	r.target = targetDNAT
	r.dnat = Endpoint{IP: host, Port: port}
	return r.add("-j", "DNAT", "--to-destination", r.dnat.String())
}

// link resolves every jump to its chain; call it once all chains exist.
func (t *ipTable) link() {
	for _, c := range t.chains {
		for _, r := range c.rules {
			if r.target == targetJump {
				r.jump = t.byName[r.jumpTo]
			}
		}
	}
}

// ipPacket is the first packet of a new connection, as netfilter sees it.
type ipPacket struct {
	src, dst           netip.Addr
	srcV, dstV         uint32 // src and dst as numbers, for address matches
	proto              string
	dport              int
	srcLocal, dstLocal bool // addrtype LOCAL: an address of this node
	mark               uint32
}

// recentLists are xt_recent's lists: per list name, when each source address
// was last seen.
type recentLists map[string]map[netip.Addr]time.Time

// ipEval is one evaluation: the packet, the clock and the randomness.
type ipEval struct {
	pkt    ipPacket
	now    time.Time
	rng    *rand.Rand
	recent recentLists
}

// ipVerdict is where a packet ended: a terminal target, or nowhere
// (fell off a built-in chain and took its ACCEPT policy).
type ipVerdict struct {
	target targetKind
	rule   *ipRule
}

// run evaluates a chain as netfilter does: rules in order, the first one
// whose matches all hold applies its target; a jump evaluates the other chain
// and comes back unless that chain ended in a terminal target. done is false
// when the chain ran out of rules or RETURNed.
func (e *ipEval) run(c *ipChain) (v ipVerdict, done bool) {
	for _, r := range c.rules {
		if !e.matches(r) {
			continue
		}
		switch r.target {
		case targetJump:
			if r.jump == nil {
				continue
			}
			if v, done := e.run(r.jump); done {
				return v, true
			}
		case targetReturn:
			return ipVerdict{}, false
		case targetMark:
			e.pkt.mark |= r.markBits
		case targetXorMark:
			e.pkt.mark ^= r.markBits
		default:
			return ipVerdict{target: r.target, rule: r}, true
		}
	}
	return ipVerdict{}, false
}

// matches checks the IP header fields first, then the match modules, as the
// kernel does. Modules with side effects (recent, statistic) come last, so
// they only act on packets the rest of the rule accepts.
func (e *ipEval) matches(r *ipRule) bool {
	p := &e.pkt
	if r.proto != "" && r.proto != p.proto {
		return false
	}
	if !r.dst.matches(p.dstV) || !r.src.matches(p.srcV) {
		return false
	}
	if r.hasDport && r.dport != p.dport {
		return false
	}
	if (r.dstLocal && !p.dstLocal) || (r.srcLocal && !p.srcLocal) {
		return false
	}
	if r.hasMark && (p.mark&r.markMask == r.mark) == r.markNeg {
		return false
	}
	if r.ctState != "" && !strings.Contains(r.ctState, "NEW") {
		return false // the first packet of a connection is in state NEW
	}
	if r.hasRecent && !e.recentMatch(r) {
		return false
	}
	if r.statistic && random32(e.rng)&0x7FFFFFFF >= r.threshold {
		return false
	}
	return true
}

// recentMatch implements "--rcheck --seconds s --reap" (was this source seen
// less than s seconds ago? forget it if not) and "--set" (remember this
// source now; always matches).
func (e *ipEval) recentMatch(r *ipRule) bool {
	list := e.recent[r.recent]
	if r.recentSecs == 0 {
		if list == nil {
			list = make(map[netip.Addr]time.Time)
			e.recent[r.recent] = list
		}
		list[e.pkt.src] = e.now
		return true
	}
	seen, ok := list[e.pkt.src]
	if !ok {
		return false
	}
	if e.now.Sub(seen) >= time.Duration(r.recentSecs)*time.Second {
		delete(list, e.pkt.src)
		return false
	}
	return true
}
