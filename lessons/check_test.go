package lessons

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

// mustCheck parses a check as a lesson file writes it.
func mustCheck(t *testing.T, text string) Check {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	d := &decoder{file: "test"}
	c := d.check(doc.Content[0], "check")
	for _, e := range d.errs {
		t.Fatalf("%s: %s", text, renderError(t, i18n.English, e))
	}
	return c
}

func member(name string, state MemberState, term uint64, leader string) MemberObserved {
	return MemberObserved{Member: name, State: state, Term: term, Leader: leader}
}

// healthy is three members following master-1 in term 2.
var healthy = []Observation{
	member("master-1", MemberLeader, 2, "master-1"),
	member("master-2", MemberFollower, 2, "master-1"),
	member("master-3", MemberFollower, 2, "master-1"),
}

func ran(err error, output string, args ...string) CommandObserved {
	return CommandObserved{Args: args, Err: err, Output: output}
}

var errExit = errors.New("exit status 1")

type scenario struct {
	name   string
	check  string
	before []Observation // seen before the step begins
	after  []Observation // seen after
	pass   bool
}

// judge feeds a scenario to an Evaluator and returns its verdict.
func judge(t *testing.T, s scenario) Verdict {
	t.Helper()
	e := NewEvaluator()
	for _, o := range s.before {
		e.Observe(o)
	}
	e.Begin(mustCheck(t, s.check))
	for _, o := range s.after {
		e.Observe(o)
	}
	return e.Verdict()
}

func runScenarios(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			v := judge(t, s)
			if v.Passed != s.pass {
				t.Errorf("passed = %v, want %v; reasons: %s", v.Passed, s.pass, reasons(t, v))
			}
			if len(v.Reasons) == 0 {
				t.Errorf("no reason given")
			}
			for _, l := range i18n.Langs {
				for _, r := range v.Reasons {
					if text := render(t, l, r); strings.Contains(text, "%!") {
						t.Errorf("%s renders badly: %s", r.Key, text)
					}
				}
			}
		})
	}
}

func reasons(t *testing.T, v Verdict) string {
	var out []string
	for _, r := range v.Reasons {
		out = append(out, render(t, i18n.English, r))
	}
	return strings.Join(out, "; ")
}

func seq(parts ...[]Observation) []Observation {
	var out []Observation
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestLeaderElected(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "a leader all follow", check: "leader-elected: {members: 3}", before: healthy, pass: true},
		{name: "any leader", check: "leader-elected", after: healthy[:1], pass: true},
		{name: "nobody observed", check: "leader-elected", pass: false},
		{name: "no leader", check: "leader-elected", before: []Observation{
			member("master-1", MemberPreCandidate, 3, ""),
			member("master-2", MemberUnreachable, 0, ""),
		}, pass: false},
		{name: "one member behind", check: "leader-elected: {members: 3}", before: seq(healthy[:2], []Observation{
			member("master-3", MemberPreCandidate, 1, ""),
		}), pass: false},
		{name: "a follower of the old term does not count", check: "leader-elected: {members: 3}", before: seq(healthy, []Observation{
			member("master-2", MemberLeader, 3, "master-2"),
			member("master-3", MemberFollower, 3, "master-2"),
		}), pass: false},
		{name: "the leader in the higher term wins", check: "leader-elected: {members: 2}", before: seq(healthy, []Observation{
			member("master-2", MemberLeader, 3, "master-2"),
			member("master-3", MemberFollower, 3, "master-2"),
		}), pass: true},
		{name: "elected after the step began", check: "leader-elected: {members: 2}", before: []Observation{
			member("master-1", MemberCandidate, 4, ""),
			member("master-2", MemberFollower, 3, ""),
		}, after: []Observation{
			member("master-1", MemberLeader, 4, "master-1"),
			member("master-2", MemberFollower, 4, "master-1"),
		}, pass: true},
	})
}

func TestLeaderChanged(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "a new leader in a higher term", check: "leader-changed", before: healthy, after: []Observation{
			member("master-1", MemberUnreachable, 0, ""),
			member("master-2", MemberPreCandidate, 2, ""),
			member("master-2", MemberCandidate, 3, ""),
			member("master-2", MemberLeader, 3, "master-2"),
		}, pass: true},
		{name: "an election not yet won", check: "leader-changed: {}", before: healthy, after: []Observation{
			member("master-1", MemberUnreachable, 0, ""),
			member("master-2", MemberCandidate, 3, ""),
		}, pass: false},
		{name: "the same leader", check: "leader-changed", before: healthy, after: healthy, pass: false},
		{name: "the same leader re-elected", check: "leader-changed", before: healthy, after: []Observation{
			member("master-1", MemberLeader, 3, "master-1"),
		}, pass: false},
		{name: "a stale leader of an older term", check: "leader-changed", before: healthy, after: []Observation{
			member("master-3", MemberLeader, 1, "master-3"),
		}, pass: false},
		{name: "nothing happened", check: "leader-changed", before: healthy, pass: false},
		{name: "no leader when the step began", check: "leader-changed", before: []Observation{
			member("master-1", MemberPreCandidate, 5, ""),
			member("master-2", MemberFollower, 5, ""),
		}, after: []Observation{
			member("master-2", MemberLeader, 6, "master-2"),
		}, pass: true},
	})
}

func TestNoLeader(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "nobody observed", check: "no-leader", pass: false},
		{name: "a leader", check: "no-leader", before: healthy, pass: false},
		{name: "the leader stepped down", check: "no-leader", before: healthy, after: []Observation{
			member("master-2", MemberUnreachable, 0, ""),
			member("master-3", MemberUnreachable, 0, ""),
			member("master-1", MemberFollower, 2, ""),
			member("master-1", MemberPreCandidate, 2, ""),
		}, pass: true},
	})
}

func TestMemberState(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "unreachable is down", check: "member-state: {member: master-3, state: down}", before: healthy,
			after: []Observation{member("master-3", MemberUnreachable, 0, "")}, pass: true},
		{name: "stopped is down", check: "member-state: {member: master-3, state: down}", before: healthy,
			after: []Observation{member("master-3", MemberStopped, 0, "")}, pass: true},
		{name: "paused is not down", check: "member-state: {member: master-3, state: down}", before: healthy,
			after: []Observation{member("master-3", MemberPaused, 2, "")}, pass: false},
		{name: "a follower is running", check: "member-state: {member: master-2, state: running}", before: healthy, pass: true},
		{name: "leader", check: "member-state: {member: master-1, state: leader}", before: healthy, pass: true},
		{name: "not the leader", check: "member-state: {member: master-2, state: leader}", before: healthy, pass: false},
		{name: "pre-candidate", check: "member-state: {member: master-2, state: pre-candidate}", before: healthy,
			after: []Observation{member("master-2", MemberPreCandidate, 2, "")}, pass: true},
		{name: "never seen", check: "member-state: {member: master-5, state: down}", before: healthy, pass: false},
	})
}

func TestMembersRunning(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "three running", check: "members-running: {count: 3}", before: healthy, pass: true},
		{name: "one killed", check: "members-running: {count: 3}", before: seq(healthy, []Observation{
			member("master-2", MemberUnreachable, 0, ""),
		}), pass: false},
		{name: "back again", check: "members-running: {count: 3}", before: seq(healthy, []Observation{
			member("master-2", MemberUnreachable, 0, ""),
		}), after: []Observation{member("master-2", MemberFollower, 3, "master-1")}, pass: true},
	})
}

func clock(name string, slowdown int, paused bool) ClockObserved {
	return ClockObserved{Member: name, Slowdown: slowdown, Paused: paused}
}

func TestRaftClock(t *testing.T) {
	realTime := []Observation{clock("master-1", 1, false), clock("master-2", 1, false), clock("master-3", 1, false)}
	slow := []Observation{clock("master-1", 10, false), clock("master-2", 10, false), clock("master-3", 10, false)}
	runScenarios(t, []scenario{
		{name: "slowed down", check: "raft-clock: {minSlowdown: 10}", before: seq(healthy, realTime), after: slow, pass: true},
		{name: "real time", check: "raft-clock: {minSlowdown: 10}", before: seq(healthy, realTime), pass: false},
		{name: "one member still fast", check: "raft-clock: {minSlowdown: 10}", before: seq(healthy, realTime), after: slow[:2], pass: false},
		{name: "a dead member's clock does not count", check: "raft-clock: {minSlowdown: 10}", before: seq(healthy, realTime),
			after: seq(slow[:2], []Observation{member("master-3", MemberUnreachable, 0, "")}), pass: true},
		{name: "a running member's clock not seen yet", check: "raft-clock: {minSlowdown: 10}", before: healthy, after: slow[:2], pass: false},
		{name: "paused", check: "raft-clock: {paused: true}", before: seq(healthy, realTime), after: []Observation{
			clock("master-1", 1, true), clock("master-2", 1, true), clock("master-3", 1, true),
		}, pass: true},
		{name: "not paused", check: "raft-clock: {paused: true}", before: seq(healthy, realTime), pass: false},
		{name: "back to normal", check: "raft-clock: {paused: false, maxSlowdown: 1}", before: seq(healthy, slow), after: realTime, pass: true},
		{name: "still slow", check: "raft-clock: {paused: false, maxSlowdown: 1}", before: seq(healthy, slow), pass: false},
		{name: "no member", check: "raft-clock: {paused: false}", pass: false},
	})
}

func msg(typ string) MessageObserved {
	return MessageObserved{From: "master-2", To: "master-3", Type: typ, Term: 3}
}

func TestRaftMessage(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "a vote", check: "raft-message: {type: MsgVote}", after: []Observation{msg("MsgPreVote"), msg("MsgVote")}, pass: true},
		{name: "votes before the step do not count", check: "raft-message: {type: MsgVote}",
			before: []Observation{msg("MsgVote"), msg("MsgVote")}, after: []Observation{msg("MsgApp")}, pass: false},
		{name: "too few", check: "raft-message: {type: MsgVote, count: 2}", before: []Observation{msg("MsgVote")},
			after: []Observation{msg("MsgVote")}, pass: false},
		{name: "enough", check: "raft-message: {type: MsgVote, count: 2}", after: []Observation{msg("MsgVote"), msg("MsgVote")}, pass: true},
		{name: "heartbeats folded into one report", check: "raft-message: {type: MsgHeartbeat, count: 5}",
			after: []Observation{MessageObserved{From: "master-1", To: "master-2", Type: "MsgHeartbeat", Term: 3, Count: 5}}, pass: true},
		{name: "a folded report short of the count", check: "raft-message: {type: MsgHeartbeat, count: 5}",
			after: []Observation{MessageObserved{From: "master-1", To: "master-2", Type: "MsgHeartbeat", Term: 3, Count: 4}}, pass: false},
	})
}

func TestKeyExists(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "written", check: "key-exists: {key: /klab/greeting}", after: []Observation{KeyObserved{Key: "/klab/greeting", Value: "hi"}}, pass: true},
		{name: "another key", check: "key-exists: {key: /klab/greeting}", after: []Observation{KeyObserved{Key: "/klab/other", Value: "hi"}}, pass: false},
		{name: "deleted", check: "key-exists: {key: /klab/greeting}", before: []Observation{KeyObserved{Key: "/klab/greeting", Value: "hi"}},
			after: []Observation{KeyObserved{Key: "/klab/greeting", Deleted: true}}, pass: true}, // it existed when the step began
		{name: "wrong value", check: "key-exists: {key: /klab/greeting, value: hello}", after: []Observation{KeyObserved{Key: "/klab/greeting", Value: "hi"}}, pass: false},
		{name: "right value", check: "key-exists: {key: /klab/greeting, value: hello}", before: []Observation{KeyObserved{Key: "/klab/greeting", Value: "hi"}},
			after: []Observation{KeyObserved{Key: "/klab/greeting", Value: "hello"}}, pass: true},
		{name: "a number as a value", check: "key-exists: {key: /n, value: 3}", after: []Observation{KeyObserved{Key: "/n", Value: "3"}}, pass: true},
	})
}

func TestWriteRefused(t *testing.T) {
	noLeader := "{\"level\":\"warn\",...}\nError: etcdserver: no leader\n"
	runScenarios(t, []scenario{
		{name: "no leader", check: "write-refused", after: []Observation{
			ran(errExit, noLeader, "klab", "etcdctl", "put", "/klab/quorum", "two-down"),
		}, pass: true},
		{name: "etcdctl gave up", check: "write-refused: {key: /klab/quorum}", after: []Observation{
			ran(errExit, "Error: context deadline exceeded", "etcdctl", "--endpoints", "http://127.0.0.1:2379", "put", "/klab/quorum", "x"),
		}, pass: true},
		{name: "a delete times out", check: "write-refused", after: []Observation{
			ran(errExit, "Error: etcdserver: request timed out", "klab", "etcdctl", "del", "/k"),
		}, pass: true},
		{name: "a usage error", check: "write-refused", after: []Observation{
			ran(errExit, "Error: put command needs 1 argument and input from stdin or 2 arguments", "klab", "etcdctl", "put", "/k"),
		}, pass: false},
		{name: "accepted", check: "write-refused", after: []Observation{ran(nil, "OK", "klab", "etcdctl", "put", "/k", "v")}, pass: false},
		{name: "another key", check: "write-refused: {key: /klab/quorum}", after: []Observation{
			ran(errExit, noLeader, "klab", "etcdctl", "put", "/klab/other", "v"),
		}, pass: false},
		{name: "a read", check: "write-refused", after: []Observation{
			ran(errExit, "Error: context deadline exceeded", "klab", "etcdctl", "get", "/k"),
		}, pass: false},
		{name: "refused before the step", check: "write-refused", before: []Observation{
			ran(errExit, noLeader, "klab", "etcdctl", "put", "/k", "v"),
		}, pass: false},
		{name: "the error only in Err", check: "write-refused", after: []Observation{
			ran(errors.New("etcdserver: no leader"), "", "etcdctl", "put", "/k", "v"),
		}, pass: true},
	})
}

func TestCommandSucceeded(t *testing.T) {
	const check = "command-succeeded: {command: klab etcdctl get --prefix}"
	runScenarios(t, []scenario{
		{name: "exactly", check: "command-succeeded: {command: klab kubectl get nodes}",
			after: []Observation{ran(nil, "", "klab", "kubectl", "get", "nodes")}, pass: true},
		{name: "with more words", check: check,
			after: []Observation{ran(nil, "", "klab", "etcdctl", "get", "/", "--prefix", "--keys-only")}, pass: true},
		{name: "without klab", check: check,
			after: []Observation{ran(nil, "", "etcdctl", "--name", "lab", "get", "/registry", "--prefix")}, pass: true},
		{name: "words out of order", check: check,
			after: []Observation{ran(nil, "", "klab", "etcdctl", "--prefix", "get", "/")}, pass: false},
		{name: "another command", check: check,
			after: []Observation{ran(nil, "", "klab", "kubectl", "get", "--prefix")}, pass: false},
		{name: "failed", check: check,
			after: []Observation{ran(errExit, "Error: no endpoints", "klab", "etcdctl", "get", "/", "--prefix")}, pass: false},
		{name: "failed, then succeeded", check: check, after: []Observation{
			ran(errExit, "Error: no endpoints", "klab", "etcdctl", "get", "/", "--prefix"),
			ran(nil, "", "klab", "etcdctl", "get", "/", "--prefix"),
		}, pass: true},
		{name: "before the step", check: check,
			before: []Observation{ran(nil, "", "klab", "etcdctl", "get", "/", "--prefix")}, pass: false},
	})
}

func node(name string, ready bool) NodeObserved { return NodeObserved{Node: name, Ready: ready} }

func pod(name, node, phase string, labels map[string]string) PodObserved {
	return PodObserved{Namespace: "default", Name: name, Node: node, Phase: phase, Labels: labels}
}

func TestNodesReady(t *testing.T) {
	six := []Observation{
		node("master-1", true), node("master-2", true), node("master-3", true),
		node("worker-1", true), node("worker-2", true), node("worker-3", true),
	}
	runScenarios(t, []scenario{
		{name: "all ready", check: "nodes-ready: {count: 6}", before: six, pass: true},
		{name: "one not ready", check: "nodes-ready: {count: 6}", before: seq(six, []Observation{node("worker-2", false)}), pass: false},
		{name: "one deleted", check: "nodes-ready: {count: 6}", before: seq(six, []Observation{NodeObserved{Node: "worker-2", Deleted: true}}), pass: false},
		{name: "ready again", check: "nodes-ready: {count: 6}", before: seq(six, []Observation{node("worker-2", false)}),
			after: []Observation{node("worker-2", true)}, pass: true},
		{name: "registered late", check: "nodes-ready: {count: 6}", before: six[:5], after: six[5:], pass: true},
	})
}

func TestPodsRunning(t *testing.T) {
	web := map[string]string{"app": "web"}
	const check = "pods-running: {selector: app=web, count: 3, minNodes: 2}"
	runScenarios(t, []scenario{
		{name: "spread", check: check, after: []Observation{
			pod("web-1", "worker-1", "Running", web), pod("web-2", "worker-2", "Running", web), pod("web-3", "worker-1", "Running", web),
		}, pass: true},
		{name: "all on one node", check: check, after: []Observation{
			pod("web-1", "worker-1", "Running", web), pod("web-2", "worker-1", "Running", web), pod("web-3", "worker-1", "Running", web),
		}, pass: false},
		{name: "one pending", check: check, after: []Observation{
			pod("web-1", "worker-1", "Running", web), pod("web-2", "worker-2", "Running", web), pod("web-3", "", "Pending", web),
		}, pass: false},
		{name: "one terminating", check: check, after: []Observation{
			pod("web-1", "worker-1", "Running", web), pod("web-2", "worker-2", "Running", web),
			PodObserved{Namespace: "default", Name: "web-3", Node: "worker-3", Phase: "Running", Labels: web, Terminating: true},
		}, pass: false},
		{name: "other labels", check: check, after: []Observation{
			pod("web-1", "worker-1", "Running", web), pod("web-2", "worker-2", "Running", web),
			pod("db-1", "worker-3", "Running", map[string]string{"app": "db"}),
		}, pass: false},
		{name: "another namespace", check: check, after: []Observation{
			pod("web-1", "worker-1", "Running", web), pod("web-2", "worker-2", "Running", web),
			PodObserved{Namespace: "prod", Name: "web-3", Node: "worker-3", Phase: "Running", Labels: web},
		}, pass: false},
		{name: "a pod deleted", check: check, before: []Observation{
			pod("web-1", "worker-1", "Running", web), pod("web-2", "worker-2", "Running", web),
		}, after: []Observation{
			PodObserved{Namespace: "default", Name: "web-1", Deleted: true}, pod("web-3", "worker-3", "Running", web),
		}, pass: false},
		{name: "a set-based selector", check: "pods-running: {selector: 'app in (web,api)', count: 2}", after: []Observation{
			pod("web-1", "worker-1", "Running", web), pod("api-1", "worker-1", "Running", map[string]string{"app": "api"}),
		}, pass: true},
		{name: "off the masters", check: "pods-running: {selector: app=web, count: 2, offMasters: true}", after: []Observation{
			pod("web-1", "worker-1", "Running", web), pod("web-2", "worker-2", "Running", web),
		}, pass: true},
		{name: "one on a master", check: "pods-running: {selector: app=web, count: 2, offMasters: true}", after: []Observation{
			pod("web-3", "master-1", "Pending", web), pod("web-1", "worker-1", "Running", web), pod("web-2", "worker-2", "Running", web),
		}, pass: false},
		{name: "on a master, not asked", check: "pods-running: {selector: app=web, count: 2}", after: []Observation{
			pod("web-1", "worker-1", "Running", web), pod("web-2", "master-1", "Running", web),
		}, pass: true},
	})
}

func TestAll(t *testing.T) {
	const check = `all:
  - nodes-ready: {count: 1}
  - command-succeeded: {command: klab kubectl get nodes}`
	runScenarios(t, []scenario{
		{name: "both", check: check, before: []Observation{node("worker-1", true)},
			after: []Observation{ran(nil, "", "klab", "kubectl", "get", "nodes")}, pass: true},
		{name: "the command before the node", check: check,
			after: []Observation{ran(nil, "", "klab", "kubectl", "get", "nodes"), node("worker-1", true)}, pass: true},
		{name: "the node only", check: check, before: []Observation{node("worker-1", true)}, pass: false},
		{name: "the command only", check: check, after: []Observation{ran(nil, "", "klab", "kubectl", "get", "nodes")}, pass: false},
	})
	// Only the conditions still missing are given as reasons.
	v := judge(t, scenario{check: check, before: []Observation{node("worker-1", true)}})
	if len(v.Reasons) != 1 || v.Reasons[0].Key != "lessons.check.not-run" {
		t.Errorf("reasons %v, want the command's only", v.Reasons)
	}
}

func TestAny(t *testing.T) {
	const check = `any:
  - write-refused: {key: /k}
  - key-exists: {key: /k, value: v}`
	runScenarios(t, []scenario{
		{name: "refused", check: check, after: []Observation{ran(errors.New("exit 1"), "Error: etcdserver: no leader", "klab", "etcdctl", "put", "/k", "v")}, pass: true},
		{name: "committed", check: check, after: []Observation{KeyObserved{Key: "/k", Value: "v"}}, pass: true},
		{name: "neither", check: check, after: []Observation{KeyObserved{Key: "/k", Value: "w"}}, pass: false},
	})
}

// TestDescribe requires every kind of check to say what it waits for, in
// both languages.
func TestDescribe(t *testing.T) {
	checks := map[CheckKind]string{
		KindLeaderElected:    "leader-elected: {members: 3}",
		KindLeaderChanged:    "leader-changed",
		KindNoLeader:         "no-leader",
		KindMemberState:      "member-state: {member: master-1, state: down}",
		KindMembersRunning:   "members-running: {count: 3}",
		KindRaftClock:        "raft-clock: {paused: true, minSlowdown: 2, maxSlowdown: 5}",
		KindRaftMessage:      "raft-message: {type: MsgVote}",
		KindKeyExists:        "key-exists: {key: /a, value: b}",
		KindWriteRefused:     "write-refused: {key: /a}",
		KindCommandSucceeded: "command-succeeded: {command: klab status}",
		KindNodesReady:       "nodes-ready: {count: 1}",
		KindPodsRunning:      "pods-running: {selector: app=web, count: 3, minNodes: 2}",
		KindObject:           "object: {kind: pods, labels: app=web, where: ['{.status.phase} == Running'], min: 2, distinctNodes: 2, noneOnMasters: true}",
		KindEvent:            "event: {reason: Scheduled, type: Normal, kind: Pod, name: web-, message: assigned}",
		KindAPIRequest:       "api-request: {verb: list, resource: pods, namespace: kube-system, code: 2xx}",
		KindEtcdRequest:      "etcd-request: {method: Range, prefix: /registry/pods/, from: outside}",
		KindLeaseHolder:      "lease-holder-changed: {name: kube-scheduler}",
		KindNodeCondition:    "node-condition: {type: Ready, status: Unknown}",
		KindNodeTaint:        "node-taint: {node: master-1, key: k, effect: NoSchedule, absent: true}",
		KindProxyMode:        "proxy-mode: {mode: ipvs}",
		KindTraffic:          "traffic: {minPods: 2, maxFailed: 0, minFailed: 1, maxNodes: 1, mode: ipvs}",
		KindProxyService:     "proxy-service: {name: web, namespace: shop, endpoints: 2, externalLocal: true, internalLocal: true}",
		KindAll:              "all: [no-leader, leader-changed]",
		KindAny:              "any: [no-leader, leader-changed]",
	}
	for _, kind := range CheckKinds {
		text, ok := checks[kind]
		if !ok {
			t.Errorf("no case for %s", kind)
			continue
		}
		c := mustCheck(t, text)
		if c.Kind() != kind {
			t.Errorf("%s parsed as %s", text, c.Kind())
		}
		desc := c.Describe()
		if len(desc) == 0 {
			t.Errorf("%s describes nothing", kind)
		}
		for _, l := range i18n.Langs {
			for _, m := range desc {
				if s := render(t, l, m); s == "" || strings.Contains(s, "%!") {
					t.Errorf("%s: %q renders as %q in %s", kind, m.Key, s, l)
				}
			}
		}
	}
	if got := len(mustCheck(t, checks[KindRaftClock]).Describe()); got != 3 {
		t.Errorf("raft-clock with three conditions describes %d", got)
	}
}

func TestNeeds(t *testing.T) {
	c := mustCheck(t, `all:
  - key-exists: {key: /a}
  - key-exists: {key: /b}
  - key-exists: {key: /a}
  - pods-running: {selector: app=web, count: 1}`)
	n := c.Needs()
	if strings.Join(n.Keys, ",") != "/a,/b" || !n.Pods || n.Members || n.Commands {
		t.Errorf("needs %+v", n)
	}
}

func TestKeyValueShortened(t *testing.T) {
	long := strings.Repeat("x", 100)
	v := judge(t, scenario{check: "key-exists: {key: /k}", after: []Observation{KeyObserved{Key: "/k", Value: long}}})
	if got := v.Reasons[0].Args[1].(string); len([]rune(got)) != maxValueShown || !strings.HasSuffix(got, "…") {
		t.Errorf("value shown as %q", got)
	}
}

// TestRefusalReasonIsTheError: etcdctl logs warnings before its error; the
// reason quotes the error.
func TestRefusalReasonIsTheError(t *testing.T) {
	out := `{"level":"warn","msg":"retrying of unary invoker failed","error":"rpc error: code = DeadlineExceeded"}` + "\nError: context deadline exceeded\n"
	v := judge(t, scenario{check: "write-refused", after: []Observation{ran(errExit, out, "klab", "etcdctl", "put", "/k", "v")}})
	if !v.Passed || v.Reasons[0].Args[1] != "Error: context deadline exceeded" {
		t.Errorf("verdict %+v", v)
	}
	v = judge(t, scenario{check: "command-succeeded: {command: klab etcdctl put}", after: []Observation{ran(errExit, out, "klab", "etcdctl", "put", "/k", "v")}})
	if v.Passed || v.Reasons[0].Args[1] != "Error: context deadline exceeded" {
		t.Errorf("verdict %+v", v)
	}
}
