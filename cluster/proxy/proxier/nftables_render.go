package proxier

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Render writes the table as "nft list ruleset" prints it: the table's
// sets and maps (elements sorted), then its chains, one blank line between
// objects. Affinity sets show their live elements with the time left.
func (m *NFTables) Render(w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == nil {
		return nil
	}
	s := m.state
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "table ip %s {\n\tcomment \"rules for kube-proxy\"\n", nftTable)

	ips := make([]netip.Addr, 0, len(s.clusterIPs))
	for ip := range s.clusterIPs {
		ips = append(ips, ip)
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	elems := make([]string, len(ips))
	for i, ip := range ips {
		elems[i] = ip.String()
	}
	writeNFTSet(bw, "set", "cluster-ips", "ipv4_addr", "", "Active ClusterIPs", elems, 2)
	bw.WriteByte('\n')
	writeNFTSet(bw, "map", "no-endpoint-services", "ipv4_addr . inet_proto . inet_service : verdict", "",
		"vmap to drop or reject packets to services with no endpoints", keyElements(s.noEndpointServices), 1)
	bw.WriteByte('\n')
	writeNFTSet(bw, "map", "no-endpoint-nodeports", "inet_proto . inet_service : verdict", "",
		"vmap to drop or reject packets to service nodeports with no endpoints", portElements(s.noEndpointNodePorts), 1)
	bw.WriteByte('\n')
	writeNFTSet(bw, "map", "firewall-ips", "ipv4_addr . inet_proto . inet_service : verdict", "",
		"destinations that are subject to LoadBalancerSourceRanges", nil, 1)
	bw.WriteByte('\n')
	writeNFTSet(bw, "map", "service-ips", "ipv4_addr . inet_proto . inet_service : verdict", "",
		"ClusterIP, ExternalIP and LoadBalancer IP traffic", keyElements(s.serviceIPs), 1)
	bw.WriteByte('\n')
	writeNFTSet(bw, "map", "service-nodeports", "inet_proto . inet_service : verdict", "",
		"NodePort traffic", portElements(s.serviceNodePorts), 1)
	now := m.cfg.Now()
	for _, set := range s.affinitySets {
		bw.WriteByte('\n')
		clients := make([]netip.Addr, 0, len(set.elements))
		for ip, expires := range set.elements {
			if now.Before(expires) {
				clients = append(clients, ip)
			}
		}
		slices.SortFunc(clients, netip.Addr.Compare)
		elems := make([]string, len(clients))
		for i, ip := range clients {
			elems[i] = ip.String() + " timeout " + nftDuration(set.timeout) + " expires " + nftDuration(set.elements[ip].Sub(now))
		}
		writeNFTSet(bw, "set", set.name, "ipv4_addr", "dynamic,timeout", "", elems, 1,
			"timeout "+nftDuration(set.timeout))
	}
	for _, c := range s.chains {
		fmt.Fprintf(bw, "\n\tchain %s {\n", c.name)
		if c.header != "" {
			fmt.Fprintf(bw, "\t\t%s\n", c.header)
		}
		if c.comment != "" {
			fmt.Fprintf(bw, "\t\tcomment %q\n", c.comment)
		}
		for _, r := range c.rules {
			fmt.Fprintf(bw, "\t\t%s\n", r.text)
		}
		bw.WriteString("\t}\n")
	}
	bw.WriteString("}\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("render nftables ruleset: %w", err)
	}
	return nil
}

// writeNFTSet prints a set or map. nft puts two addresses per line in an
// address set and one element per line in a map.
func writeNFTSet(w *bufio.Writer, kind, name, typ, flags, comment string, elems []string, perLine int, extra ...string) {
	fmt.Fprintf(w, "\t%s %s {\n\t\ttype %s\n", kind, name, typ)
	if flags != "" {
		fmt.Fprintf(w, "\t\tflags %s\n", flags)
	}
	for _, x := range extra {
		fmt.Fprintf(w, "\t\t%s\n", x)
	}
	if comment != "" {
		fmt.Fprintf(w, "\t\tcomment %q\n", comment)
	}
	if len(elems) > 0 {
		w.WriteString("\t\telements = { ")
		for i, e := range elems {
			if i > 0 {
				if i%perLine == 0 {
					w.WriteString(",\n\t\t\t     ")
				} else {
					w.WriteString(", ")
				}
			}
			w.WriteString(e)
		}
		w.WriteString(" }\n")
	}
	w.WriteString("\t}\n")
}

func keyElements(m map[nftKey]nftVerdict) []string {
	keys := make([]nftKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b nftKey) int {
		return cmp.Or(a.addr.Compare(b.addr), cmp.Compare(a.proto, b.proto), cmp.Compare(a.port, b.port))
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.addr.String() + " . " + k.proto + " . " + strconv.Itoa(int(k.port)) + elementComment(m[k]) + " : " + m[k].String()
	}
	return out
}

func portElements(m map[nftPortKey]nftVerdict) []string {
	keys := make([]nftPortKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b nftPortKey) int {
		return cmp.Or(cmp.Compare(a.proto, b.proto), cmp.Compare(a.port, b.port))
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.proto + " . " + strconv.Itoa(int(k.port)) + elementComment(m[k]) + " : " + m[k].String()
	}
	return out
}

func elementComment(v nftVerdict) string {
	if v.comment == "" {
		return ""
	}
	return fmt.Sprintf(" comment %q", v.comment)
}

// nftDuration prints a duration as nft does: 3h, 1h1m1s, 10s.
func nftDuration(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	var b strings.Builder
	secs := int64(d / time.Second)
	for _, u := range []struct {
		n    int64
		unit string
	}{{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}} {
		if secs >= u.n {
			fmt.Fprintf(&b, "%d%s", secs/u.n, u.unit)
			secs %= u.n
		}
	}
	return b.String()
}
