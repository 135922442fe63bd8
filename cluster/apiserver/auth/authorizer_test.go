package auth

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

var (
	admin     = User{Name: AdminUser, Groups: []string{SystemPrivilegedGroup, AllAuthenticated}}
	viewer    = User{Name: ViewerUser, Groups: []string{ViewersGroup, AllAuthenticated}}
	alice     = User{Name: "alice", Groups: []string{AllAuthenticated}}
	jane      = User{Name: "jane", Groups: []string{AllAuthenticated}}
	builder   = User{Name: ServiceAccountUsername("dev", "builder"), Groups: []string{ServiceAccountsGroup, AllAuthenticated}}
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
	byViewers      = `RBAC: allowed by ClusterRoleBinding "klab-viewers" of ClusterRole "view" to User "klab-viewer"`
	byDiscovery    = `RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`
	byBasicUser    = `RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated"`
	byPublicInfo   = `RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated"`
	byScheduler    = `RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole "system:kube-scheduler" to User "system:kube-scheduler"`
	byPodReader    = `RBAC: allowed by RoleBinding "read-pods/dev" of Role "pod-reader" to User "jane"`
)

// testPolicy is the default policy plus, in namespace dev, a Role that may
// get and list pods bound to jane, and the edit ClusterRole bound to the
// builder service account, named without its namespace.
func testPolicy() *Authorizer {
	objs := DefaultPolicy()
	objs = append(objs,
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "dev"},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "read-pods", Namespace: "dev"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
			Subjects:   []rbacv1.Subject{UserSubject("jane")},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "builder-edit", Namespace: "dev"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: EditRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "builder"}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "dangling", Namespace: "dev"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gone"},
			Subjects:   []rbacv1.Subject{UserSubject("alice")},
		},
	)
	return NewAuthorizerFor(objs...)
}

func TestAuthorize(t *testing.T) {
	tests := []struct {
		name  string
		attrs Attributes
		// An allowed request has wantReason; a denied one wantMessage,
		// ForbiddenMessage's text, and wantReason only when a binding
		// named a missing role.
		allow       bool
		wantReason  string
		wantMessage string
	}{
		// The admin may do anything.
		{name: "admin creates pods", attrs: res(admin, "create", "", "pods", "default"), allow: true, wantReason: byClusterAdmin},
		{name: "admin deletes a node", attrs: sub(res(admin, "delete", "", "nodes", ""), "", "worker-1"), allow: true, wantReason: byClusterAdmin},
		{name: "admin execs into a pod", attrs: sub(res(admin, "create", "", "pods", "default"), "exec", "web-1"), allow: true, wantReason: byClusterAdmin},
		{name: "admin posts any path", attrs: path(admin, "post", "/anything"), allow: true, wantReason: byClusterAdmin},
		// view, bound cluster-wide to klab:viewers, reads namespaced
		// objects but secrets.
		{name: "viewer lists pods", attrs: res(viewer, "list", "", "pods", "default"), allow: true, wantReason: byViewers},
		{name: "viewer watches pods everywhere", attrs: res(viewer, "watch", "", "pods", ""), allow: true, wantReason: byViewers},
		{name: "viewer reads pod logs", attrs: sub(res(viewer, "get", "", "pods", "default"), "log", "web-1"), allow: true, wantReason: byViewers},
		{name: "viewer gets a deployment", attrs: sub(res(viewer, "get", "apps", "deployments", "default"), "", "web"), allow: true, wantReason: byViewers},
		{
			name: "viewer creates pods", attrs: res(viewer, "create", "", "pods", "default"),
			wantMessage: `User "klab-viewer" cannot create resource "pods" in API group "" in the namespace "default"`,
		},
		{
			name: "viewer scales a deployment", attrs: sub(res(viewer, "patch", "apps", "deployments", "default"), "scale", "web"),
			wantMessage: `User "klab-viewer" cannot patch resource "deployments/scale" in API group "apps" in the namespace "default"`,
		},
		{
			name: "viewer gets a secret", attrs: sub(res(viewer, "get", "", "secrets", "default"), "", "db-password"),
			wantMessage: `User "klab-viewer" cannot get resource "secrets" in API group "" in the namespace "default"`,
		},
		{
			name: "viewer lists nodes", attrs: res(viewer, "list", "", "nodes", ""),
			wantMessage: `User "klab-viewer" cannot list resource "nodes" in API group "" at the cluster scope`,
		},
		{
			name: "viewer reads roles", attrs: res(viewer, "list", "rbac.authorization.k8s.io", "roles", "default"),
			wantMessage: `User "klab-viewer" cannot list resource "roles" in API group "rbac.authorization.k8s.io" in the namespace "default"`,
		},
		{
			name: "viewer execs into a pod", attrs: sub(res(viewer, "create", "", "pods", "default"), "exec", "web-1"),
			wantMessage: `User "klab-viewer" cannot create resource "pods/exec" in API group "" in the namespace "default"`,
		},
		// Any signed-in user may discover the API and ask about itself.
		{name: "user discovers a group version", attrs: path(alice, "get", "/apis/apps/v1"), allow: true, wantReason: byDiscovery},
		{name: "user reads the openapi", attrs: path(alice, "get", "/openapi/v3"), allow: true, wantReason: byDiscovery},
		{name: "user asks whoami", attrs: res(alice, "create", "authentication.k8s.io", "selfsubjectreviews", ""), allow: true, wantReason: byBasicUser},
		{name: "user asks can-i --list", attrs: res(alice, "create", "authorization.k8s.io", "selfsubjectrulesreviews", ""), allow: true, wantReason: byBasicUser},
		{
			name: "user asks about another user", attrs: res(alice, "create", "authorization.k8s.io", "subjectaccessreviews", ""),
			wantMessage: `User "alice" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope`,
		},
		{
			name: "user reads /metrics", attrs: path(alice, "get", "/metrics"),
			wantMessage: `User "alice" cannot get path "/metrics"`,
		},
		{
			name: "a binding to a missing role", attrs: res(alice, "list", "", "pods", "dev"),
			wantReason:  `RBAC: role.rbac.authorization.k8s.io "gone" not found`,
			wantMessage: `User "alice" cannot list resource "pods" in API group "" in the namespace "dev"`,
		},
		// Without credentials only the public health and version paths.
		{name: "anonymous /healthz", attrs: path(Anonymous, "get", "/healthz"), allow: true, wantReason: byPublicInfo},
		{name: "anonymous /version", attrs: path(Anonymous, "get", "/version"), allow: true, wantReason: byPublicInfo},
		{
			name: "anonymous /readyz/etcd", attrs: path(Anonymous, "get", "/readyz/etcd"),
			wantMessage: `User "system:anonymous" cannot get path "/readyz/etcd"`,
		},
		{
			name: "anonymous discovery", attrs: path(Anonymous, "get", "/api"),
			wantMessage: `User "system:anonymous" cannot get path "/api"`,
		},
		// A Role bound in one namespace.
		{name: "jane gets pods in dev", attrs: sub(res(jane, "get", "", "pods", "dev"), "", "web-1"), allow: true, wantReason: byPodReader},
		{name: "jane lists pods in dev", attrs: res(jane, "list", "", "pods", "dev"), allow: true, wantReason: byPodReader},
		{
			name: "jane deletes pods in dev", attrs: sub(res(jane, "delete", "", "pods", "dev"), "", "web-1"),
			wantMessage: `User "jane" cannot delete resource "pods" in API group "" in the namespace "dev"`,
		},
		{
			name: "jane reads pod logs in dev", attrs: sub(res(jane, "get", "", "pods", "dev"), "log", "web-1"),
			wantMessage: `User "jane" cannot get resource "pods/log" in API group "" in the namespace "dev"`,
		},
		{
			name: "jane gets pods in default", attrs: res(jane, "list", "", "pods", "default"),
			wantMessage: `User "jane" cannot list resource "pods" in API group "" in the namespace "default"`,
		},
		{
			name: "jane lists pods everywhere", attrs: res(jane, "list", "", "pods", ""),
			wantMessage: `User "jane" cannot list resource "pods" in API group "" at the cluster scope`,
		},
		// A service account subject without a namespace is in the
		// binding's.
		{
			name: "builder creates a deployment in dev", attrs: res(builder, "create", "apps", "deployments", "dev"), allow: true,
			wantReason: `RBAC: allowed by RoleBinding "builder-edit/dev" of ClusterRole "edit" to ServiceAccount "builder/dev"`,
		},
		{
			name: "builder creates a deployment in default", attrs: res(builder, "create", "apps", "deployments", "default"),
			wantMessage: `User "system:serviceaccount:dev:builder" cannot create resource "deployments" in API group "apps" in the namespace "default"`,
		},
		// klab's components, each with its upstream role.
		{name: "scheduler binds a pod", attrs: sub(res(scheduler, "create", "", "pods", "default"), "binding", "web-1"), allow: true, wantReason: byScheduler},
		{name: "scheduler renews its lease", attrs: sub(res(scheduler, "update", "coordination.k8s.io", "leases", "kube-system"), "", "kube-scheduler"), allow: true, wantReason: byScheduler},
		{
			name: "scheduler renews another lease", attrs: sub(res(scheduler, "update", "coordination.k8s.io", "leases", "kube-system"), "", "kube-controller-manager"),
			wantMessage: `User "system:kube-scheduler" cannot update resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"`,
		},
		{
			name: "scheduler deletes a node", attrs: sub(res(scheduler, "delete", "", "nodes", ""), "", "worker-1"),
			wantMessage: `User "system:kube-scheduler" cannot delete resource "nodes" in API group "" at the cluster scope`,
		},
		{
			name: "controller manager creates a replicaset", attrs: res(ctrlMgr, "create", "apps", "replicasets", "default"), allow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "system:controller:deployment-controller" of ClusterRole "system:controller:deployment-controller" to User "system:kube-controller-manager"`,
		},
		{
			name: "controller manager reads secrets' data", attrs: sub(res(ctrlMgr, "get", "", "secrets", "default"), "", "db"), allow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "system:controller:generic-garbage-collector" of ClusterRole "system:controller:generic-garbage-collector" to User "system:kube-controller-manager"`,
		},
		{
			name: "kube-proxy watches endpointslices", attrs: res(proxy, "watch", "discovery.k8s.io", "endpointslices", ""), allow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "system:node-proxier" of ClusterRole "system:node-proxier" to User "system:kube-proxy"`,
		},
		{
			name: "kube-proxy watches its ConfigMap", attrs: res(proxy, "watch", "", "configmaps", "kube-system"), allow: true,
			wantReason: `RBAC: allowed by RoleBinding "kube-proxy/kube-system" of Role "kube-proxy" to User "system:kube-proxy"`,
		},
		{
			name: "kube-proxy reads ConfigMaps elsewhere", attrs: res(proxy, "list", "", "configmaps", "default"),
			wantMessage: `User "system:kube-proxy" cannot list resource "configmaps" in API group "" in the namespace "default"`,
		},
		{
			name: "kube-proxy deletes a pod", attrs: sub(res(proxy, "delete", "", "pods", "default"), "", "web-1"),
			wantMessage: `User "system:kube-proxy" cannot delete resource "pods" in API group "" in the namespace "default"`,
		},
		{
			// RBAC alone binds system:node to nobody: the Node
			// authorizer, in front of it in the API server, decides for
			// kubelets (node_test.go).
			name: "kubelet alone in RBAC", attrs: sub(res(kubelet, "update", "", "nodes", ""), "status", "worker-1"), allow: false,
			wantMessage: `User "system:node:worker-1" cannot update resource "nodes/status" in API group "" at the cluster scope`,
		},
		{
			name: "kubelet creates a deployment", attrs: res(kubelet, "create", "apps", "deployments", "default"),
			wantMessage: `User "system:node:worker-1" cannot create resource "deployments" in API group "apps" in the namespace "default"`,
		},
	}
	a := testPolicy()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decision, reason := a.Authorize(tt.attrs)
			if tt.allow {
				if decision != DecisionAllow || reason != tt.wantReason {
					t.Errorf("Authorize = %v, %q; want allow, %q", decision, reason, tt.wantReason)
				}
				return
			}
			if decision != DecisionDeny || reason != tt.wantReason {
				t.Errorf("Authorize = %v, %q; want deny, %q", decision, reason, tt.wantReason)
			}
			if got := ForbiddenMessage(tt.attrs); got != tt.wantMessage {
				t.Errorf("ForbiddenMessage:\n got %s\nwant %s", got, tt.wantMessage)
			}
		})
	}
}

// TestPolicyFollowsChanges checks that a binding deleted, or a role
// replaced, changes the next decision.
func TestPolicyFollowsChanges(t *testing.T) {
	a := testPolicy()
	get := sub(res(jane, "get", "", "pods", "dev"), "", "web-1")
	del := sub(res(jane, "delete", "", "pods", "dev"), "", "web-1")
	if d, _ := a.Authorize(del); d != DecisionDeny {
		t.Fatal("jane may delete pods before the role grants it")
	}
	a.Set(&rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "dev"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "delete"}, APIGroups: []string{""}, Resources: []string{"pods"}}},
	})
	if d, _ := a.Authorize(del); d != DecisionAllow {
		t.Error("jane may not delete pods after the role grants it")
	}
	a.Delete(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-pods", Namespace: "dev"}})
	if d, _ := a.Authorize(get); d != DecisionDeny {
		t.Error("jane may still get pods after her binding was deleted")
	}
	a.Replace("ClusterRoleBinding", nil)
	if d, _ := a.Authorize(res(admin, "get", "", "pods", "dev")); d != DecisionDeny {
		t.Error("the admin is still allowed with no cluster role bindings")
	}
}

func TestDecisionZeroValueDenies(t *testing.T) {
	var d Decision
	if d != DecisionDeny || d.String() != "deny" || DecisionAllow.String() != "allow" {
		t.Fatalf("zero Decision = %v (%s), want deny", int(d), d)
	}
}

// TestDefaultPolicy checks the defaults hang together: names unique,
// bindings refer to roles that exist, every role grants something once
// aggregated, and admin covers edit, which covers view.
func TestDefaultPolicy(t *testing.T) {
	roles := map[string]*rbacv1.ClusterRole{}
	var bindings []*rbacv1.ClusterRoleBinding
	for _, obj := range DefaultPolicy() {
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			if roles[o.Name] != nil {
				t.Errorf("ClusterRole %q defined twice", o.Name)
			}
			roles[o.Name] = o
			if len(o.Rules) == 0 {
				t.Errorf("ClusterRole %q has no rules", o.Name)
			}
		case *rbacv1.ClusterRoleBinding:
			bindings = append(bindings, o)
		}
	}
	names := map[string]bool{}
	for _, b := range bindings {
		if names[b.Name] {
			t.Errorf("ClusterRoleBinding %q defined twice", b.Name)
		}
		names[b.Name] = true
		if roles[b.RoleRef.Name] == nil {
			t.Errorf("ClusterRoleBinding %q refers to missing ClusterRole %q", b.Name, b.RoleRef.Name)
		}
		if len(b.Subjects) == 0 && b.Name != NodeRole { // upstream's, for the Node authorizer
			t.Errorf("ClusterRoleBinding %q has no subjects", b.Name)
		}
	}
	for _, pair := range [][2]string{{AdminRole, EditRole}, {EditRole, ViewRole}} {
		if ok, missing := rbacvalidation.Covers(roles[pair[0]].Rules, roles[pair[1]].Rules); !ok {
			t.Errorf("%s does not cover %s: missing %v", pair[0], pair[1], missing)
		}
	}
}

func TestDefaultPolicyIsFreshEachTime(t *testing.T) {
	first := DefaultPolicy()[0].(*rbacv1.ClusterRole)
	first.Rules[0].Verbs[0] = "get"
	if got := DefaultPolicy()[0].(*rbacv1.ClusterRole).Rules[0].Verbs[0]; got != "*" {
		t.Fatalf("changing a returned role changed the policy: verb %q", got)
	}
}
