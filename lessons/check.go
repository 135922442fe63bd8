package lessons

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/assets/i18n"
)

// Check is the condition that completes a step. The set of checks is
// closed: CheckKinds lists them, each is a type of this package, and the
// loader checks their parameters. A check is judged by an Evaluator.
type Check interface {
	// Kind returns the check's name in lesson files.
	Kind() CheckKind
	// Describe says what the check waits for, one message per condition,
	// for the lesson pane.
	Describe() []i18n.Message
	// Needs says which observations the check reads.
	Needs() Needs
	// evaluate judges the cluster as observed now against how it was
	// when the step began. It must not change either world.
	evaluate(start, now *world) Verdict
}

// CheckKind names a type of check in lesson files.
type CheckKind string

// The kinds of check.
const (
	KindLeaderElected    CheckKind = "leader-elected"
	KindLeaderChanged    CheckKind = "leader-changed"
	KindNoLeader         CheckKind = "no-leader"
	KindMemberState      CheckKind = "member-state"
	KindMembersRunning   CheckKind = "members-running"
	KindRaftClock        CheckKind = "raft-clock"
	KindRaftMessage      CheckKind = "raft-message"
	KindKeyExists        CheckKind = "key-exists"
	KindWriteRefused     CheckKind = "write-refused"
	KindCommandSucceeded CheckKind = "command-succeeded"
	KindNodesReady       CheckKind = "nodes-ready"
	KindPodsRunning      CheckKind = "pods-running"
	KindObject           CheckKind = "object"
	KindEvent            CheckKind = "event"
	KindAPIRequest       CheckKind = "api-request"
	KindEtcdRequest      CheckKind = "etcd-request"
	KindLeaseHolder      CheckKind = "lease-holder-changed"
	KindNodeCondition    CheckKind = "node-condition"
	KindNodeTaint        CheckKind = "node-taint"
	KindProxyMode        CheckKind = "proxy-mode"
	KindTraffic          CheckKind = "traffic"
	KindProxyService     CheckKind = "proxy-service"
	KindAll              CheckKind = "all"
	KindAny              CheckKind = "any"
)

// CheckKinds lists every kind of check.
var CheckKinds = []CheckKind{
	KindLeaderElected, KindLeaderChanged, KindNoLeader, KindMemberState, KindMembersRunning,
	KindRaftClock, KindRaftMessage, KindKeyExists, KindWriteRefused, KindCommandSucceeded,
	KindNodesReady, KindPodsRunning, KindObject, KindEvent, KindAPIRequest, KindEtcdRequest,
	KindLeaseHolder, KindNodeCondition, KindNodeTaint, KindProxyMode, KindProxyService, KindTraffic, KindAll, KindAny,
}

// Verdict is a check's judgement of the cluster.
type Verdict struct {
	Passed bool
	// Reasons say what was seen: why the check passed, or what is still
	// missing.
	Reasons []i18n.Message
}

// Text renders the reasons in language l, one per line.
func (v Verdict) Text(l i18n.Lang) string {
	lines := make([]string, len(v.Reasons))
	for i, r := range v.Reasons {
		lines[i] = r.In(l)
	}
	return strings.Join(lines, "\n")
}

func pass(reasons ...i18n.Message) Verdict { return Verdict{Passed: true, Reasons: reasons} }
func wait(reasons ...i18n.Message) Verdict { return Verdict{Reasons: reasons} }

// sameVerdict reports whether two verdicts read the same.
func sameVerdict(a, b Verdict) bool {
	if a.Passed != b.Passed || len(a.Reasons) != len(b.Reasons) {
		return false
	}
	for i := range a.Reasons {
		x, y := a.Reasons[i], b.Reasons[i]
		if x.Key != y.Key || fmt.Sprint(x.Args...) != fmt.Sprint(y.Args...) {
			return false
		}
	}
	return true
}

// Needs says which observations a check reads, so that the integrator
// subscribes to what the current step needs (an etcd watch of its keys, say)
// and the Evaluator judges only when something relevant arrives.
type Needs struct {
	Members  bool // MemberObserved
	Clocks   bool // ClockObserved
	Messages bool // MessageObserved
	Nodes    bool // NodeObserved
	Pods     bool // PodObserved
	Commands bool // CommandObserved
	Events   bool // EventObserved
	Requests bool // RequestObserved
	// EtcdRequests: EtcdRequestObserved.
	EtcdRequests bool
	Proxies      bool // ProxyObserved
	Traffic      bool // TrafficObserved
	// Keys are the etcd keys whose KeyObserved the check reads.
	Keys []string
	// Objects are the resources whose ObjectObserved the check reads,
	// which the feeder watches (in every namespace).
	Objects []schema.GroupVersionResource
}

// merge returns the needs of both.
func (n Needs) merge(o Needs) Needs {
	n.Members = n.Members || o.Members
	n.Clocks = n.Clocks || o.Clocks
	n.Messages = n.Messages || o.Messages
	n.Nodes = n.Nodes || o.Nodes
	n.Pods = n.Pods || o.Pods
	n.Commands = n.Commands || o.Commands
	n.Events = n.Events || o.Events
	n.Requests = n.Requests || o.Requests
	n.EtcdRequests = n.EtcdRequests || o.EtcdRequests
	n.Proxies = n.Proxies || o.Proxies
	n.Traffic = n.Traffic || o.Traffic
	for _, k := range o.Keys {
		if !contains(n.Keys, k) {
			n.Keys = append(n.Keys, k)
		}
	}
	for _, r := range o.Objects {
		if !slices.Contains(n.Objects, r) {
			n.Objects = append(n.Objects, r)
		}
	}
	return n
}

// Merge returns the needs of both: what a feeder follows for several
// steps at once.
func (n Needs) Merge(o Needs) Needs { return n.merge(o) }

// wants reports whether obs can change a verdict of a check with these
// needs.
func (n Needs) wants(obs Observation) bool {
	switch o := obs.(type) {
	case MemberObserved:
		return n.Members
	case ClockObserved:
		return n.Clocks
	case MessageObserved:
		return n.Messages
	case NodeObserved:
		return n.Nodes
	case PodObserved:
		return n.Pods
	case KeyObserved:
		return contains(n.Keys, o.Key)
	case CommandObserved:
		return n.Commands
	case EventObserved:
		return n.Events
	case RequestObserved:
		return n.Requests
	case EtcdRequestObserved:
		return n.EtcdRequests
	case ProxyObserved:
		return n.Proxies
	case TrafficObserved:
		return n.Traffic
	case ObjectObserved:
		return slices.ContainsFunc(n.Objects, func(r schema.GroupVersionResource) bool {
			return r.GroupResource() == o.Resource
		})
	}
	return false
}

// check decodes a check: a mapping of one entry, the kind and its
// parameters (leader-changed: {}), or, for a check without parameters, the
// kind alone (leader-changed).
func (d *decoder) check(n *yaml.Node, path string) Check {
	var kindNode, params *yaml.Node
	switch {
	case n.Kind == yaml.ScalarNode && !isNull(n):
		// No parameters: an empty value where the kind is, so that a
		// missing parameter is reported there.
		kindNode = n
		params = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
	case n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Kind == yaml.ScalarNode:
		kindNode, params = n.Content[0], n.Content[1]
	default:
		d.fail(n, path, i18n.M("lessons.err.check-shape"))
		return nil
	}
	kind := CheckKind(kindNode.Value)
	p := field(path, string(kind))
	switch kind {
	case KindLeaderElected:
		return d.leaderElected(params, p)
	case KindLeaderChanged:
		d.params(params, p) // it takes none: any key is reported unknown
		return LeaderChangedCheck{}
	case KindNoLeader:
		d.params(params, p)
		return NoLeaderCheck{}
	case KindMemberState:
		return d.memberState(params, p)
	case KindMembersRunning:
		return d.membersRunning(params, p)
	case KindRaftClock:
		return d.raftClock(params, p)
	case KindRaftMessage:
		return d.raftMessage(params, p)
	case KindKeyExists:
		return d.keyExists(params, p)
	case KindWriteRefused:
		return d.writeRefused(params, p)
	case KindCommandSucceeded:
		return d.commandSucceeded(params, p)
	case KindNodesReady:
		return d.nodesReady(params, p)
	case KindPodsRunning:
		return d.podsRunning(params, p)
	case KindObject:
		return d.object(params, p)
	case KindEvent:
		return d.event(params, p)
	case KindAPIRequest:
		return d.apiRequest(params, p)
	case KindEtcdRequest:
		return d.etcdRequest(params, p)
	case KindLeaseHolder:
		return d.leaseHolder(params, p)
	case KindNodeCondition:
		return d.nodeCondition(params, p)
	case KindNodeTaint:
		return d.nodeTaint(params, p)
	case KindProxyMode:
		return d.proxyMode(params, p)
	case KindTraffic:
		return d.traffic(params, p)
	case KindProxyService:
		return d.proxyService(params, p)
	case KindAll:
		return d.all(params, p)
	case KindAny:
		return d.any(params, p)
	}
	kinds := make([]string, len(CheckKinds))
	for i, k := range CheckKinds {
		kinds[i] = string(k)
	}
	d.fail(kindNode, path, i18n.M("lessons.err.unknown-check", string(kind), strings.Join(kinds, ", ")))
	return nil
}
