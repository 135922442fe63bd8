package lessons

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The observations below are what the cluster saw, whoever acted: an
// object as a watch reports it, an Event, a request an API server served,
// a kube-proxy's mode, a traffic run. A command typed in a second terminal
// counts as much as one typed in the lesson's command line, since the
// checks read its effect, not the command.

// ObjectObserved is a Kubernetes object of a resource a check names, as a
// watch of that resource last reported it. Its state replaces what was
// known of the object before.
type ObjectObserved struct {
	// Resource is the object's resource and group ("pods",
	// "deployments.apps", "leases.coordination.k8s.io").
	Resource        schema.GroupResource
	Namespace, Name string
	// Object is the object's content as JSON decodes it (unstructured):
	// the checks read it with JSONPath. The evaluator keeps it as is, so
	// the feeder must not change it afterwards.
	Object map[string]any
	// Deleted says the object is gone.
	Deleted bool
}

// EventObserved is a Kubernetes Event that was recorded, or recorded again
// (its count went up), since whoever feeds it started watching. Events are
// counted from the moment a step begins.
type EventObserved struct {
	Namespace string
	// Reason and Type are the Event's: Scheduled, Killing, ...; Normal or
	// Warning.
	Reason, Type string
	// Kind and Name are the involved (regarding) object's.
	Kind, Name string
	Message    string
}

// RequestObserved is a request one API server served, as its request
// stream (/debug/klab/events) reports it. Requests are counted from the
// moment a step begins, and only while the check being judged reads them.
type RequestObserved struct {
	// Server is the node whose API server served the request.
	Server      string
	Verb        string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// User is the authenticated user's name (kubernetes-admin,
	// system:kube-scheduler, ...).
	User string
	Code int
	Time time.Time
}

// EtcdRequestObserved is a client request one etcd member served, as its
// request stream (/debug/klab/requests) reports it. Like the API servers'
// requests, they are counted from the moment a step begins, and only while
// the check being judged reads them.
type EtcdRequestObserved struct {
	// Member is the member that served the request.
	Member string
	// Method is the etcd API's name for the call: Range, Put, Txn, ...
	Method string
	// Key and RangeEnd are the key the request names and its range's end
	// (empty for one key, "\x00" for every key from Key on).
	Key, RangeEnd string
	// Code is the gRPC status code's name: OK, Unavailable, ...
	Code string
	// Component says one of klab's components made it (the API server),
	// not a person's client such as etcdctl.
	Component bool
	Time      time.Time
}

// ProxyObserved is one node's kube-proxy as its /debug/klab/status last
// answered: the mode it runs, or that it did not answer.
type ProxyObserved struct {
	Node string
	// Mode is the running mode: iptables, ipvs, nftables, userspace...
	Mode string
	// Unreachable says the kube-proxy did not answer.
	Unreachable bool
	// Services are the Services its last sync programmed (namespace/name),
	// each with its ready endpoints (on its port with the most) and
	// whether its traffic policies are Local.
	Services map[string]ProxiedService
}

// ProxiedService is one Service as a kube-proxy programmed it: how many
// ready endpoints, the Pods behind them (by name, in the Service's
// namespace; endpoints that name no Pod are counted, not listed), and
// whether its traffic policies are Local.
type ProxiedService struct {
	Endpoints                    int
	Pods                         []string
	ExternalLocal, InternalLocal bool
}

// SameProxiedService says a and b report the same.
func SameProxiedService(a, b ProxiedService) bool {
	return a.Endpoints == b.Endpoints && slices.Equal(a.Pods, b.Pods) && a.ExternalLocal == b.ExternalLocal && a.InternalLocal == b.InternalLocal
}

// TrafficObserved is a traffic run (klab traffic) that ended. Only the last
// run since the step began counts.
type TrafficObserved struct {
	// Target is where the traffic went (a ClusterIP or NodePort address).
	Target string
	// Requests and Failed count the run's requests and those that got no
	// answer.
	Requests, Failed int
	// Pods are the pods that answered (namespace/name), each with how many
	// requests it answered.
	Pods map[string]int
	// Nodes counts the answered requests by the node of the pod that
	// answered; Modes counts every request by the proxy mode that handled
	// it.
	Nodes, Modes map[string]int
}

func (ObjectObserved) observation()      {}
func (EventObserved) observation()       {}
func (RequestObserved) observation()     {}
func (EtcdRequestObserved) observation() {}
func (ProxyObserved) observation()       {}
func (TrafficObserved) observation()     {}
