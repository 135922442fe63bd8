package auth

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// NodeLeaseNamespace is where kubelets keep their heartbeat Leases
// (upstream's v1.NamespaceNodeLease).
const NodeLeaseNamespace = "kube-node-lease"

// NodeIdentity returns the node a user acts for, as upstream's
// nodeidentity.NewDefaultNodeIdentifier decides: a user in the group
// system:nodes whose name starts with system:node:. isNode is false for
// everybody else; node is empty for a member of system:nodes whose name
// does not name a node.
func NodeIdentity(u User) (node string, isNode bool) {
	if !strings.HasPrefix(u.Name, NodeUserPrefix) || !u.InGroup(NodesGroup) {
		return "", false
	}
	return strings.TrimPrefix(u.Name, NodeUserPrefix), true
}

// NodeAuthorizer is upstream's Node authorizer
// (plugin/pkg/auth/authorizer/node): it decides the requests of kubelets
// and leaves everybody else's to the next authorizer. A kubelet reads a
// secret, configmap, persistent volume claim or resource claim, or asks a
// token for a service account, only when a pod bound to its node refers
// to it ([NodeGraph]); it touches only its own node's Lease and CSINode;
// anything else it may do is what the system:node rules ([NodeRules])
// allow, which the NodeRestriction admission plugin narrows further. It
// never denies: what it does not allow gets no opinion, with upstream's
// reason, and RBAC decides next.
type NodeAuthorizer struct {
	graph *NodeGraph
	rules []rbacv1.PolicyRule
}

// NewNodeAuthorizer returns a Node authorizer deciding by graph.
func NewNodeAuthorizer(graph *NodeGraph) *NodeAuthorizer {
	return &NodeAuthorizer{graph: graph, rules: NodeRules()}
}

// Authorize decides attrs for a node identity. allowed is false for
// "no opinion"; reason then says why, in upstream's words, or is empty
// when the request is not a node's or the node rules simply do not cover
// it. When it allows, the reason names what did, for the request stream:
//
//	Node: allowed by pod "default/web" bound to node "a"
//	Node: allowed by the system:node rules for node "a"
func (n *NodeAuthorizer) Authorize(attrs Attributes) (allowed bool, reason string) {
	node, isNode := NodeIdentity(attrs.User)
	if !isNode {
		return false, ""
	}
	if node == "" {
		return false, fmt.Sprintf("unknown node for user %q", attrs.User.Name)
	}
	if attrs.ResourceRequest {
		switch attrs.APIGroup + "/" + attrs.Resource {
		case "/secrets":
			return n.readNamespaced(node, SecretVertex, attrs)
		case "/configmaps":
			return n.readNamespaced(node, ConfigMapVertex, attrs)
		case "/persistentvolumeclaims":
			if attrs.Subresource == "status" {
				return n.statusUpdate(node, PVCVertex, attrs)
			}
			return n.get(node, PVCVertex, attrs)
		case "/persistentvolumes":
			// A claim's volume: klab serves no PersistentVolumes, so
			// no path leads to one.
			return n.get(node, "pv", attrs)
		case "resource.k8s.io/resourceclaims":
			return n.get(node, ResourceClaimVertex, attrs)
		case "/serviceaccounts":
			return n.createToken(node, attrs)
		case "coordination.k8s.io/leases":
			return n.lease(node, attrs)
		case "storage.k8s.io/csinodes":
			return n.csiNode(node, attrs)
		}
	}
	// Everything else is not subdivided: the node rules decide.
	if RulesAllow(attrs, n.rules) {
		return true, fmt.Sprintf("Node: allowed by the %s rules for node %q", NodeRole, node)
	}
	return false, ""
}

// RulesAllow reports whether any of rules allows attrs.
func RulesAllow(attrs Attributes, rules []rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(attrs, &rules[i]) {
			return true
		}
	}
	return false
}

func (n *NodeAuthorizer) readNamespaced(node string, kind VertexKind, attrs Attributes) (bool, string) {
	switch attrs.Verb {
	case "get", "list", "watch":
	default:
		return false, "can only read resources of this type"
	}
	if attrs.Subresource != "" {
		return false, "cannot read subresource"
	}
	if attrs.Namespace == "" {
		return false, "can only read namespaced object of this type"
	}
	return n.related(node, kind, attrs)
}

func (n *NodeAuthorizer) get(node string, kind VertexKind, attrs Attributes) (bool, string) {
	if attrs.Verb != "get" {
		return false, "can only get individual resources of this type"
	}
	if attrs.Subresource != "" {
		return false, "cannot get subresource"
	}
	return n.related(node, kind, attrs)
}

func (n *NodeAuthorizer) statusUpdate(node string, kind VertexKind, attrs Attributes) (bool, string) {
	switch attrs.Verb {
	case "update", "patch":
	default:
		return false, "can only get/update/patch this type"
	}
	if attrs.Subresource != "status" {
		return false, "can only update status subresource"
	}
	return n.related(node, kind, attrs)
}

func (n *NodeAuthorizer) createToken(node string, attrs Attributes) (bool, string) {
	if attrs.Verb != "create" || attrs.Name == "" {
		return false, "can only create tokens for individual service accounts"
	}
	if attrs.Subresource != "token" {
		return false, "can only create token subresource of serviceaccount"
	}
	return n.related(node, ServiceAccountVertex, attrs)
}

func (n *NodeAuthorizer) lease(node string, attrs Attributes) (bool, string) {
	switch attrs.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return false, "can only get, create, update, patch, or delete a node lease"
	}
	if attrs.Namespace != NodeLeaseNamespace {
		return false, fmt.Sprintf("can only access leases in the %q system namespace", NodeLeaseNamespace)
	}
	if attrs.Verb != "create" && attrs.Name != node {
		return false, "can only access node lease with the same name as the requesting node"
	}
	return true, fmt.Sprintf("Node: allowed: the lease of node %q", node)
}

func (n *NodeAuthorizer) csiNode(node string, attrs Attributes) (bool, string) {
	switch attrs.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return false, "can only get, create, update, patch, or delete a CSINode"
	}
	if attrs.Subresource != "" {
		return false, "cannot authorize CSINode subresources"
	}
	if attrs.Verb != "create" && attrs.Name != node {
		return false, "can only access CSINode with the same name as the requesting node"
	}
	return true, fmt.Sprintf("Node: allowed: the CSINode of node %q", node)
}

// related allows attrs when a pod bound to node refers to the named
// object.
func (n *NodeAuthorizer) related(node string, kind VertexKind, attrs Attributes) (bool, string) {
	if attrs.Name == "" {
		return false, "No Object name found"
	}
	if pod, ok := n.graph.PathFrom(node, kind, attrs.Namespace, attrs.Name); ok {
		return true, fmt.Sprintf("Node: allowed by pod %q bound to node %q", pod, node)
	}
	return false, fmt.Sprintf("no relationship found between node '%s' and this object", node)
}
