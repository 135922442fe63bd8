package auth

import (
	"testing"
)

var (
	admin     = User{Name: AdminUser, Groups: []string{SystemPrivilegedGroup, AllAuthenticated}}
	viewer    = User{Name: ViewerUser, Groups: []string{ViewersGroup, AllAuthenticated}}
	alice     = User{Name: "alice", Groups: []string{AllAuthenticated}}
	scheduler = User{Name: KubeScheduler, Groups: []string{AllAuthenticated}}
	ctrlMgr   = User{Name: KubeControllerManager, Groups: []string{AllAuthenticated}}
	proxy     = User{Name: KubeProxy, Groups: []string{AllAuthenticated}}
	kubelet   = User{Name: NodeUser("worker-1"), Groups: []string{NodesGroup, AllAuthenticated}}
)

func res(u User, verb, group, resource, namespace string) Attributes {
	return Attributes{User: u, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource, Namespace: namespace, ResourceRequest: true}
}

func sub(a Attributes, subresource, name string) Attributes {
	a.Subresource, a.Name = subresource, name
	return a
}

func path(u User, verb, p string) Attributes {
	return Attributes{User: u, Verb: verb, Path: p}
}

const (
	byClusterAdmin = `RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"`
	byViewers      = `RBAC: allowed by ClusterRoleBinding "klab-viewers" of ClusterRole "view" to Group "klab:viewers"`
	byDiscovery    = `RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`
	byBasicUser    = `RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated"`
	byPublicInfo   = `RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated"`
)

func TestAuthorize(t *testing.T) {
	tests := []struct {
		name  string
		attrs Attributes
		// wantReason is the reason of an allowed request; a denied one has
		// wantMessage, ForbiddenMessage's text, and no reason.
		allow       bool
		wantReason  string
		wantMessage string
	}{
		// The admin may do anything.
		{name: "admin creates pods", attrs: res(admin, "create", "", "pods", "default"), allow: true, wantReason: byClusterAdmin},
		{name: "admin deletes a node", attrs: sub(res(admin, "delete", "", "nodes", ""), "", "worker-1"), allow: true, wantReason: byClusterAdmin},
		{name: "admin reads secrets", attrs: res(admin, "get", "", "secrets", "kube-system"), allow: true, wantReason: byClusterAdmin},
		{name: "admin execs into a pod", attrs: sub(res(admin, "create", "", "pods", "default"), "exec", "web-1"), allow: true, wantReason: byClusterAdmin},
		{name: "admin posts any path", attrs: path(admin, "post", "/anything"), allow: true, wantReason: byClusterAdmin},

		// The viewer reads, never writes.
		{
			name: "viewer creates pods", attrs: res(viewer, "create", "", "pods", "default"),
			wantMessage: `User "klab-viewer" cannot create resource "pods" in API group "" in the namespace "default"`,
		},
		{
			name: "viewer deletes a deployment", attrs: sub(res(viewer, "delete", "apps", "deployments", "default"), "", "web"),
			wantMessage: `User "klab-viewer" cannot delete resource "deployments" in API group "apps" in the namespace "default"`,
		},
		{
			name: "viewer scales a deployment", attrs: sub(res(viewer, "patch", "apps", "deployments", "default"), "scale", "web"),
			wantMessage: `User "klab-viewer" cannot patch resource "deployments/scale" in API group "apps" in the namespace "default"`,
		},
		{
			name: "viewer cordons a node", attrs: sub(res(viewer, "patch", "", "nodes", ""), "", "worker-1"),
			wantMessage: `User "klab-viewer" cannot patch resource "nodes" in API group "" at the cluster scope`,
		},
		{
			name: "viewer execs into a pod", attrs: sub(res(viewer, "create", "", "pods", "default"), "exec", "web-1"),
			wantMessage: `User "klab-viewer" cannot create resource "pods/exec" in API group "" in the namespace "default"`,
		},
		{
			name: "viewer gets a secret", attrs: sub(res(viewer, "get", "", "secrets", "default"), "", "db-password"),
			wantMessage: `User "klab-viewer" cannot get resource "secrets" in API group "" in the namespace "default"`,
		},
		{
			name: "viewer lists secrets in all namespaces", attrs: res(viewer, "list", "", "secrets", ""),
			wantMessage: `User "klab-viewer" cannot list resource "secrets" in API group "" at the cluster scope`,
		},
		{
			name: "viewer reads roles", attrs: res(viewer, "list", "rbac.authorization.k8s.io", "roles", "default"),
			wantMessage: `User "klab-viewer" cannot list resource "roles" in API group "rbac.authorization.k8s.io" in the namespace "default"`,
		},
		{
			name: "viewer proxies to a pod", attrs: sub(res(viewer, "get", "", "pods", "default"), "proxy", "web-1"),
			wantMessage: `User "klab-viewer" cannot get resource "pods/proxy" in API group "" in the namespace "default"`,
		},
		{
			name: "viewer posts a path", attrs: path(viewer, "post", "/api/v1"),
			wantMessage: `User "klab-viewer" cannot post path "/api/v1"`,
		},
		{name: "viewer lists pods", attrs: res(viewer, "list", "", "pods", "default"), allow: true, wantReason: byViewers},
		{name: "viewer watches pods everywhere", attrs: res(viewer, "watch", "", "pods", ""), allow: true, wantReason: byViewers},
		{name: "viewer reads pod logs", attrs: sub(res(viewer, "get", "", "pods", "default"), "log", "web-1"), allow: true, wantReason: byViewers},
		{name: "viewer reads pod status", attrs: sub(res(viewer, "get", "", "pods", "default"), "status", "web-1"), allow: true, wantReason: byViewers},
		{name: "viewer lists nodes", attrs: res(viewer, "list", "", "nodes", ""), allow: true, wantReason: byViewers},
		{name: "viewer gets a deployment", attrs: sub(res(viewer, "get", "apps", "deployments", "default"), "", "web"), allow: true, wantReason: byViewers},
		{name: "viewer watches leases", attrs: res(viewer, "watch", "coordination.k8s.io", "leases", "kube-node-lease"), allow: true, wantReason: byViewers},
		{name: "viewer gets /metrics", attrs: path(viewer, "get", "/metrics"), allow: true, wantReason: byViewers},
		{name: "viewer asks can-i", attrs: res(viewer, "create", "authorization.k8s.io", "selfsubjectaccessreviews", ""), allow: true, wantReason: byBasicUser},

		// Any signed-in user may discover the API and ask about itself.
		{name: "user discovers groups", attrs: path(alice, "get", "/apis"), allow: true, wantReason: byDiscovery},
		{name: "user discovers a group version", attrs: path(alice, "get", "/apis/apps/v1"), allow: true, wantReason: byDiscovery},
		{name: "user reads the openapi", attrs: path(alice, "get", "/openapi/v3"), allow: true, wantReason: byDiscovery},
		{name: "user reads /version", attrs: path(alice, "get", "/version"), allow: true, wantReason: byDiscovery},
		{name: "user asks whoami", attrs: res(alice, "create", "authentication.k8s.io", "selfsubjectreviews", ""), allow: true, wantReason: byBasicUser},
		{name: "user asks can-i --list", attrs: res(alice, "create", "authorization.k8s.io", "selfsubjectrulesreviews", ""), allow: true, wantReason: byBasicUser},
		{
			name: "user lists pods", attrs: res(alice, "list", "", "pods", "default"),
			wantMessage: `User "alice" cannot list resource "pods" in API group "" in the namespace "default"`,
		},
		{
			name: "user asks about another user", attrs: res(alice, "create", "authorization.k8s.io", "subjectaccessreviews", ""),
			wantMessage: `User "alice" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope`,
		},
		{
			name: "user reads /metrics", attrs: path(alice, "get", "/metrics"),
			wantMessage: `User "alice" cannot get path "/metrics"`,
		},

		// Without credentials only the public health and version paths.
		{name: "anonymous /healthz", attrs: path(Anonymous, "get", "/healthz"), allow: true, wantReason: byPublicInfo},
		{name: "anonymous /livez", attrs: path(Anonymous, "get", "/livez"), allow: true, wantReason: byPublicInfo},
		{name: "anonymous /readyz", attrs: path(Anonymous, "get", "/readyz"), allow: true, wantReason: byPublicInfo},
		{name: "anonymous /version", attrs: path(Anonymous, "get", "/version"), allow: true, wantReason: byPublicInfo},
		{
			name: "anonymous /readyz/etcd", attrs: path(Anonymous, "get", "/readyz/etcd"),
			wantMessage: `User "system:anonymous" cannot get path "/readyz/etcd"`,
		},
		{
			name: "anonymous discovery", attrs: path(Anonymous, "get", "/api"),
			wantMessage: `User "system:anonymous" cannot get path "/api"`,
		},
		{
			name: "anonymous lists pods", attrs: res(Anonymous, "list", "", "pods", "default"),
			wantMessage: `User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "default"`,
		},

		// klab's components may do what they need.
		{
			name: "scheduler binds a pod", attrs: sub(res(scheduler, "create", "", "pods", "default"), "binding", "web-1"), allow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole "system:kube-scheduler" to User "system:kube-scheduler"`,
		},
		{
			name: "controller manager creates a replicaset", attrs: res(ctrlMgr, "create", "apps", "replicasets", "default"), allow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "system:kube-controller-manager" of ClusterRole "system:kube-controller-manager" to User "system:kube-controller-manager"`,
		},
		{
			name: "kube-proxy watches endpointslices", attrs: res(proxy, "watch", "discovery.k8s.io", "endpointslices", ""), allow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "system:node-proxier" of ClusterRole "system:node-proxier" to User "system:kube-proxy"`,
		},
		{
			name: "kubelet updates its node status", attrs: sub(res(kubelet, "update", "", "nodes", ""), "status", "worker-1"), allow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "system:node" of ClusterRole "system:node" to Group "system:nodes"`,
		},
		{
			name: "a component has no extra non-resource access", attrs: path(scheduler, "get", "/metrics"),
			wantMessage: `User "system:kube-scheduler" cannot get path "/metrics"`,
		},
	}
	a := NewAuthorizer()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decision, reason := a.Authorize(tt.attrs)
			if tt.allow {
				if decision != DecisionAllow || reason != tt.wantReason {
					t.Errorf("Authorize = %v, %q; want allow, %q", decision, reason, tt.wantReason)
				}
				return
			}
			if decision != DecisionDeny || reason != "" {
				t.Errorf("Authorize = %v, %q; want deny with no reason", decision, reason)
			}
			if got := ForbiddenMessage(tt.attrs); got != tt.wantMessage {
				t.Errorf("ForbiddenMessage:\n got %s\nwant %s", got, tt.wantMessage)
			}
		})
	}
}

func TestDecisionZeroValueDenies(t *testing.T) {
	var d Decision
	if d != DecisionDeny || d.String() != "deny" || DecisionAllow.String() != "allow" {
		t.Fatalf("zero Decision = %v (%s), want deny", int(d), d)
	}
}

func TestBindingsReferToRoles(t *testing.T) {
	roles := make(map[string]int)
	for _, r := range ClusterRoles() {
		roles[r.Name]++
		if len(r.Rules) == 0 {
			t.Errorf("ClusterRole %q has no rules", r.Name)
		}
	}
	for name, n := range roles {
		if n > 1 {
			t.Errorf("ClusterRole %q defined %d times", name, n)
		}
	}
	names := make(map[string]bool)
	for _, b := range ClusterRoleBindings() {
		if names[b.Name] {
			t.Errorf("ClusterRoleBinding %q defined twice", b.Name)
		}
		names[b.Name] = true
		if roles[b.RoleRef.Name] == 0 {
			t.Errorf("ClusterRoleBinding %q refers to missing ClusterRole %q", b.Name, b.RoleRef.Name)
		}
		if len(b.Subjects) == 0 {
			t.Errorf("ClusterRoleBinding %q has no subjects", b.Name)
		}
	}
}

func TestClusterRolesAreCopies(t *testing.T) {
	roles := ClusterRoles()
	roles[0].Rules[0].Verbs[0] = "get"
	if got := ClusterRoles()[0].Rules[0].Verbs[0]; got != "*" {
		t.Fatalf("changing a returned role changed the policy: verb %q", got)
	}
}
