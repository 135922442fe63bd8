package events

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// at is a time before the fixed test time.
func at(ago time.Duration) time.Time { return uitest.Now.Add(-ago) }

var uids int

func ev(ago time.Duration, typ, reason, kind, ns, name, note, controller, instance string) eventRow {
	uids++
	return eventRow{UID: fmt.Sprintf("uid-%d", uids), Time: at(ago), First: at(ago), Type: typ, Reason: reason,
		Kind: kind, Namespace: ns, Name: name, Note: note, Controller: controller, Instance: instance, Count: 1}
}

// fixtureEvents is what a small cluster reports while a Deployment rolls
// out, one pod does not fit and another crashes.
func fixtureEvents() []eventRow {
	const n, w = "Normal", "Warning"
	failed := ev(20*time.Second, w, "FailedScheduling", "Pod", "default", "big",
		"0/6 nodes are available: 3 Insufficient cpu, 3 node(s) had untolerated taint(s).", "default-scheduler", "default-scheduler-master-1")
	failed.Count, failed.First = 3, at(80*time.Second)
	return []eventRow{
		ev(95*time.Second, n, "Starting", "Node", "", "worker-1", "Starting kubelet.", "kubelet", "worker-1"),
		ev(94*time.Second, n, "NodeReady", "Node", "", "worker-1", "Node worker-1 status is now: NodeReady", "kubelet", "worker-1"),
		ev(93*time.Second, n, "RegisteredNode", "Node", "", "worker-1", "Node worker-1 event: Registered Node worker-1 in Controller", "node-controller", ""),
		ev(90*time.Second, n, "LeaderElection", "Lease", "kube-system", "kube-scheduler", "master-1_6f1c became leader", "default-scheduler", "master-1"),
		ev(60*time.Second, n, "ScalingReplicaSet", "Deployment", "default", "web", "Scaled up replica set web-6d4cf56db6 from 0 to 3", "deployment-controller", ""),
		ev(59*time.Second, n, "SuccessfulCreate", "ReplicaSet", "default", "web-6d4cf56db6", "Created pod: web-6d4cf56db6-x7k2p", "replicaset-controller", ""),
		ev(58*time.Second, n, "Scheduled", "Pod", "default", "web-6d4cf56db6-x7k2p", "Successfully assigned default/web-6d4cf56db6-x7k2p to worker-2", "default-scheduler", "default-scheduler-master-1"),
		ev(57*time.Second, n, "Pulling", "Pod", "default", "web-6d4cf56db6-x7k2p", `Pulling image "klab/app:v1"`, "kubelet", "worker-2"),
		ev(56*time.Second, n, "Pulled", "Pod", "default", "web-6d4cf56db6-x7k2p", `Successfully pulled image "klab/app:v1" in 3ms`, "kubelet", "worker-2"),
		ev(55*time.Second, n, "Created", "Pod", "default", "web-6d4cf56db6-x7k2p", "Created container: app", "kubelet", "worker-2"),
		ev(54*time.Second, n, "Started", "Pod", "default", "web-6d4cf56db6-x7k2p", "Started container app", "kubelet", "worker-2"),
		failed,
		ev(10*time.Second, w, "BackOff", "Pod", "default", "crash", "Back-off restarting failed container app in pod crash_default(0c1d)", "kubelet", "worker-3"),
		ev(5*time.Second, n, "ProxyModeChanged", "Node", "", "worker-1", "Proxy mode changed from iptables to ipvs", "kube-proxy", "worker-1"),
		ev(2*time.Second, n, "Rebooted", "Node", "", "worker-3", "Node worker-3 has been rebooted, boot id: 3b1f", "kubelet", "worker-3"),
	}
}

func req(ago time.Duration, server, verb, resource, sub, ns, name, user string, code int, ms float64) requestRow {
	return requestRow{Server: server, RequestEvent: apiserver.RequestEvent{Time: at(ago), Verb: verb, Resource: resource, Subresource: sub,
		Namespace: ns, Name: name, User: user, Code: code, LatencyMS: ms}}
}

func fixtureRequests() []requestRow {
	r := []requestRow{
		req(62*time.Second, "master-1", "create", "deployments", "", "default", "web", "kubernetes-admin", 201, 4.2),
		req(59*time.Second, "master-2", "create", "pods", "", "default", "", "system:serviceaccount:kube-system:replicaset-controller", 201, 3.1),
		req(58*time.Second, "master-1", "create", "pods", "binding", "default", "web-6d4cf56db6-x7k2p", "system:kube-scheduler", 201, 2.7),
		req(57*time.Second, "master-3", "get", "pods", "", "default", "web-6d4cf56db6-x7k2p", "system:node:worker-2", 200, 0.8),
		req(54*time.Second, "master-3", "patch", "pods", "status", "default", "web-6d4cf56db6-x7k2p", "system:node:worker-2", 200, 3.9),
		req(20*time.Second, "master-1", "get", "pods", "", "default", "missing", "kubernetes-admin", 404, 0.6),
		req(12*time.Second, "master-2", "update", "leases", "", "kube-system", "kube-scheduler", "system:kube-scheduler", 200, 2.2),
		req(11*time.Second, "master-1", "patch", "nodes", "status", "", "worker-1", "system:node:worker-1", 200, 2.9),
		req(3*time.Second, "master-1", "watch", "events", "", "", "", "kubernetes-admin", 200, 301_400),
	}
	forbidden := req(8*time.Second, "master-3", "list", "secrets", "", "dev", "", "jane", 403, 0.5)
	forbidden.Groups = []string{"system:authenticated"}
	forbidden.Decision = apiserver.DecisionForbid
	r = append(r, forbidden)
	// Who each was and why it was allowed, as the API server's RBAC
	// authorizer says it.
	why := map[string]struct {
		groups []string
		reason string
	}{
		"kubernetes-admin": {[]string{"system:masters", "system:authenticated"},
			`RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"`},
		"system:kube-scheduler": {[]string{"system:authenticated"},
			`RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole "system:kube-scheduler" to User "system:kube-scheduler"`},
		"system:node:worker-1": {[]string{"system:nodes", "system:authenticated"},
			`RBAC: allowed by ClusterRoleBinding "system:node" of ClusterRole "system:node" to Group "system:nodes"`},
		"system:node:worker-2": {[]string{"system:nodes", "system:authenticated"},
			`RBAC: allowed by ClusterRoleBinding "system:node" of ClusterRole "system:node" to Group "system:nodes"`},
		"system:serviceaccount:kube-system:replicaset-controller": {[]string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
			`RBAC: allowed by ClusterRoleBinding "system:controller:replicaset-controller" of ClusterRole "system:controller:replicaset-controller" to ServiceAccount "replicaset-controller/kube-system"`},
	}
	for i := range r {
		if w, ok := why[r[i].User]; ok {
			r[i].Groups, r[i].Decision, r[i].Reason = w.groups, apiserver.DecisionAllow, w.reason
		}
	}
	slices.SortStableFunc(r, func(a, b requestRow) int { return a.Time.Compare(b.Time) })
	// /version is public: never authorized, so no decision.
	version := req(time.Second, "master-2", "get", "", "", "", "", "system:anonymous", 200, 0.3)
	version.Path = "/version"
	return append(r, version)
}

// fixture names the states the view is drawn in.
type fixture func(v *View)

func live(v *View) {
	v.started = true
	for _, n := range []string{"master-1", "master-2", "master-3"} {
		v.servers = append(v.servers, serverState{Node: n})
		v.apply(requestState{Server: n})
	}
	v.apply(eventsListed{Rows: fixtureEvents()})
	v.apply(eventsState{})
	for _, r := range fixtureRequests() {
		v.apply(requestItem{Row: r})
	}
}

var fixtures = map[string]fixture{
	"live": live,
	"selected": func(v *View) {
		live(v)
		v.selected = v.events.rows[6].UID // Scheduled
	},
	"explain": func(v *View) {
		live(v)
		v.selected, v.explaining = v.events.rows[11].UID, true // FailedScheduling
	},
	"filter": func(v *View) {
		live(v)
		v.filter, v.editing = "web", true
	},
	"waiting": func(v *View) {
		v.started = true
		v.servers = []serverState{{Node: "master-1"}}
	},
	"unreachable": func(v *View) {
		v.started = true
		v.servers = []serverState{{Node: "master-1"}}
		refused := errors.New("dial tcp 127.0.0.11:6443: connect: connection refused")
		v.apply(eventsState{Err: refused})
		v.apply(requestState{Server: "master-1", Err: refused})
	},
	"not-started": func(*View) {},
}

func apiRequestAt(t time.Time) apiserver.RequestEvent {
	return apiserver.RequestEvent{Time: t, Verb: "get", Resource: "pods", Code: 200}
}
