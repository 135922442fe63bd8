package proxier

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Small parsers for the three formats Render writes, written from the
// formats' shape and independent of the code that writes them, so that a
// test reading a rendering back checks its structure.

// saveTable is one table of iptables-save output.
type saveTable struct {
	chains   []string
	builtin  map[string]bool
	declared map[string]bool
	rules    map[string][][]string // chain -> rules -> words after "-A chain"
}

// iptablesTargets are the targets iptables itself provides.
var iptablesTargets = map[string]bool{
	"ACCEPT": true, "DROP": true, "REJECT": true, "RETURN": true, "DNAT": true,
	"MARK": true, "MASQUERADE": true, "REDIRECT": true,
}

// splitWords splits a rule line on spaces, keeping "quoted strings" whole.
func splitWords(line string) ([]string, error) {
	var words []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '"' {
			end := strings.IndexByte(line[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", line)
			}
			words = append(words, line[:end+2])
			line = line[end+2:]
			continue
		}
		end := strings.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		words = append(words, line[:end])
		line = line[end:]
	}
	return words, nil
}

// parseIPTablesSave parses iptables-save output and checks its structure:
// every table opens with "*name" and ends with COMMIT, chains are declared
// once before use, and every -j target is a built-in target or a chain
// declared in the same table.
func parseIPTablesSave(text string) (map[string]*saveTable, error) {
	tables := make(map[string]*saveTable)
	var cur *saveTable
	for n, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		where := fmt.Sprintf("line %d %q", n+1, line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "*"):
			if cur != nil {
				return nil, fmt.Errorf("%s: table opened before COMMIT", where)
			}
			cur = &saveTable{builtin: map[string]bool{}, declared: map[string]bool{}, rules: map[string][][]string{}}
			tables[line[1:]] = cur
		case line == "COMMIT":
			if cur == nil {
				return nil, fmt.Errorf("%s: COMMIT outside a table", where)
			}
			for chain, rules := range cur.rules {
				for _, words := range rules {
					for i, w := range words {
						if w == "-j" && i+1 < len(words) && !iptablesTargets[words[i+1]] && !cur.declared[words[i+1]] {
							return nil, fmt.Errorf("chain %s jumps to undeclared chain %s", chain, words[i+1])
						}
					}
				}
			}
			cur = nil
		case strings.HasPrefix(line, ":"):
			if cur == nil {
				return nil, fmt.Errorf("%s: chain outside a table", where)
			}
			f := strings.Fields(line[1:])
			if len(f) != 3 || f[2] != "[0:0]" || (f[1] != "-" && f[1] != "ACCEPT") {
				return nil, fmt.Errorf("%s: malformed chain declaration", where)
			}
			if cur.declared[f[0]] {
				return nil, fmt.Errorf("%s: chain declared twice", where)
			}
			cur.declared[f[0]] = true
			cur.builtin[f[0]] = f[1] == "ACCEPT"
			cur.chains = append(cur.chains, f[0])
		case strings.HasPrefix(line, "-A "):
			if cur == nil {
				return nil, fmt.Errorf("%s: rule outside a table", where)
			}
			words, err := splitWords(line)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if len(words) < 4 || !cur.declared[words[1]] {
				return nil, fmt.Errorf("%s: rule in undeclared chain", where)
			}
			cur.rules[words[1]] = append(cur.rules[words[1]], words[2:])
		default:
			return nil, fmt.Errorf("%s: not iptables-save syntax", where)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("last table has no COMMIT")
	}
	return tables, nil
}

// wordAfter returns the word following flag in a rule, or "".
func wordAfter(words []string, flag string) string {
	for i, w := range words {
		if w == flag && i+1 < len(words) {
			return words[i+1]
		}
	}
	return ""
}

// ipvsService is one virtual service of ipvsadm -Ln output.
type ipvsService struct {
	proto, addr, scheduler string
	persistent             int
	real                   []ipvsReal
}

type ipvsReal struct {
	addr, forward        string
	weight, active, inac int
}

var (
	ipvsServiceLine = regexp.MustCompile(`^(TCP|UDP|SCTP)  (\d+\.\d+\.\d+\.\d+:\d+) (rr|lc|dh|sh|sed|nq)( persistent (\d+))?$`)
	ipvsRealLine    = regexp.MustCompile(`^  -> (\d+\.\d+\.\d+\.\d+:\d+) +(Masq|Route|Tunnel) +(\d+) +(\d+) +(\d+) *$`)
)

// parseIPVSAdm parses ipvsadm -Ln output: the three header lines, then
// virtual services each followed by its real servers.
func parseIPVSAdm(text string) ([]ipvsService, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	header := []string{
		"IP Virtual Server version 1.2.1 (size=4096)",
		"Prot LocalAddress:Port Scheduler Flags",
		"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn",
	}
	if len(lines) < 3 {
		return nil, fmt.Errorf("output has %d lines, want the 3 header lines at least", len(lines))
	}
	for i, h := range header {
		if lines[i] != h {
			return nil, fmt.Errorf("header line %d is %q, want %q", i+1, lines[i], h)
		}
	}
	var out []ipvsService
	for n, line := range lines[3:] {
		if m := ipvsServiceLine.FindStringSubmatch(line); m != nil {
			s := ipvsService{proto: m[1], addr: m[2], scheduler: m[3]}
			if m[5] != "" {
				s.persistent, _ = strconv.Atoi(m[5])
			}
			out = append(out, s)
			continue
		}
		m := ipvsRealLine.FindStringSubmatch(line)
		if m == nil || len(out) == 0 {
			return nil, fmt.Errorf("line %d %q is neither a virtual service nor a real server under one", n+4, line)
		}
		r := ipvsReal{addr: m[1], forward: m[2]}
		r.weight, _ = strconv.Atoi(m[3])
		r.active, _ = strconv.Atoi(m[4])
		r.inac, _ = strconv.Atoi(m[5])
		out[len(out)-1].real = append(out[len(out)-1].real, r)
	}
	return out, nil
}

// nftRuleset is a parsed "nft list ruleset" table.
type nftRuleset struct {
	family, name string
	chains       map[string][]string // chain -> rule lines
	chainOrder   []string
	sets         map[string][]string // set or map -> elements
}

var nftTargetRef = regexp.MustCompile(`(?:jump|goto) ([A-Za-z0-9_./-]+)`)

// parseNFT parses one table of nft list ruleset output, checks that braces
// balance and that every jump and goto names a chain of the table.
func parseNFT(text string) (*nftRuleset, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	head := regexp.MustCompile(`^table (ip|ip6|inet) ([a-z-]+) \{$`).FindStringSubmatch(lines[0])
	if head == nil || lines[len(lines)-1] != "}" {
		return nil, fmt.Errorf("not a table: first line %q, last line %q", lines[0], lines[len(lines)-1])
	}
	rs := &nftRuleset{family: head[1], name: head[2], chains: map[string][]string{}, sets: map[string][]string{}}
	objectStart := regexp.MustCompile(`^\t(chain|set|map) (\S+) \{$`)
	var kind, name string
	var elements strings.Builder
	inElements := false
	for n, line := range lines[1 : len(lines)-1] {
		where := fmt.Sprintf("line %d %q", n+2, line)
		switch {
		case line == "" || (kind == "" && strings.HasPrefix(line, "\tcomment ")):
		case kind == "":
			m := objectStart.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("%s: expected a chain, set or map", where)
			}
			kind, name = m[1], m[2]
			if kind == "chain" {
				if _, dup := rs.chains[name]; dup {
					return nil, fmt.Errorf("%s: chain listed twice", where)
				}
				rs.chains[name] = nil
				rs.chainOrder = append(rs.chainOrder, name)
			} else {
				rs.sets[name] = nil
			}
		case line == "\t}":
			if inElements {
				return nil, fmt.Errorf("%s: elements not closed", where)
			}
			kind = ""
		case !strings.HasPrefix(line, "\t\t"):
			return nil, fmt.Errorf("%s: bad indentation", where)
		case kind == "chain":
			body := line[2:]
			if strings.HasPrefix(body, "type ") || strings.HasPrefix(body, "comment ") {
				continue
			}
			rs.chains[name] = append(rs.chains[name], body)
		default: // set or map
			body := strings.TrimLeft(line, "\t ")
			if strings.HasPrefix(body, "elements = { ") {
				inElements = true
				body = strings.TrimPrefix(body, "elements = { ")
			}
			if inElements {
				elements.WriteString(body)
				if strings.HasSuffix(body, " }") {
					inElements = false
					all := strings.TrimSuffix(elements.String(), " }")
					elements.Reset()
					for _, e := range strings.Split(all, ",") {
						rs.sets[name] = append(rs.sets[name], strings.TrimSpace(e))
					}
				}
			}
		}
	}
	if kind != "" {
		return nil, fmt.Errorf("%s %s is not closed", kind, name)
	}
	for chain, rules := range rs.chains {
		for _, r := range rules {
			for _, m := range nftTargetRef.FindAllStringSubmatch(r, -1) {
				if _, ok := rs.chains[m[1]]; !ok {
					return nil, fmt.Errorf("chain %s: rule %q refers to missing chain %s", chain, r, m[1])
				}
			}
		}
	}
	for set, elems := range rs.sets {
		for _, e := range elems {
			for _, m := range nftTargetRef.FindAllStringSubmatch(e, -1) {
				if _, ok := rs.chains[m[1]]; !ok {
					return nil, fmt.Errorf("map %s: element %q refers to missing chain %s", set, e, m[1])
				}
			}
		}
	}
	return rs, nil
}
