package cmdline

import (
	"bytes"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Completer completes command lines: the words of klab's commands, of the
// kubectl and etcdctl commands lessons use, resource kinds, and the names
// the lab has (nodes, members, pods) through Names.
type Completer struct {
	// Names returns the names of things in the lab that commands take:
	// node and member names, pod and Service names. It is called on every
	// tab, from Update, so it must only read state already at hand.
	Names func() []string
}

// tree is the command words, by the words before them. A key ends with a
// space-separated path of words; "*" lists what may follow at any depth of
// that command (flags, kinds).
var tree = map[string][]string{
	"":                      {"klab", "kubectl", "etcdctl"},
	"klab":                  {"status", "chaos", "clock", "proxy", "traffic", "kubectl", "etcdctl", "lessons"},
	"klab chaos":            {"kill", "pause", "resume", "restart", "partition", "heal"},
	"klab clock":            {"show", "speed", "pause", "resume", "step"},
	"klab proxy":            {"status", "rules", "mode"},
	"klab lessons":          {"list", "show"},
	"klab kubectl":          {"get", "describe", "create", "apply", "delete", "scale", "logs", "cordon", "uncordon", "drain", "expose", "rollout", "explain", "api-resources", "top", "label", "annotate", "edit"},
	"klab etcdctl":          {"get", "put", "del", "watch", "member", "endpoint", "snapshot", "lease", "compaction", "defrag", "alarm", "txn"},
	"klab etcdctl member":   {"list"},
	"klab etcdctl endpoint": {"status", "health", "hashkv"},
	"klab etcdctl snapshot": {"save", "status"},
	"klab etcdctl lease":    {"grant", "revoke", "list", "timetolive", "keep-alive"},
	"klab proxy mode":       {"iptables", "ipvs", "nftables", "userspace"},
	"klab kubectl create":   {"deployment", "service", "namespace", "configmap", "-f"},
	"klab kubectl rollout":  {"status", "restart", "history", "undo"},
}

// kinds are the resource kinds kubectl commands take.
var kinds = []string{
	"nodes", "pods", "deployments", "replicasets", "services", "endpointslices", "endpoints",
	"leases", "events", "namespaces", "configmaps", "secrets", "serviceaccounts", "daemonsets",
	"statefulsets", "jobs", "all",
}

// flags are flags commonly used with each program.
var flags = map[string][]string{
	"klab kubectl": {"-n", "--namespace", "-A", "--all-namespaces", "-o", "wide", "yaml", "json", "-l", "--replicas=", "--image=", "-w", "--show-labels"},
	"klab etcdctl": {"--prefix", "--keys-only", "-w", "table", "json", "--cluster", "--consistency=s", "--rev=", "--limit="},
	"klab chaos":   {"leader", "followers"},
}

// Complete returns the completions of current after the words before it.
func (c *Completer) Complete(words []string, current string) []string {
	words = normalize(words)
	path := strings.Join(words, " ")
	var candidates []string
	if next, ok := tree[path]; ok {
		candidates = append(candidates, next...)
	}
	if len(words) >= 2 {
		program := strings.Join(words[:2], " ")
		if program == "klab kubectl" && len(words) >= 3 {
			candidates = append(candidates, kinds...)
		}
		if len(words) >= 3 || strings.HasPrefix(current, "-") {
			candidates = append(candidates, flags[program]...)
		}
		if len(words) >= 3 && c.Names != nil {
			candidates = append(candidates, c.Names()...)
		}
	}
	var out []string
	for _, w := range candidates {
		if strings.HasPrefix(w, current) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}

// normalize makes "kubectl get" read as "klab kubectl get".
func normalize(words []string) []string {
	if len(words) > 0 && (words[0] == "kubectl" || words[0] == "etcdctl") {
		return append([]string{"klab"}, words...)
	}
	return words
}

// lockedWriter is one buffer for a command's stdout and stderr, which
// may be written from different goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

var _ io.Writer = (*lockedWriter)(nil)

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
