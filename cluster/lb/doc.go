// Package lb is the TCP load balancer in front of a cluster's API servers
// (component lb), doing what kind's haproxy container does for a cluster
// with several control-plane nodes.
//
// Every API server is active; the kubeconfig points at the balancer, not
// at any one of them. For each new client connection the balancer picks
// the next healthy backend in turn (round robin) and copies bytes both
// ways until either side closes. It never looks inside: TLS passes
// through untouched, so the client still verifies the API server's
// certificate (whose names include the balancer's address) and still
// authenticates to the API server itself.
//
// A health check runs against each backend every interval (GET /readyz
// over TLS with [HTTPSHealth]; a plain TCP connect by default, like
// haproxy's "check"). One failed check takes a backend out of the
// rotation and one good check puts it back; haproxy waits for three
// failures and two successes (fall 3, rise 2), klab reacts at once so a
// lesson shows the failover without waiting. Connections already open to
// a backend are left alone when it is marked down, as haproxy does by
// default; they end when the backend closes them.
//
// Backends start healthy, as haproxy assumes its servers are up until a
// check says otherwise. If the dial to the chosen backend fails the
// balancer tries the next healthy one before giving up, so a backend that
// died between two checks costs no client connection. With no healthy
// backend left, a new connection is closed at once: the client sees the
// connection drop and retries, rather than hanging.
package lb
