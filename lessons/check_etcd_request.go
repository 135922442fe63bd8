package lessons

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

// EtcdRequestCheck passes when the etcd members served at least Count
// client requests matching it since the step began, as their request
// streams report them: etcdctl in another terminal counts as much as the
// lesson's command line. An empty field matches anything.
//
//	etcd-request: {method: Range, key: /registry/deployments/default/hello, from: outside}
//	etcd-request: {method: Range, prefix: /registry/namespaces/}
//
// Method is the etcd API's name for the call (etcdctl get is a Range,
// put a Put, del a DeleteRange, watch a Watch, member list a MemberList,
// endpoint status a Status, snapshot save a Snapshot). Key matches a
// request that reads or writes that key, a range that holds it included;
// Prefix one that names any key under it. From is outside for a client
// that is not one of klab's components (etcdctl, a person's program),
// cluster for the API server's own requests.
type EtcdRequestCheck struct {
	Method string
	Key    string
	Prefix string
	// Code is a gRPC status code's name: OK, Unavailable, ...
	Code  string
	From  string
	Count int
}

// The clients an etcd-request check tells apart.
const (
	FromOutside = "outside"
	FromCluster = "cluster"
)

// etcdMethods are the etcd API calls klab's members serve, as etcd's gRPC
// services name them.
var etcdMethods = []string{
	"Range", "Put", "DeleteRange", "Txn", "Compact", "Watch",
	"LeaseGrant", "LeaseRevoke", "LeaseKeepAlive", "LeaseTimeToLive", "LeaseLeases",
	"MemberList", "MemberAdd", "MemberRemove", "MemberUpdate", "MemberPromote",
	"Status", "Snapshot", "Defragment", "Hash", "HashKV", "Alarm", "MoveLeader",
}

// grpcCodes are the names of gRPC's status codes.
var grpcCodes = []string{
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
	"PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
	"Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
}

func (EtcdRequestCheck) Kind() CheckKind { return KindEtcdRequest }
func (EtcdRequestCheck) Needs() Needs    { return Needs{EtcdRequests: true} }

func (c EtcdRequestCheck) summary() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("method", c.Method)
	add("key", c.Key)
	add("prefix", c.Prefix)
	add("code", c.Code)
	add("from", c.From)
	return strings.Join(parts, " ")
}

func (c EtcdRequestCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.etcd-request", c.Count, c.summary())}
}

func (c EtcdRequestCheck) matches(r EtcdRequestObserved) bool {
	return (c.Method == "" || r.Method == c.Method) &&
		(c.Key == "" || r.holds(c.Key)) &&
		(c.Prefix == "" || r.overlaps(c.Prefix, prefixEnd(c.Prefix))) &&
		(c.Code == "" || r.Code == c.Code) &&
		(c.From == "" || (c.From == FromCluster) == r.Component)
}

// holds reports whether the request names key: it is the request's key,
// or within its range.
func (r EtcdRequestObserved) holds(key string) bool {
	switch r.RangeEnd {
	case "":
		return r.Key == key
	case "\x00":
		return key >= r.Key
	}
	return key >= r.Key && key < r.RangeEnd
}

// overlaps reports whether the request names a key in [from, to).
func (r EtcdRequestObserved) overlaps(from, to string) bool {
	if r.RangeEnd == "" {
		return r.Key >= from && (to == "" || r.Key < to)
	}
	// [r.Key, end) and [from, to) meet.
	endsAfter := r.RangeEnd == "\x00" || r.RangeEnd > from
	startsBefore := to == "" || r.Key < to
	return endsAfter && startsBefore
}

// prefixEnd is the end of the range of keys that start with prefix, as
// etcdctl's --prefix computes it; empty when there is none (all 0xff).
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

func (c EtcdRequestCheck) evaluate(_, now *world) Verdict {
	n := 0
	var last EtcdRequestObserved
	for _, r := range now.etcdRequests {
		if c.matches(r) {
			n++
			last = r
		}
	}
	msg := i18n.M("lessons.check.etcd-requests", n, len(now.etcdRequests))
	if n == 0 {
		return wait(msg)
	}
	key := "lessons.check.etcd-request-seen-outside"
	if last.Component {
		key = "lessons.check.etcd-request-seen-cluster"
	}
	seen := i18n.M(key, last.Method, last.Key, last.Code, last.Member)
	if n >= c.Count {
		return pass(msg, seen)
	}
	return wait(msg, seen)
}

func (d *decoder) etcdRequest(n *yaml.Node, path string) Check {
	f := d.params(n, path, "method", "key", "prefix", "code", "from", "count")
	if f == nil {
		return nil
	}
	c := EtcdRequestCheck{}
	choice := func(key string, choices []string) string {
		v, vn := f.str(key, false)
		if vn != nil && !contains(choices, v) {
			d.fail(vn, field(path, key), i18n.M("lessons.err.bad-choice", v, strings.Join(choices, ", ")))
		}
		return v
	}
	c.Method = choice("method", etcdMethods)
	c.Code = choice("code", grpcCodes)
	c.From = choice("from", []string{FromOutside, FromCluster})
	key, kn := f.str("key", false)
	prefix, pn := f.str("prefix", false)
	for _, p := range []struct {
		name, v string
		n       *yaml.Node
	}{{"key", key, kn}, {"prefix", prefix, pn}} {
		if p.n != nil && p.v == "" {
			d.fail(p.n, field(path, p.name), i18n.M("lessons.err.empty"))
		}
	}
	if kn != nil && pn != nil {
		d.fail(pn, field(path, "prefix"), i18n.M("lessons.err.not-both", "key", "prefix"))
	}
	c.Key, c.Prefix = key, prefix
	c.Count = f.integer("count", false, 1, 1, maxObjects)
	if c.Method == "" && kn == nil && pn == nil && f.node != nil {
		d.fail(f.node, path, i18n.M("lessons.err.need-one-of", "method, key, prefix"))
	}
	return c
}
