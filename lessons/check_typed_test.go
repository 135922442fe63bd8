package lessons

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/assets/i18n"
)

// The checks of what the cluster saw, fed by hand as the live feed would
// feed them.

var (
	podsGR   = schema.GroupResource{Resource: "pods"}
	deployGR = schema.GroupResource{Group: "apps", Resource: "deployments"}
)

// podObject is a pod as a watch of pods reports it.
func podObject(name, node, phase string, labels map[string]any) ObjectObserved {
	return ObjectObserved{Resource: podsGR, Namespace: "default", Name: name, Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": "default", "labels": labels},
		"spec":     map[string]any{"nodeName": node},
		"status":   map[string]any{"phase": phase},
	}}
}

var web = map[string]any{"app": "web"}

func terminating(o ObjectObserved) ObjectObserved {
	meta := o.Object["metadata"].(map[string]any)
	copied := map[string]any{"deletionTimestamp": "2026-01-01T00:00:00Z"}
	for k, v := range meta {
		copied[k] = v
	}
	obj := map[string]any{"metadata": copied, "spec": o.Object["spec"], "status": o.Object["status"]}
	o.Object = obj
	return o
}

func TestObjectCheck(t *testing.T) {
	spread := "object: {kind: pods, labels: app=web, where: '{.status.phase} == Running', min: 3, distinctNodes: 2, noneOnMasters: true}"
	three := []Observation{
		podObject("web-1", "worker-1", "Running", web),
		podObject("web-2", "worker-2", "Running", web),
		podObject("web-3", "worker-1", "Running", web),
	}
	runScenarios(t, []scenario{
		{name: "three running on two workers", check: spread, after: three, pass: true},
		{name: "one pending", check: spread, after: seq(three[:2], []Observation{podObject("web-3", "worker-1", "Pending", web)}), pass: false},
		{name: "one on a master", check: spread, before: []Observation{podObject("web-4", "master-1", "Pending", web)}, after: three, pass: false},
		{name: "one node only", check: spread, after: []Observation{
			podObject("web-1", "worker-1", "Running", web), podObject("web-2", "worker-1", "Running", web), podObject("web-3", "worker-1", "Running", web),
		}, pass: false},
		{name: "other labels do not count", check: spread, after: seq(three[:2], []Observation{podObject("db-1", "worker-3", "Running", map[string]any{"app": "db"})}), pass: false},
		{name: "terminating does not count", check: spread, after: seq(three[:2], []Observation{terminating(three[2].(ObjectObserved))}), pass: false},
		{name: "deleted does not count", check: spread, before: seq(three[2:], []Observation{ObjectObserved{Resource: podsGR, Namespace: "default", Name: "web-3", Deleted: true}}), after: three[:2], pass: false},
		{name: "other namespace", check: "object: {kind: pods, namespace: kube-system}", after: three, pass: false},
		{name: "exact count", check: "object: {kind: po, labels: app=web, count: 3}", after: three, pass: true},
		{name: "exact count exceeded", check: "object: {kind: po, labels: app=web, count: 2}", before: three, pass: false},
		{name: "none left", check: "object: {kind: pods, labels: app=web, count: 0}", after: seq(three, []Observation{
			ObjectObserved{Resource: podsGR, Namespace: "default", Name: "web-1", Deleted: true},
			ObjectObserved{Resource: podsGR, Namespace: "default", Name: "web-2", Deleted: true},
			ObjectObserved{Resource: podsGR, Namespace: "default", Name: "web-3", Deleted: true},
		}), pass: true},
		{name: "max", check: "object: {kind: pods, max: 2}", before: three, pass: false},
		{name: "by name", check: "object: {kind: Pod, name: web-2, where: ['{.spec.nodeName} == worker-2']}", after: three, pass: true},
		{name: "field absent", check: "object: {kind: pods, name: web-2, where: '{.metadata.deletionTimestamp} absent'}", after: three, pass: true},
		{name: "numeric comparison", check: "object: {kind: deployments, name: web, where: ['{.status.readyReplicas} >= 3', '{.spec.replicas} exists']}", after: []Observation{
			ObjectObserved{Resource: deployGR, Namespace: "default", Name: "web", Object: map[string]any{
				"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": int64(3)}, "status": map[string]any{"readyReplicas": int64(3)},
			}},
		}, pass: true},
		{name: "numeric comparison fails", check: "object: {kind: deployments, name: web, where: '{.status.readyReplicas} >= 3'}", after: []Observation{
			ObjectObserved{Resource: deployGR, Namespace: "default", Name: "web", Object: map[string]any{
				"metadata": map[string]any{"name": "web"}, "status": map[string]any{"readyReplicas": int64(2)},
			}},
		}, pass: false},
		{name: "pods of another resource do not count", check: "object: {kind: deployments}", after: three, pass: false},
	})
}

func TestFieldTests(t *testing.T) {
	obj := map[string]any{
		"status": map[string]any{
			"phase": "Running", "ready": true, "count": int64(4), "ratio": 0.5,
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True"},
				map[string]any{"type": "MemoryPressure", "status": "False"},
			},
		},
		"spec": map[string]any{"nodeName": nil},
	}
	for _, tc := range []struct {
		test string
		want bool
	}{
		{"{.status.phase} == Running", true},
		{"{.status.phase} == 'Running'", true},
		{"{.status.phase} != Running", false},
		{"{.status.phase} != Pending", true},
		{"{.status.missing} != Pending", true},
		{"{.status.phase}", true},
		{"{.status.phase} exists", true},
		{"{.status.missing} exists", false},
		{"{.status.missing} absent", true},
		{"{.spec.nodeName} absent", true},
		{"{.status.ready} == true", true},
		{"{.status.count} > 3", true},
		{"{.status.count} < 4", false},
		{"{.status.count} <= 4", true},
		{"{.status.ratio} >= 0.5", true},
		{"{.status.phase} > 1", false},
		{`{.status.conditions[?(@.type=="Ready")].status} == True`, true},
		{`{.status.conditions[?(@.type=="MemoryPressure")].status} == True`, false},
		{"{.status.conditions[*].type} == MemoryPressure", true},
		{"{.status.phase} ^= Run", true},
		{"{.status.phase} ^= Running", true},
		{"{.status.phase} ^= unning", false},
		{"{.status.missing} ^= R", false},
		{"{.status.conditions[*].type} ^= Memory", true},
	} {
		ft, err := ParseFieldTest(tc.test)
		if err != nil {
			t.Errorf("%s: %v", tc.test, err)
			continue
		}
		if got := ft.holds(obj); got != tc.want {
			t.Errorf("%s on the object: %v, want %v", tc.test, got, tc.want)
		}
	}
	for _, bad := range []string{
		"", ".status.phase == Running", "{.status.phase", "{.status.phase} = Running", "{.status.phase} ==", "{.status.phase} ^=",
		"{.status.count} > many", "{.status.phase} exists now", "{range .items[*]}{.x}{end}", "text {.a}",
		"{.status[} == x", "{.a}{.b}", "{" + strings.Repeat("a", 300) + "}",
	} {
		if _, err := ParseFieldTest(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestEventCheck(t *testing.T) {
	scheduled := EventObserved{Namespace: "default", Reason: "Scheduled", Type: "Normal", Kind: "Pod", Name: "web-7d9f-abcde", Message: "Successfully assigned default/web-7d9f-abcde to worker-1"}
	failed := EventObserved{Namespace: "default", Reason: "FailedScheduling", Type: "Warning", Kind: "Pod", Name: "web-7d9f-xyz", Message: "0/4 nodes are available: 1 node(s) had untolerated taint"}
	runScenarios(t, []scenario{
		{name: "scheduled", check: "event: {reason: Scheduled, kind: Pod, name: web-}", after: []Observation{scheduled}, pass: true},
		{name: "before the step does not count", check: "event: {reason: Scheduled}", before: []Observation{scheduled}, pass: false},
		{name: "other reason", check: "event: {reason: Scheduled}", after: []Observation{failed}, pass: false},
		{name: "other name", check: "event: {reason: Scheduled, name: db-}", after: []Observation{scheduled}, pass: false},
		{name: "message and type", check: "event: {type: Warning, message: untolerated taint}", after: []Observation{scheduled, failed}, pass: true},
		{name: "wrong type", check: "event: {type: Normal, message: untolerated taint}", after: []Observation{failed}, pass: false},
		{name: "two needed", check: "event: {reason: Scheduled, count: 2}", after: []Observation{scheduled}, pass: false},
		{name: "other namespace", check: "event: {reason: Scheduled, namespace: kube-system}", after: []Observation{scheduled}, pass: false},
	})
}

func request(verb, resource, ns, user string, code int) RequestObserved {
	return RequestObserved{Server: "master-1", Verb: verb, Resource: resource, Namespace: ns, User: user, Code: code, Time: time.Now()}
}

func TestAPIRequestCheck(t *testing.T) {
	listKS := request("list", "pods", "kube-system", "kubernetes-admin", 200)
	runScenarios(t, []scenario{
		{name: "list of pods in kube-system", check: "api-request: {verb: list, resource: pods, namespace: kube-system}", after: []Observation{listKS}, pass: true},
		{name: "any namespace is not kube-system", check: "api-request: {verb: list, resource: pods, namespace: kube-system}", after: []Observation{request("list", "pods", "default", "kubernetes-admin", 200)}, pass: false},
		{name: "before the step does not count", check: "api-request: {verb: list, resource: pods}", before: []Observation{listKS}, pass: false},
		{name: "kind and short names", check: "api-request: {verb: list, resource: po}", after: []Observation{listKS}, pass: true},
		{name: "code class", check: "api-request: {verb: create, resource: deployments, code: 2xx}", after: []Observation{request("create", "deployments", "default", "kubernetes-admin", 201)}, pass: true},
		{name: "refused", check: "api-request: {verb: create, resource: deployments, code: 2xx}", after: []Observation{request("create", "deployments", "default", "kubernetes-admin", 403)}, pass: false},
		{name: "exact code", check: "api-request: {verb: get, code: 404}", after: []Observation{request("get", "pods", "default", "u", 404)}, pass: true},
		{name: "other user", check: "api-request: {verb: list, user: alice}", after: []Observation{listKS}, pass: false},
		{name: "subresource", check: "api-request: {verb: create, resource: pods, subresource: binding}", after: []Observation{
			RequestObserved{Verb: "create", Resource: "pods", Subresource: "binding", Namespace: "default", Code: 201, User: "system:kube-scheduler"},
		}, pass: true},
	})
}

// TestRequestsKeptOnlyWhenRead: the requests of a step whose check does
// not read them are not kept, nor carried into the next step.
func TestRequestsKeptOnlyWhenRead(t *testing.T) {
	e := NewEvaluator()
	e.Begin(mustCheck(t, "no-leader"))
	e.Observe(request("list", "pods", "kube-system", "admin", 200))
	if len(e.now.requests) != 0 {
		t.Fatalf("kept %d requests for a check that does not read them", len(e.now.requests))
	}
	e.Begin(mustCheck(t, "api-request: {verb: list}"))
	for range maxStepEvents + 10 {
		e.Observe(request("get", "pods", "default", "admin", 200))
	}
	if len(e.now.requests) != maxStepEvents {
		t.Errorf("kept %d requests, want the last %d", len(e.now.requests), maxStepEvents)
	}
	if v := e.Verdict(); v.Passed {
		t.Errorf("passed on gets: %s", reasons(t, v))
	}
}

func lease(holder string, transitions int64) ObjectObserved {
	return ObjectObserved{Resource: leasesResource.GroupResource(), Namespace: "kube-system", Name: "kube-scheduler", Object: map[string]any{
		"metadata": map[string]any{"name": "kube-scheduler", "namespace": "kube-system"},
		"spec":     map[string]any{"holderIdentity": holder, "leaseTransitions": transitions},
	}}
}

func TestLeaseHolderChanged(t *testing.T) {
	c := "lease-holder-changed: {name: kube-scheduler}"
	runScenarios(t, []scenario{
		{name: "new holder", check: c, before: []Observation{lease("master-1_a", 0)}, after: []Observation{lease("master-2_b", 1)}, pass: true},
		{name: "same holder renewing", check: c, before: []Observation{lease("master-1_a", 0)}, after: []Observation{lease("master-1_a", 0)}, pass: false},
		{name: "lost and taken back", check: c, before: []Observation{lease("master-1_a", 0)}, after: []Observation{lease("master-1_a", 2)}, pass: true},
		{name: "released, no holder yet", check: c, before: []Observation{lease("master-1_a", 0)}, after: []Observation{lease("", 0)}, pass: false},
		{name: "not seen", check: c, pass: false},
		{name: "created during the step", check: c, after: []Observation{lease("master-3_c", 0)}, pass: true},
		{name: "other lease", check: "lease-holder-changed: {name: kube-controller-manager}", before: []Observation{lease("master-1_a", 0)}, after: []Observation{lease("master-2_b", 1)}, pass: false},
	})
}

func nodeObject(name string, ready string, taints ...string) ObjectObserved {
	var ts []any
	for _, t := range taints {
		key, effect, _ := strings.Cut(t, ":")
		ts = append(ts, map[string]any{"key": key, "effect": effect})
	}
	return ObjectObserved{Resource: nodesResource.GroupResource(), Name: name, Object: map[string]any{
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"taints": ts},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": ready},
			map[string]any{"type": "MemoryPressure", "status": "False"},
		}},
	}}
}

func TestNodeChecks(t *testing.T) {
	cp := "node-role.kubernetes.io/control-plane:NoSchedule"
	nodes := []Observation{nodeObject("master-1", "True", cp), nodeObject("worker-1", "True"), nodeObject("worker-2", "True")}
	runScenarios(t, []scenario{
		{name: "worker not ready", check: `node-condition: {node: worker-1, type: Ready, status: "False"}`, before: nodes, after: []Observation{nodeObject("worker-1", "False")}, pass: true},
		{name: "worker still ready", check: `node-condition: {node: worker-1, type: Ready, status: "False"}`, before: nodes, pass: false},
		{name: "any node unknown", check: "node-condition: {type: Ready, status: Unknown}", before: nodes, after: []Observation{nodeObject("worker-2", "Unknown")}, pass: true},
		{name: "no memory pressure anywhere", check: `node-condition: {type: MemoryPressure, status: "True", absent: true}`, before: nodes, pass: true},
		{name: "not seen", check: `node-condition: {node: worker-9, type: Ready, status: "True"}`, before: nodes, pass: false},
		{name: "cordoned", check: "node-taint: {node: worker-2, key: node.kubernetes.io/unschedulable}", before: nodes, after: []Observation{nodeObject("worker-2", "True", "node.kubernetes.io/unschedulable:NoSchedule")}, pass: true},
		{name: "not cordoned", check: "node-taint: {node: worker-2, key: node.kubernetes.io/unschedulable}", before: nodes, pass: false},
		{name: "effect differs", check: "node-taint: {node: master-1, key: node-role.kubernetes.io/control-plane, effect: NoExecute}", before: nodes, pass: false},
		{name: "taint removed", check: "node-taint: {node: master-1, key: node-role.kubernetes.io/control-plane, absent: true}", before: nodes, after: []Observation{nodeObject("master-1", "True")}, pass: true},
		{name: "taint still there", check: "node-taint: {key: node-role.kubernetes.io/control-plane, absent: true}", before: nodes, pass: false},
	})
}

func TestProxyModeCheck(t *testing.T) {
	all := func(mode string) []Observation {
		return []Observation{ProxyObserved{Node: "master-1", Mode: mode}, ProxyObserved{Node: "worker-1", Mode: mode}}
	}
	runScenarios(t, []scenario{
		{name: "all in ipvs", check: "proxy-mode: {mode: ipvs}", before: all("iptables"), after: all("ipvs"), pass: true},
		{name: "one behind", check: "proxy-mode: {mode: ipvs}", before: all("iptables"), after: all("ipvs")[:1], pass: false},
		{name: "one silent", check: "proxy-mode: {mode: ipvs}", before: []Observation{ProxyObserved{Node: "worker-1", Unreachable: true}}, after: all("ipvs")[:1], pass: false},
		{name: "none seen", check: "proxy-mode: {mode: ipvs}", pass: false},
	})
}

func TestTrafficCheck(t *testing.T) {
	run := func(failed int, pods ...string) TrafficObserved {
		counts := map[string]int{}
		for _, p := range pods {
			counts[p] = 10
		}
		return TrafficObserved{Target: "10.96.0.10:80", Requests: 10*len(pods) + failed, Failed: failed, Pods: counts}
	}
	runScenarios(t, []scenario{
		{name: "three pods answered", check: "traffic: {minPods: 3, maxFailed: 0}", after: []Observation{run(0, "default/web-1", "default/web-2", "default/web-3")}, pass: true},
		{name: "two pods", check: "traffic: {minPods: 3}", after: []Observation{run(0, "default/web-1", "default/web-2")}, pass: false},
		{name: "failures", check: "traffic: {minPods: 1, maxFailed: 0}", after: []Observation{run(2, "default/web-1")}, pass: false},
		{name: "the last run counts", check: "traffic: {minPods: 2}", after: []Observation{run(0, "default/web-1"), run(0, "default/web-1", "default/web-2")}, pass: true},
		{name: "a run before the step", check: "traffic", before: []Observation{run(0, "default/web-1")}, pass: false},
	})
}

func TestTrafficCheckModeNodesFailures(t *testing.T) {
	run := func(failed int, modes map[string]int, nodes map[string]int) TrafficObserved {
		total := 0
		for _, n := range modes {
			total += n
		}
		return TrafficObserved{Requests: total, Failed: failed, Pods: map[string]int{"default/web-1": total - failed}, Nodes: nodes, Modes: modes}
	}
	one := map[string]int{"worker-1": 10}
	two := map[string]int{"worker-1": 5, "worker-2": 5}
	runScenarios(t, []scenario{
		{name: "in ipvs", check: "traffic: {mode: ipvs}", after: []Observation{run(0, map[string]int{"ipvs": 10}, one)}, pass: true},
		{name: "half before the switch", check: "traffic: {mode: ipvs}", after: []Observation{run(0, map[string]int{"ipvs": 5, "iptables": 5}, one)}, pass: false},
		{name: "another mode", check: "traffic: {mode: ipvs}", after: []Observation{run(0, map[string]int{"iptables": 10}, one)}, pass: false},
		{name: "failures wanted", check: "traffic: {minFailed: 1}", after: []Observation{run(2, map[string]int{"nftables": 10}, one)}, pass: true},
		{name: "no failure", check: "traffic: {minFailed: 1}", after: []Observation{run(0, map[string]int{"nftables": 10}, one)}, pass: false},
		{name: "one node", check: "traffic: {maxNodes: 1}", after: []Observation{run(0, map[string]int{"iptables": 10}, one)}, pass: true},
		{name: "two nodes", check: "traffic: {maxNodes: 1}", after: []Observation{run(0, map[string]int{"iptables": 10}, two)}, pass: false},
	})
}

func TestProxyServiceCheck(t *testing.T) {
	proxies := func(eps ...int) []Observation {
		// Reported last node first: a step passes as soon as its check
		// holds, so the node that is behind must be seen before the rest.
		var out []Observation
		for i := len(eps) - 1; i >= 0; i-- {
			n := eps[i]
			svcs := map[string]ProxiedService{"kube-system/kube-dns": {Endpoints: 1}}
			if n >= 0 {
				svcs["default/web"] = ProxiedService{Endpoints: n, ExternalLocal: n > 3}
			}
			out = append(out, ProxyObserved{Node: fmt.Sprintf("worker-%d", i+1), Mode: "iptables", Services: svcs})
		}
		return out
	}
	runScenarios(t, []scenario{
		{name: "programmed everywhere", check: "proxy-service: {name: web, endpoints: 3}", after: proxies(3, 4), pass: true},
		{name: "one not yet", check: "proxy-service: {name: web, endpoints: 3}", after: proxies(3, -1), pass: false},
		{name: "too few endpoints", check: "proxy-service: {name: web, endpoints: 3}", after: proxies(3, 2), pass: false},
		{name: "other namespace", check: "proxy-service: {name: web, namespace: shop}", after: proxies(3, 3), pass: false},
		{name: "one silent", check: "proxy-service: {name: web}", after: append([]Observation{ProxyObserved{Node: "worker-2", Unreachable: true}}, proxies(3)...), pass: false},
		{name: "none seen", check: "proxy-service: {name: web}", pass: false},
		{name: "Local everywhere", check: "proxy-service: {name: web, externalLocal: true}", after: proxies(4, 4), pass: true},
		{name: "Local not yet programmed", check: "proxy-service: {name: web, externalLocal: true}", after: proxies(4, 3), pass: false},
	})
}

// TestProxyServiceCheckGonePods: a proxy that still programs a pod a
// rollout deleted, or one that is terminating, would send a share of the
// next connections nowhere, so the check waits for its next sync even
// though the count of endpoints is met.
func TestProxyServiceCheckGonePods(t *testing.T) {
	pod := func(name string, terminating, deleted bool) Observation {
		return PodObserved{Namespace: "default", Name: name, Phase: "Running", Terminating: terminating, Deleted: deleted}
	}
	proxy := func(pods ...string) Observation {
		return ProxyObserved{Node: "worker-1", Mode: "iptables", Services: map[string]ProxiedService{"default/web": {Endpoints: len(pods), Pods: pods}}}
	}
	live := []Observation{pod("web-new-1", false, false), pod("web-new-2", false, false), pod("web-new-3", false, false)}
	runScenarios(t, []scenario{
		{name: "all current", check: "proxy-service: {name: web, endpoints: 3}", after: append(live, proxy("web-new-1", "web-new-2", "web-new-3")), pass: true},
		{name: "an old pod deleted", check: "proxy-service: {name: web, endpoints: 3}",
			after: append(append(live, pod("web-old-1", false, true)), proxy("web-new-1", "web-new-2", "web-old-1")), pass: false},
		{name: "an old pod terminating", check: "proxy-service: {name: web, endpoints: 3}",
			after: append(append(live, pod("web-old-1", true, false)), proxy("web-new-1", "web-new-2", "web-old-1")), pass: false},
		{name: "the proxy catches up", check: "proxy-service: {name: web, endpoints: 3}",
			after: append(append(live, pod("web-old-1", false, true), proxy("web-new-1", "web-new-2", "web-old-1")), proxy("web-new-1", "web-new-2", "web-new-3")), pass: true},
	})
}

func TestTypedNeeds(t *testing.T) {
	n := mustCheck(t, `all:
  - object: {kind: pods}
  - object: {kind: po, labels: app=web}
  - node-taint: {key: k}
  - lease-holder-changed: {name: kube-scheduler}
  - api-request: {verb: list}
  - event: {reason: Scheduled}
  - proxy-mode: {mode: ipvs}
  - traffic`).Needs()
	if len(n.Objects) != 3 || !n.Requests || !n.Events || !n.Proxies || !n.Traffic || n.Pods || n.Members {
		t.Errorf("needs %+v", n)
	}
	if !n.wants(ObjectObserved{Resource: podsGR}) || n.wants(ObjectObserved{Resource: deployGR}) {
		t.Errorf("wants the wrong objects: %+v", n.Objects)
	}
}

// TestTypedCheckErrors: each typed check's bad parameters are reported
// with file, line, column and field.
func TestTypedCheckErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want, key string }{
		{"unknown parameter", "      object: {kind: pods, colour: red}",
			`x.yaml:17:28: steps[0].check.object: unknown key "colour"; expected one of: kind, namespace, labels, name, where, count, min, max, distinctNodes, noneOnMasters`, "lessons.err.unknown-key"},
		{"missing kind", "      object: {labels: app=web}",
			`x.yaml:17:15: steps[0].check.object: missing "kind"`, "lessons.err.missing-key"},
		{"unknown kind", "      object: {kind: widgets}",
			`x.yaml:17:22: steps[0].check.object.kind: klab's API server serves no resource called "widgets"; it serves: `, "lessons.err.bad-kind"},
		{"bad JSONPath", "      object: {kind: pods, where: '{.status[} == Running'}",
			`x.yaml:17:35: steps[0].check.object.where: bad JSONPath {.status[}: `, "lessons.err.bad-jsonpath"},
		{"bad operator", "      object: {kind: pods, where: ['{.status.phase} = Running']}",
			`x.yaml:17:36: steps[0].check.object.where[0]: "= Running": after the JSONPath comes one of ==, !=, ^=, <=, >=, <, >, exists, absent`, "lessons.err.field-op"},
		{"not a field test", "      object: {kind: pods, where: [status.phase]}",
			`x.yaml:17:36: steps[0].check.object.where[0]: "status.phase" is not a field test: `, "lessons.err.field-syntax"},
		{"count and min", "      object: {kind: pods, count: 2, min: 1}",
			`x.yaml:17:35: steps[0].check.object.count: give count, or min and max, not both`, "lessons.err.count-or-bounds"},
		{"min over max", "      object: {kind: pods, min: 3, max: 2}",
			`x.yaml:17:33: steps[0].check.object.min: min must not be greater than max`, "lessons.err.min-max"},
		{"namespace of nodes", "      object: {kind: nodes, namespace: default}",
			`x.yaml:17:40: steps[0].check.object.namespace: this kind does not live in a namespace: leave namespace out`, "lessons.err.not-namespaced"},
		{"event without reason or message", "      event: {kind: Pod}",
			`x.yaml:17:14: steps[0].check.event: give at least one of: reason, message`, "lessons.err.need-one-of"},
		{"event type", "      event: {reason: Scheduled, type: Error}",
			`x.yaml:17:40: steps[0].check.event.type: "Error" is not one of: Normal, Warning`, "lessons.err.bad-choice"},
		{"request verb", "      api-request: {verb: fetch, resource: pods}",
			`x.yaml:17:27: steps[0].check.api-request.verb: "fetch" is not one of: get, list, watch, create, update, patch, delete, deletecollection`, "lessons.err.bad-choice"},
		{"request code", "      api-request: {verb: get, code: 2x}",
			`x.yaml:17:38: steps[0].check.api-request.code: "2x" is not a status code: give one such as 200 or 404, or a class such as 2xx`, "lessons.err.bad-code"},
		{"request subresource", "      api-request: {verb: get, resource: pods, subresource: scale}",
			`x.yaml:17:61: steps[0].check.api-request.subresource: "scale" is not one of: `, "lessons.err.bad-choice"},
		{"request without verb or resource", "      api-request: {user: alice}",
			`x.yaml:17:20: steps[0].check.api-request: give at least one of: verb, resource`, "lessons.err.need-one-of"},
		{"lease without name", "      lease-holder-changed: {namespace: kube-system}",
			`x.yaml:17:29: steps[0].check.lease-holder-changed: missing "name"`, "lessons.err.missing-key"},
		{"condition status", "      node-condition: {type: Ready, status: yes}",
			`x.yaml:17:45: steps[0].check.node-condition.status: "yes" is not one of: True, False, Unknown`, "lessons.err.bad-choice"},
		{"taint effect", "      node-taint: {key: k, effect: NoRun}",
			`x.yaml:17:36: steps[0].check.node-taint.effect: "NoRun" is not one of: NoSchedule, PreferNoSchedule, NoExecute`, "lessons.err.bad-choice"},
		{"proxy mode", "      proxy-mode: {mode: ebpf}",
			`x.yaml:17:26: steps[0].check.proxy-mode.mode: "ebpf" is not one of: `, "lessons.err.bad-choice"},
		{"traffic pods", "      traffic: {minPods: 0}",
			`x.yaml:17:26: steps[0].check.traffic.minPods: must be between 1 and 10000, not 0`, "lessons.err.range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadOne(t, "x.yaml", withLine(t, 17, tc.text))
			errs := LoadErrors(err)
			if len(errs) != 1 {
				for _, e := range errs {
					t.Log(renderError(t, i18n.English, e))
				}
				t.Fatalf("got %d errors, want 1", len(errs))
			}
			got := renderError(t, i18n.English, errs[0])
			if !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(tc.want, ": ") && got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if errs[0].Msg.Key != tc.key {
				t.Errorf("key %s, want %s", errs[0].Msg.Key, tc.key)
			}
			if ko := renderError(t, i18n.Korean, errs[0]); ko == got || strings.Contains(ko, "%!") {
				t.Errorf("Korean rendering %q", ko)
			}
		})
	}
}

// TestAPIRequestSeenWithoutAUser: a request refused before anyone was
// authenticated (401) is reported as having no user, not "by ,".
func TestAPIRequestSeenWithoutAUser(t *testing.T) {
	e := NewEvaluator()
	e.Begin(mustCheck(t, "api-request: {verb: list, count: 2}"))
	e.Observe(request("list", "pods", "default", "", 401))
	got := reasons(t, e.Verdict())
	if !strings.Contains(got, "by no user: the request was not authenticated,") || strings.Contains(got, "by ,") {
		t.Errorf("reasons = %q, want the 401 said to have no user", got)
	}
}
