package auth

import "slices"

// Well-known user and group names. They are upstream's
// (k8s.io/apiserver/pkg/authentication/user) except the klab ones, which
// are marked.
const (
	// AllAuthenticated is the group of every authenticated user.
	AllAuthenticated = "system:authenticated"
	// AllUnauthenticated is the group of the anonymous user.
	AllUnauthenticated = "system:unauthenticated"
	// AnonymousUser is the name of a request that carries no credentials.
	AnonymousUser = "system:anonymous"
	// SystemPrivilegedGroup is the group bound to cluster-admin.
	SystemPrivilegedGroup = "system:masters"
	// NodesGroup is the group of kubelets.
	NodesGroup = "system:nodes"
	// NodeUserPrefix starts a kubelet's user name: system:node:<node>.
	NodeUserPrefix = "system:node:"
	// KubeScheduler is the scheduler's user name.
	KubeScheduler = "system:kube-scheduler"
	// KubeControllerManager is the controller manager's user name.
	KubeControllerManager = "system:kube-controller-manager"
	// KubeProxy is kube-proxy's user name.
	KubeProxy = "system:kube-proxy"
	// CoreDNS is the cluster DNS's user name: the kube-system/coredns
	// service account, which kubeadm's CoreDNS Deployment runs as and
	// which klab's DNS server authenticates as with a token of its own.
	CoreDNS = ServiceAccountUsernamePrefix + "kube-system:coredns"

	// ClusterAdminsGroup is kubeadm's group of cluster administrators
	// (kubeadm's constant ClusterAdminsGroupAndClusterRoleBinding), bound
	// to cluster-admin by a ClusterRoleBinding of the same name. The API
	// server's client certificate to kubelets is in it.
	ClusterAdminsGroup = "kubeadm:cluster-admins"

	// AdminUser is the user of the kubeconfig klab writes; kubeadm names
	// its admin the same.
	AdminUser = "kubernetes-admin"
	// ViewerUser is klab's read-only user.
	ViewerUser = "klab-viewer"
	// ViewersGroup is klab's group of read-only users, bound to view.
	ViewersGroup = "klab:viewers"
)

// User is an authenticated identity: what authentication hands to
// authorization.
type User struct {
	Name   string   `json:"name"`
	UID    string   `json:"uid,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// Anonymous is the user of a request without credentials, as upstream's
// anonymous authenticator names it.
var Anonymous = User{Name: AnonymousUser, Groups: []string{AllUnauthenticated}}

// NodeUser returns the user name of the kubelet on node.
func NodeUser(node string) string { return NodeUserPrefix + node }

// InGroup reports whether u is a member of group.
func (u User) InGroup(group string) bool { return slices.Contains(u.Groups, group) }
