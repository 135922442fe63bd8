package scheduler

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
	sched "github.com/klab-dev/klab/cluster/scheduler"
)

// A FailedScheduling message, as the scheduler writes it (upstream's
// FitError): "0/6 nodes are available: 3 Insufficient cpu, 3 node(s) had
// untolerated taint(s)." Every part after the colon is a filter reason
// with the number of nodes that gave it, sorted as strings; or, when a
// PreFilter plugin turned the pod away before any node was looked at, that
// plugin's message alone. Then, after a space, what preemption said when
// it could not help: "preemption: 0/6 nodes are available: 3 No preemption
// victims found for incoming pod, 3 Preemption is not helpful for
// scheduling." or "preemption: not eligible due to ...".

// fitMessage is a FailedScheduling message taken apart.
type fitMessage struct {
	// Nodes is the N of "0/N nodes are available".
	Nodes int
	// Reasons are the counted reasons in the message's order.
	Reasons []countedReason
	// PreFilter is the message of a PreFilter rejection, if that is what
	// the message holds.
	PreFilter string
	// Preemption is preemption's part ("preemption: ..."), if any.
	Preemption string
}

// countedReason is one "3 Insufficient cpu".
type countedReason struct {
	Count  int
	Reason string
}

var fitPrefix = regexp.MustCompile(`^0/(\d+) nodes are available:\s*`)
var countPrefix = regexp.MustCompile(`^(\d+) (.+)$`)

// parseFitMessage takes a FailedScheduling message apart; ok is false for
// a message of another shape (a plugin error, no nodes at all).
func parseFitMessage(msg string) (fm fitMessage, ok bool) {
	m := fitPrefix.FindStringSubmatch(msg)
	if m == nil {
		return fitMessage{}, false
	}
	fm.Nodes, _ = strconv.Atoi(m[1])
	if i := strings.Index(msg, " preemption: "); i >= 0 {
		msg, fm.Preemption = msg[:i], msg[i+1:]
	}
	rest := strings.TrimSuffix(strings.TrimSpace(msg[len(m[0]):]), ".")
	if rest == "" {
		return fm, true
	}
	if !countPrefix.MatchString(rest) {
		fm.PreFilter = rest
		return fm, true
	}
	// A reason may hold ", " itself; a part that does not start with a
	// count belongs to the reason before it.
	for _, part := range strings.Split(rest, ", ") {
		if c := countPrefix.FindStringSubmatch(part); c != nil {
			n, _ := strconv.Atoi(c[1])
			fm.Reasons = append(fm.Reasons, countedReason{Count: n, Reason: c[2]})
			continue
		}
		if len(fm.Reasons) == 0 {
			fm.PreFilter = rest
			fm.Reasons = nil
			return fm, true
		}
		last := &fm.Reasons[len(fm.Reasons)-1]
		last.Reason += ", " + part
	}
	return fm, true
}

// knownReasons maps the filter plugins' reasons (upstream's wording, as
// cluster/scheduler/plugins write them) to the key of their explanation,
// most specific first: a reason matches the first entry it starts with.
var knownReasons = []struct{ prefix, key string }{
	{"Insufficient cpu", "ui.sched.why.cpu"},
	{"Insufficient memory", "ui.sched.why.memory"},
	{"Insufficient ephemeral-storage", "ui.sched.why.ephemeral-storage"},
	{"Insufficient ", "ui.sched.why.resource"},
	{"Too many pods", "ui.sched.why.pods"},
	{"node(s) had untolerated taint", "ui.sched.why.taint"},
	{"node(s) didn't match Pod's node affinity/selector", "ui.sched.why.node-affinity"},
	{"node(s) didn't match the requested node name", "ui.sched.why.node-name"},
	{"node(s) were unschedulable", "ui.sched.why.cordoned"},
	{"node(s) had unknown conditions", "ui.sched.why.unknown-conditions"},
	{"node(s) didn't have free ports for the requested pod ports", "ui.sched.why.ports"},
	{"node(s) didn't match pod topology spread constraints (missing required label)", "ui.sched.why.spread-label"},
	{"node(s) didn't match pod topology spread constraints", "ui.sched.why.spread"},
	{"node(s) didn't satisfy existing pods anti-affinity rules", "ui.sched.why.existing-anti-affinity"},
	{"node(s) didn't match pod affinity rules", "ui.sched.why.pod-affinity"},
	{"node(s) didn't match pod anti-affinity rules", "ui.sched.why.pod-anti-affinity"},
}

// explainReason says in the current language what a reason given by count
// nodes means; false when klab has no explanation for it.
func explainReason(count int, reason string) (string, bool) {
	for _, k := range knownReasons {
		if strings.HasPrefix(reason, k.prefix) {
			if k.key == "ui.sched.why.resource" {
				return i18n.T("ui.sched.why.resource", count, strings.TrimPrefix(reason, k.prefix)), true
			}
			return i18n.T(k.key, count), true
		}
	}
	return "", false
}

// whyLines explains a failed decision's message: one entry per part, the
// upstream text first, then what it means.
func whyLines(result, msg string) []why {
	if msg == "no nodes available to schedule pods" {
		return []why{{Upstream: msg, Text: i18n.T("ui.sched.why.no-nodes")}}
	}
	fm, ok := parseFitMessage(msg)
	switch {
	case !ok && result == sched.ResultError:
		return []why{{Upstream: msg, Text: i18n.T("ui.sched.why.error")}}
	case !ok:
		return []why{{Upstream: msg, Text: i18n.T("ui.sched.why.unparsed")}}
	}
	var out []why
	if fm.PreFilter != "" {
		text, known := explainReason(fm.Nodes, fm.PreFilter)
		if !known {
			text = i18n.T("ui.sched.why.prefilter", fm.Nodes)
		}
		out = append(out, why{Upstream: fm.PreFilter, Text: text})
	}
	for _, r := range fm.Reasons {
		text, known := explainReason(r.Count, r.Reason)
		if !known {
			text = i18n.T("ui.sched.why.other", r.Count)
		}
		out = append(out, why{Upstream: strconv.Itoa(r.Count) + " " + r.Reason, Text: text})
	}
	if fm.Preemption != "" {
		out = append(out, why{Upstream: fm.Preemption, Text: explainPreemption(fm.Preemption)})
	}
	return out
}

// explainPreemption says what preemption's part of a message means.
func explainPreemption(msg string) string {
	switch {
	case strings.Contains(msg, "preemptionPolicy=Never"):
		return i18n.T("ui.sched.why.preemption-never")
	case strings.Contains(msg, "terminating pod on the nominated node"):
		return i18n.T("ui.sched.why.preemption-waiting")
	}
	return i18n.T("ui.sched.why.preemption")
}

// why is one explained part of a message.
type why struct {
	Upstream, Text string
}
