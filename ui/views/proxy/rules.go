package proxy

import (
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// A kube-proxy prints every Service's rules at once, as the real tool
// would: iptables-save (iptables and userspace), ipvsadm -Ln (ipvs), nft
// list ruleset (nftables). The view cuts out one Service's part, still in
// the tool's format: the iptables lines that name the Service or sit in its
// own chains, its ipvs virtual servers, its nft elements and chains.

// toolOf names the tool whose output a mode's rules imitate.
func toolOf(mode string) string {
	switch mode {
	case proxier.ModeIPVS:
		return "ipvsadm -Ln"
	case proxier.ModeNFTables:
		return "nft list ruleset"
	case proxier.ModeIPTables, proxier.ModeUserspace:
		return "iptables-save"
	}
	return mode
}

// serviceRules returns the lines of rules that concern s.
func serviceRules(rules string, s *service) []string {
	lines := strings.Split(strings.TrimRight(rules, "\n"), "\n")
	if len(lines) == 0 || !s.proxied() {
		return nil
	}
	m := newMatcher(s)
	first := strings.TrimSpace(lines[0])
	switch {
	case strings.HasPrefix(first, "IP Virtual Server"):
		return ipvsRules(lines, m)
	case strings.HasPrefix(first, "table "):
		return nftRules(lines, m)
	default:
		return iptablesRules(lines, m)
	}
}

// matcher recognises a Service in rules.
type matcher struct {
	// name matches "namespace/name" as a rule comment or a chain name
	// carries it, and not another Service whose name starts the same.
	name      *regexp.Regexp
	clusterIP string
	ports     map[string]bool // "tcp/80"
	nodePorts map[string]bool // "tcp/30080"
}

func newMatcher(s *service) *matcher {
	m := &matcher{
		// Before the name: a space, a quote, or an nft object's
		// "service-HASH-" prefix; after it: the end, a space, a quote, a
		// port name or an nft name's next part.
		name:      regexp.MustCompile(`(?:^|[\s"]|-[A-Z0-9]{8}-)` + regexp.QuoteMeta(s.key()) + `(?:$|[\s":/])`),
		clusterIP: s.ClusterIP,
		ports:     map[string]bool{},
		nodePorts: map[string]bool{},
	}
	for _, p := range s.Ports {
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		m.ports[proto+"/"+strconv.Itoa(int(p.Port))] = true
		if p.NodePort != 0 {
			m.nodePorts[proto+"/"+strconv.Itoa(int(p.NodePort))] = true
		}
	}
	return m
}

func (m *matcher) names(line string) bool { return m.name.MatchString(line) }

// ownChain reports whether an iptables chain belongs to one Service alone.
func ownChain(chain string) bool {
	for _, p := range []string{"KUBE-SVC-", "KUBE-SVL-", "KUBE-SEP-", "KUBE-EXT-", "KUBE-FW-", "KUBE-XLB-"} {
		if strings.HasPrefix(chain, p) {
			return true
		}
	}
	return false
}

// ruleChains returns the chain a "-A" rule is in and the chain it jumps
// or goes to, if any.
func ruleChains(line string) (chain, target string) {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "-A" {
		return "", ""
	}
	chain = f[1]
	for i := 2; i+1 < len(f); i++ {
		if f[i] == "-j" || f[i] == "-g" {
			target = f[i+1]
		}
	}
	return chain, target
}

// iptablesRules keeps, table by table, the rules that name the Service and
// every rule of the chains that are its own (its KUBE-SVC, KUBE-SEP,
// KUBE-EXT... chains, found by following jumps), with their declarations.
func iptablesRules(lines []string, m *matcher) []string {
	own := map[string]bool{}
	for _, l := range lines {
		if chain, target := ruleChains(l); chain != "" && m.names(l) {
			if ownChain(chain) {
				own[chain] = true
			}
			if ownChain(target) {
				own[target] = true
			}
		}
	}
	// A KUBE-EXT chain jumps to the KUBE-SVC chain without naming the
	// Service: follow jumps out of own chains until nothing is added.
	for grew := true; grew; {
		grew = false
		for _, l := range lines {
			if chain, target := ruleChains(l); own[chain] && ownChain(target) && !own[target] {
				own[target], grew = true, true
			}
		}
	}

	var out, decls, rules []string
	table := ""
	used := map[string]bool{}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "*"):
			table, decls, rules, used = l, nil, nil, map[string]bool{}
		case strings.HasPrefix(l, ":"):
			decls = append(decls, l)
		case strings.HasPrefix(l, "-A "):
			if chain, _ := ruleChains(l); own[chain] || m.names(l) {
				rules = append(rules, l)
				used[chain] = true
			}
		case l == "COMMIT":
			if len(rules) == 0 {
				continue
			}
			out = append(out, table)
			for _, d := range decls {
				name, _, _ := strings.Cut(strings.TrimPrefix(d, ":"), " ")
				if used[name] || own[name] {
					out = append(out, d)
				}
			}
			out = append(out, rules...)
			out = append(out, l)
		}
	}
	return out
}

// ipvsRules keeps ipvsadm's header and the virtual servers of the Service:
// its ClusterIP ports, and its NodePorts on any node address.
func ipvsRules(lines []string, m *matcher) []string {
	var out []string
	keep := false
	for i, l := range lines {
		f := strings.Fields(l)
		switch {
		case i < 3 && !isVirtualServer(f):
			out = append(out, l) // the header
		case isVirtualServer(f):
			host, port, _ := net.SplitHostPort(f[1])
			proto := strings.ToLower(f[0]) + "/" + port
			keep = (host == m.clusterIP && m.ports[proto]) || (host != m.clusterIP && m.nodePorts[proto])
			if keep {
				out = append(out, l)
			}
		case keep:
			out = append(out, l)
		}
	}
	if len(out) <= 3 {
		return nil
	}
	return out
}

func isVirtualServer(f []string) bool {
	if len(f) < 2 {
		return false
	}
	switch f[0] {
	case "TCP", "UDP", "SCTP":
		return strings.Contains(f[1], ":")
	}
	return false
}

// nftObject is one set, map or chain of an nft table, as printed.
type nftObject struct {
	name  string
	lines []string
}

// nftRules keeps the table's frame, the Service's own chains and sets
// whole, and of the shared sets and maps only the Service's elements.
func nftRules(lines []string, m *matcher) []string {
	var out []string
	var cur *nftObject
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case cur == nil && (strings.HasPrefix(t, "set ") || strings.HasPrefix(t, "map ") || strings.HasPrefix(t, "chain ")):
			f := strings.Fields(t)
			cur = &nftObject{name: f[1], lines: []string{l}}
		case cur != nil:
			cur.lines = append(cur.lines, l)
			if t == "}" {
				if kept := nftKeep(cur, m); len(kept) > 0 {
					out = append(out, "")
					out = append(out, kept...)
				}
				cur = nil
			}
		case t == "" || strings.HasPrefix(t, "comment "):
		default: // the table's first and last lines
			out = append(out, l)
		}
	}
	return out
}

// nftKeep returns obj's lines if it belongs to the Service, obj with only
// the Service's elements if it is shared and has some, else nothing.
func nftKeep(obj *nftObject, m *matcher) []string {
	if m.names(obj.name) {
		return obj.lines
	}
	var out, elems []string
	in, indent := false, ""
	for _, l := range obj.lines {
		if !in {
			before, rest, found := strings.Cut(l, "elements = {")
			if !found {
				out = append(out, l)
				continue
			}
			in, indent, l = true, before, rest
		}
		body, closed := strings.CutSuffix(strings.TrimSpace(l), "}")
		for _, e := range strings.Split(body, ",") {
			if e = strings.TrimSpace(e); e != "" && m.element(e) {
				elems = append(elems, e)
			}
		}
		if closed {
			in = false
			if len(elems) > 0 {
				// One element to a line, aligned as nft aligns them.
				cont := indent + strings.Repeat(" ", len("elements = { "))
				out = append(out, indent+"elements = { "+strings.Join(elems, ",\n"+cont)+" }")
			}
		}
	}
	if len(elems) == 0 {
		return nil
	}
	return strings.Split(strings.Join(out, "\n"), "\n")
}

// element reports whether an nft set or map element is the Service's: its
// ClusterIP, a ClusterIP port or NodePort key, or a verdict that goes to
// one of its chains.
func (m *matcher) element(e string) bool {
	if m.names(e) {
		return true
	}
	key, _, _ := strings.Cut(e, " : ")
	key, _, _ = strings.Cut(key, " comment ")
	f := strings.Split(key, " . ")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	switch len(f) {
	case 1: // an address set
		return f[0] == m.clusterIP
	case 2: // proto . nodeport
		return m.nodePorts[f[0]+"/"+f[1]]
	case 3: // address . proto . port
		return f[0] == m.clusterIP && m.ports[f[1]+"/"+f[2]]
	}
	return false
}

// Counters that move with traffic and time, not with the rules: ipvs's
// connection counts on each real server, and the time left on nft's
// session affinity elements.
var (
	ipvsCounters = regexp.MustCompile(`^(\s*-> \S+\s+\S+\s+\d+)\s+\d+\s+\d+\s*$`)
	nftExpires   = regexp.MustCompile(`expires \w+`)
)

// stable returns lines without their live counters: what changes only
// when the rules do, for telling a change from traffic passing by.
func stable(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		l = ipvsCounters.ReplaceAllString(l, "$1")
		out[i] = nftExpires.ReplaceAllString(l, "expires")
	}
	return out
}
