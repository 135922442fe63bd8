package auth

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream's role names (bootstrappolicy) and klab's.
const (
	ClusterAdminRole      = "cluster-admin"
	ViewRole              = "view"
	DiscoveryRole         = "system:discovery"
	BasicUserRole         = "system:basic-user"
	PublicInfoViewerRole  = "system:public-info-viewer"
	KubeSchedulerRole     = "system:kube-scheduler"
	ControllerManagerRole = "system:kube-controller-manager"
	NodeProxierRole       = "system:node-proxier"
	NodeRole              = "system:node"
	// ViewersBinding binds view to klab:viewers; it is klab's own.
	ViewersBinding = "klab-viewers"
)

var (
	read = []string{"get", "list", "watch"}
	all  = []string{rbacv1.VerbAll}
)

// viewCoreResources are the core ("") resources view reads: every
// resource of core/v1 but secrets, and their status, scale and log
// subresources. Proxy subresources stay out, as in upstream's view: a
// GET through a proxy reaches whatever is behind it.
var viewCoreResources = []string{
	"componentstatuses", "configmaps", "endpoints", "events", "limitranges",
	"namespaces", "nodes", "persistentvolumeclaims", "persistentvolumes",
	"pods", "podtemplates", "replicationcontrollers", "resourcequotas",
	"serviceaccounts", "services",
	"*/status", "*/scale", "pods/log",
}

// viewGroups are the built-in API groups view reads entirely. A rule
// cannot say "every group but one resource", so the core group, which holds
// secrets, is listed resource by resource above and the others here.
// rbac.authorization.k8s.io is left out, as upstream's view leaves roles
// and bindings out.
var viewGroups = []string{
	"admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io",
	"apps", "autoscaling", "batch", "certificates.k8s.io", "coordination.k8s.io",
	"discovery.k8s.io", "events.k8s.io", "flowcontrol.apiserver.k8s.io",
	"networking.k8s.io", "node.k8s.io", "policy", "resource.k8s.io",
	"scheduling.k8s.io", "storage.k8s.io",
}

// publicInfoURLs are the paths everybody may GET, signed in or not.
var publicInfoURLs = []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}

// ClusterRoles returns klab's roles; see the package comment for what each
// grants and how it differs from upstream.
func ClusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		clusterRole(ClusterAdminRole,
			resourceRule(all, []string{rbacv1.APIGroupAll}, rbacv1.ResourceAll),
			urlRule(all, rbacv1.NonResourceAll),
		),
		clusterRole(ViewRole,
			resourceRule(read, []string{""}, viewCoreResources...),
			resourceRule(read, viewGroups, rbacv1.ResourceAll),
			urlRule([]string{"get"}, rbacv1.NonResourceAll),
		),
		clusterRole(DiscoveryRole,
			urlRule([]string{"get"},
				"/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"),
		),
		clusterRole(BasicUserRole,
			resourceRule([]string{"create"}, []string{"authorization.k8s.io"}, "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			resourceRule([]string{"create"}, []string{"authentication.k8s.io"}, "selfsubjectreviews"),
		),
		clusterRole(PublicInfoViewerRole, urlRule([]string{"get"}, publicInfoURLs...)),
		// klab's components may do anything with resources; upstream's
		// roles of the same names are narrower.
		clusterRole(KubeSchedulerRole, resourceRule(all, []string{rbacv1.APIGroupAll}, rbacv1.ResourceAll)),
		clusterRole(ControllerManagerRole, resourceRule(all, []string{rbacv1.APIGroupAll}, rbacv1.ResourceAll)),
		clusterRole(NodeProxierRole, resourceRule(all, []string{rbacv1.APIGroupAll}, rbacv1.ResourceAll)),
		clusterRole(NodeRole, resourceRule(all, []string{rbacv1.APIGroupAll}, rbacv1.ResourceAll)),
	}
}

// ClusterRoleBindings returns who gets klab's roles. Each binding has the
// name of its role, as upstream's do, except klab-viewers.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{
		clusterRoleBinding(ClusterAdminRole, ClusterAdminRole, group(SystemPrivilegedGroup)),
		clusterRoleBinding(ViewersBinding, ViewRole, group(ViewersGroup)),
		clusterRoleBinding(DiscoveryRole, DiscoveryRole, group(AllAuthenticated)),
		clusterRoleBinding(BasicUserRole, BasicUserRole, group(AllAuthenticated)),
		clusterRoleBinding(PublicInfoViewerRole, PublicInfoViewerRole, group(AllAuthenticated), group(AllUnauthenticated)),
		clusterRoleBinding(KubeSchedulerRole, KubeSchedulerRole, user(KubeScheduler)),
		clusterRoleBinding(ControllerManagerRole, ControllerManagerRole, user(KubeControllerManager)),
		clusterRoleBinding(NodeProxierRole, NodeProxierRole, user(KubeProxy)),
		// Upstream's system:node binding has no subjects (the Node
		// authorizer decides for kubelets); klab binds the group.
		clusterRoleBinding(NodeRole, NodeRole, group(NodesGroup)),
	}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: bootstrapLabels()},
		Rules:      rules,
	}
}

func clusterRoleBinding(name, role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: bootstrapLabels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

// bootstrapLabels marks default policy objects, as upstream marks its own.
func bootstrapLabels() map[string]string {
	return map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}
}

func resourceRule(verbs, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: slices.Clone(verbs), APIGroups: slices.Clone(groups), Resources: slices.Clone(resources)}
}

func urlRule(verbs []string, urls ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: slices.Clone(verbs), NonResourceURLs: slices.Clone(urls)}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}
