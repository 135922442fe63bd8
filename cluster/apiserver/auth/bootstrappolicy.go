package auth

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bootstrap policy: the roles and bindings every kube-apiserver creates at
// start (plugin/pkg/auth/authorizer/rbac/bootstrappolicy), reconciled on
// each start so that a deleted default comes back and a default missing a
// rule gets it, unless its autoupdate annotation is "false".

// Upstream's role names, and klab's own.
const (
	ClusterAdminRole      = "cluster-admin"
	AdminRole             = "admin"
	EditRole              = "edit"
	ViewRole              = "view"
	DiscoveryRole         = "system:discovery"
	BasicUserRole         = "system:basic-user"
	PublicInfoViewerRole  = "system:public-info-viewer"
	MonitoringRole        = "system:monitoring"
	KubeSchedulerRole     = "system:kube-scheduler"
	VolumeSchedulerRole   = "system:volume-scheduler"
	ControllerManagerRole = "system:kube-controller-manager"
	NodeProxierRole       = "system:node-proxier"
	NodeRole              = "system:node"
	// ControllerRolePrefix starts the role of each controller of the
	// controller manager: system:controller:replicaset-controller.
	ControllerRolePrefix = "system:controller:"
	// ViewersBinding binds view to klab:viewers and to the user
	// klab-viewer; it is klab's own.
	ViewersBinding = "klab-viewers"
	// SchedulerExplanationsRole lets klab's scheduler annotate the pods
	// it cannot place; it is klab's own.
	SchedulerExplanationsRole = "klab:scheduler-explanations"
	// KubeProxyRole is kubeadm's Role in kube-system that lets kube-proxy
	// read its ConfigMap.
	KubeProxyRole = "kube-proxy"

	// MonitoringGroup is bound to system:monitoring.
	MonitoringGroup = "system:monitoring"
	// ServiceAccountsGroup holds every service account.
	ServiceAccountsGroup = "system:serviceaccounts"

	// AutoUpdateAnnotation set to "false" on a default role or binding
	// keeps start-up reconciliation from changing it.
	AutoUpdateAnnotation = rbacv1.AutoUpdateAnnotationKey
	// Aggregation labels: a ClusterRole carrying one adds its rules to
	// admin, edit or view.
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

const (
	coreGroup           = ""
	appsGroup           = "apps"
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	autoscalingGroup    = "autoscaling"
	batchGroup          = "batch"
	certificatesGroup   = "certificates.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	eventsGroup         = "events.k8s.io"
	extensionsGroup     = "extensions"
	networkingGroup     = "networking.k8s.io"
	nodeGroup           = "node.k8s.io"
	policyGroup         = "policy"
	rbacGroup           = rbacv1.GroupName
	storageGroup        = "storage.k8s.io"
)

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)

// rule is a resource rule: verbs on resources of groups.
func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: slices.Clone(verbs), APIGroups: slices.Clone(groups), Resources: resources}
}

// named is a resource rule limited to some object names.
func named(r rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule {
	r.ResourceNames = names
	return r
}

// urlRule is a non-resource rule.
func urlRule(verbs []string, urls ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: slices.Clone(verbs), NonResourceURLs: urls}
}

func v(verbs ...string) []string  { return verbs }
func g(groups ...string) []string { return groups }

// eventsRule lets a component record events in either API group.
func eventsRule() rbacv1.PolicyRule {
	return rule(v("create", "update", "patch"), g(coreGroup, eventsGroup), "events")
}

// ClusterRoles returns the default cluster roles.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		clusterRole(ClusterAdminRole, nil,
			rule(v("*"), g("*"), "*"),
			urlRule(v("*"), "*"),
		),
		clusterRole(DiscoveryRole, nil,
			urlRule(v("get"), "/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"),
		),
		clusterRole(MonitoringRole, nil,
			urlRule(v("get"), "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*"),
		),
		clusterRole(BasicUserRole, nil,
			rule(v("create"), g(authorizationGroup), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule(v("create"), g(authenticationGroup), "selfsubjectreviews"),
		),
		clusterRole(PublicInfoViewerRole, nil,
			urlRule(v("get"), "/livez", "/readyz", "/healthz", "/version", "/version/"),
		),
		aggregatedRole(AdminRole, nil, AggregateToAdmin),
		aggregatedRole(EditRole, map[string]string{AggregateToAdmin: "true"}, AggregateToEdit),
		aggregatedRole(ViewRole, map[string]string{AggregateToEdit: "true"}, AggregateToView),
		clusterRole("system:aggregate-to-admin", map[string]string{AggregateToAdmin: "true"},
			rule(v("create"), g(authorizationGroup), "localsubjectaccessreviews"),
			rule(readWrite, g(rbacGroup), "roles", "rolebindings"),
		),
		clusterRole("system:aggregate-to-edit", map[string]string{AggregateToEdit: "true"},
			// Reading these escalates: secrets hold tokens, exec and
			// proxy reach into what runs.
			rule(read, g(coreGroup), "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
			rule(v("impersonate"), g(coreGroup), "serviceaccounts"),
			rule(write, g(coreGroup), "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
			rule(v("create"), g(coreGroup), "pods/eviction"),
			rule(write, g(coreGroup), "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events"),
			rule(v("create"), g(coreGroup), "serviceaccounts/token"),
			rule(write, g(appsGroup), "statefulsets", "statefulsets/scale", "daemonsets",
				"deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"),
			rule(write, g(autoscalingGroup), "horizontalpodautoscalers"),
			rule(write, g(batchGroup), "jobs", "cronjobs"),
			rule(write, g(extensionsGroup), "daemonsets", "deployments", "deployments/scale", "deployments/rollback",
				"ingresses", "replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
			rule(write, g(policyGroup), "poddisruptionbudgets"),
			rule(write, g(networkingGroup), "networkpolicies", "ingresses"),
		),
		clusterRole("system:aggregate-to-view", map[string]string{AggregateToView: "true"},
			rule(read, g(coreGroup), "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
			rule(read, g(coreGroup), "limitranges", "resourcequotas", "bindings", "events",
				"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
			// Reading namespaces at namespace scope reads only this one.
			rule(read, g(coreGroup), "namespaces"),
			rule(read, g(discoveryGroup), "endpointslices"),
			rule(read, g(appsGroup), "controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
				"daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
				"replicasets", "replicasets/status", "replicasets/scale"),
			rule(read, g(autoscalingGroup), "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
			rule(read, g(batchGroup), "jobs", "cronjobs", "cronjobs/status", "jobs/status"),
			rule(read, g(extensionsGroup), "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
				"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status",
				"replicationcontrollers/scale", "networkpolicies"),
			rule(read, g(policyGroup), "poddisruptionbudgets", "poddisruptionbudgets/status"),
			rule(read, g(networkingGroup), "networkpolicies", "ingresses", "ingresses/status"),
		),
		clusterRole(NodeRole, nil, NodeRules()...),
		clusterRole("system:node-bootstrapper", nil,
			rule(v("create", "get", "list", "watch"), g(certificatesGroup), "certificatesigningrequests"),
		),
		clusterRole("system:kubelet-api-admin", nil,
			rule(read, g(coreGroup), "nodes"),
			rule(v("proxy"), g(coreGroup), "nodes"),
			rule(v("*"), g(coreGroup), "nodes/proxy", "nodes/metrics", "nodes/spec", "nodes/stats", "nodes/log"),
		),
		clusterRole("system:auth-delegator", nil,
			rule(v("create"), g(authenticationGroup), "tokenreviews"),
			rule(v("create"), g(authorizationGroup), "subjectaccessreviews"),
		),
		clusterRole(ControllerManagerRole, nil,
			eventsRule(),
			// Leader election.
			rule(v("create"), g(coordinationGroup), "leases"),
			named(rule(v("get", "update"), g(coordinationGroup), "leases"), "kube-controller-manager"),
			// The identities of the other controllers.
			rule(v("create"), g(coreGroup), "secrets", "serviceaccounts"),
			rule(v("delete"), g(coreGroup), "secrets"),
			rule(v("get"), g(coreGroup), "namespaces", "secrets", "serviceaccounts", "configmaps"),
			rule(v("update"), g(coreGroup), "secrets", "serviceaccounts"),
			rule(v("create"), g(authenticationGroup), "tokenreviews"),
			rule(v("create"), g(authorizationGroup), "subjectaccessreviews"),
			// Every shared informer.
			rule(v("list", "watch"), g("*"), "*"),
			rule(v("create"), g(coreGroup), "serviceaccounts/token"),
		),
		clusterRole(KubeSchedulerRole, nil,
			eventsRule(),
			rule(v("create"), g(coordinationGroup), "leases"),
			named(rule(v("get", "update"), g(coordinationGroup), "leases"), "kube-scheduler"),
			rule(read, g(coreGroup), "nodes"),
			rule(v("get", "list", "watch", "delete"), g(coreGroup), "pods"),
			rule(v("create"), g(coreGroup), "pods/binding", "bindings"),
			rule(v("patch", "update"), g(coreGroup), "pods/status"),
			// What selects pods, and what pods use.
			rule(read, g(coreGroup), "services", "replicationcontrollers"),
			rule(read, g(appsGroup, extensionsGroup), "replicasets"),
			rule(read, g(appsGroup), "statefulsets"),
			rule(read, g(policyGroup), "poddisruptionbudgets"),
			rule(read, g(coreGroup), "persistentvolumeclaims", "persistentvolumes"),
			rule(v("create"), g(authenticationGroup), "tokenreviews"),
			rule(v("create"), g(authorizationGroup), "subjectaccessreviews"),
			rule(read, g(storageGroup), "csinodes"),
			rule(read, g(coreGroup), "namespaces"),
			rule(read, g(storageGroup), "csidrivers"),
			rule(read, g(storageGroup), "csistoragecapacities"),
		),
		// klab's scheduler writes why it could not place a pod into the
		// pod's klab.dev/ annotations, for the TUI and lessons. Upstream's
		// scheduler writes no annotations, so its role cannot patch pods;
		// this klab role adds that one permission rather than widen
		// system:kube-scheduler.
		clusterRole(SchedulerExplanationsRole, nil,
			rule(v("patch"), g(coreGroup), "pods"),
		),
		clusterRole(VolumeSchedulerRole, nil,
			rule(v("get", "list", "watch", "update", "patch"), g(coreGroup), "persistentvolumes"),
			rule(read, g(storageGroup), "storageclasses"),
			rule(v("get", "list", "watch", "update", "patch"), g(coreGroup), "persistentvolumeclaims"),
		),
		clusterRole(NodeProxierRole, nil,
			rule(v("list", "watch"), g(coreGroup), "services", "endpoints"),
			rule(read, g(coreGroup), "nodes"),
			eventsRule(),
			rule(v("list", "watch"), g(discoveryGroup), "endpointslices"),
		),
		clusterRole("system:kube-dns", nil,
			rule(v("list", "watch"), g(coreGroup), "endpoints", "services"),
		),
		clusterRole("system:service-account-issuer-discovery", nil,
			urlRule(v("get"), "/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"),
		),
		clusterRole("system:certificates.k8s.io:kube-apiserver-client-approver", nil,
			named(rule(v("approve"), g(certificatesGroup), "signers"), "kubernetes.io/kube-apiserver-client"),
		),
		clusterRole("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver", nil,
			named(rule(v("approve"), g(certificatesGroup), "signers"), "kubernetes.io/kube-apiserver-client-kubelet"),
		),
		clusterRole("system:certificates.k8s.io:kubelet-serving-approver", nil,
			named(rule(v("approve"), g(certificatesGroup), "signers"), "kubernetes.io/kubelet-serving"),
		),
	}
	return append(roles, controllerRoles()...)
}

// NodeRules are system:node's, as upstream's bootstrappolicy.NodeRules:
// what a kubelet needs to register its node and run its pods. Nobody is
// bound to system:node (see ClusterRoleBindings); the Node authorizer
// applies these rules to each kubelet itself, after narrowing the reads
// of secrets, configmaps, claims and service account tokens to its own
// node's pods, and the NodeRestriction admission plugin narrows the
// writes to its own Node, Lease and pods.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(v("create"), g(authenticationGroup), "tokenreviews"),
		rule(v("create"), g(authorizationGroup), "subjectaccessreviews", "localsubjectaccessreviews"),
		rule(read, g(coreGroup), "services"),
		rule(v("create", "get", "list", "watch"), g(coreGroup), "nodes"),
		rule(v("update", "patch"), g(coreGroup), "nodes/status"),
		rule(v("update", "patch"), g(coreGroup), "nodes"),
		rule(v("create", "update", "patch"), g(coreGroup), "events"),
		rule(read, g(coreGroup), "pods"),
		rule(v("create", "delete"), g(coreGroup), "pods"),
		rule(v("update", "patch"), g(coreGroup), "pods/status"),
		rule(v("create"), g(coreGroup), "pods/eviction"),
		rule(read, g(coreGroup), "configmaps", "secrets"),
		rule(v("get"), g(coreGroup), "persistentvolumeclaims", "persistentvolumes"),
		rule(v("get"), g(coreGroup), "endpoints"),
		rule(v("create", "get", "list", "watch"), g(certificatesGroup), "certificatesigningrequests"),
		rule(v("get", "create", "update", "patch", "delete"), g(coordinationGroup), "leases"),
		rule(v("get"), g(storageGroup), "volumeattachments"),
		rule(v("create"), g(coreGroup), "serviceaccounts/token"),
		rule(v("get", "update", "patch"), g(coreGroup), "persistentvolumeclaims/status"),
		rule(v("get", "watch", "list"), g(storageGroup), "csidrivers"),
		rule(v("get", "create", "update", "patch", "delete"), g(storageGroup), "csinodes"),
		rule(read, g(nodeGroup), "runtimeclasses"),
	}
}

// Controller names, as upstream's service accounts in kube-system name
// them.
const (
	NamespaceController      = "namespace-controller"
	NodeController           = "node-controller"
	TaintEvictionController  = "taint-eviction-controller"
	ServiceAccountController = "service-account-controller"
	EndpointController       = "endpoint-controller"
	EndpointSliceController  = "endpointslice-controller"
	GarbageCollector         = "generic-garbage-collector"
	ReplicaSetController     = "replicaset-controller"
	ReplicationController    = "replication-controller"
	DeploymentController     = "deployment-controller"
	DaemonSetController      = "daemon-set-controller"
	JobController            = "job-controller"
	AggregationController    = "clusterrole-aggregation-controller"
	StatefulSetController    = "statefulset-controller"
	DisruptionController     = "disruption-controller"
	CronJobController        = "cronjob-controller"
	ResourceQuotaController  = "resourcequota-controller"
	CertificateController    = "certificate-controller"
	RootCACertPublisher      = "root-ca-cert-publisher"
)

// controllerRoles are the roles of the controllers klab's controller
// manager runs (bootstrappolicy's controller_policy.go).
func controllerRoles() []rbacv1.ClusterRole {
	c := func(name string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
		return clusterRole(ControllerRolePrefix+name, nil, rules...)
	}
	return []rbacv1.ClusterRole{
		c(CertificateController,
			rule(v("get", "list", "watch", "delete"), g(certificatesGroup), "certificatesigningrequests"),
			rule(v("update"), g(certificatesGroup), "certificatesigningrequests/status", "certificatesigningrequests/approval"),
			named(rule(v("approve"), g(certificatesGroup), "signers"), "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/legacy-unknown"),
			named(rule(v("sign"), g(certificatesGroup), "signers"), "kubernetes.io/legacy-unknown", "kubernetes.io/kube-apiserver-client",
				"kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving"),
			rule(v("create"), g(authorizationGroup), "subjectaccessreviews"),
			eventsRule(),
		),
		c(RootCACertPublisher,
			rule(v("create", "update"), g(coreGroup), "configmaps"),
			eventsRule(),
		),
		c(AggregationController,
			rule(v("escalate", "get", "list", "watch", "update", "patch"), g(rbacGroup), "clusterroles"),
		),
		c(DaemonSetController,
			rule(read, g(appsGroup, extensionsGroup), "daemonsets"),
			rule(v("update"), g(appsGroup, extensionsGroup), "daemonsets/status"),
			rule(v("update"), g(appsGroup, extensionsGroup), "daemonsets/finalizers"),
			rule(v("list", "watch"), g(coreGroup), "nodes"),
			rule(v("list", "watch", "create", "delete", "patch"), g(coreGroup), "pods"),
			rule(v("create"), g(coreGroup), "pods/binding"),
			rule(v("get", "list", "watch", "create", "delete", "update", "patch"), g(appsGroup), "controllerrevisions"),
			eventsRule(),
		),
		c(DeploymentController,
			rule(v("get", "list", "watch", "update"), g(appsGroup, extensionsGroup), "deployments"),
			rule(v("update"), g(appsGroup, extensionsGroup), "deployments/status"),
			rule(v("update"), g(appsGroup, extensionsGroup), "deployments/finalizers"),
			rule(v("get", "list", "watch", "create", "update", "patch", "delete"), g(appsGroup, extensionsGroup), "replicasets"),
			rule(v("get", "list", "watch", "update"), g(coreGroup), "pods"),
			eventsRule(),
		),
		c(EndpointController,
			rule(read, g(coreGroup), "services", "pods"),
			rule(v("get", "list", "create", "update", "delete"), g(coreGroup), "endpoints"),
			rule(v("create"), g(coreGroup), "endpoints/restricted"),
			eventsRule(),
		),
		c(EndpointSliceController,
			rule(read, g(coreGroup), "services", "pods", "nodes"),
			rule(v("create", "update", "delete"), g(discoveryGroup), "endpointslices"),
			eventsRule(),
		),
		c(GarbageCollector,
			rule(v("get", "list", "watch", "patch", "update", "delete"), g("*"), "*"),
		),
		c(JobController,
			rule(v("get", "list", "watch", "update", "patch"), g(batchGroup), "jobs"),
			rule(v("update", "patch"), g(batchGroup), "jobs/status"),
			rule(v("update", "patch"), g(batchGroup), "jobs/finalizers"),
			rule(v("list", "watch", "create", "delete", "patch"), g(coreGroup), "pods"),
			eventsRule(),
		),
		c(NamespaceController,
			rule(v("get", "list", "watch", "delete"), g(coreGroup), "namespaces"),
			rule(v("update"), g(coreGroup), "namespaces/finalize", "namespaces/status"),
			rule(v("get", "list", "delete", "deletecollection"), g("*"), "*"),
		),
		c(NodeController,
			rule(v("get", "list", "update", "delete", "patch"), g(coreGroup), "nodes"),
			rule(v("patch", "update"), g(coreGroup), "nodes/status"),
			rule(v("patch", "update"), g(coreGroup), "pods/status"),
			rule(v("list", "delete"), g(coreGroup), "pods"),
			eventsRule(),
		),
		c(ReplicaSetController,
			rule(v("get", "list", "watch", "update"), g(appsGroup, extensionsGroup), "replicasets"),
			rule(v("update"), g(appsGroup, extensionsGroup), "replicasets/status"),
			rule(v("update"), g(appsGroup, extensionsGroup), "replicasets/finalizers"),
			rule(v("list", "watch", "patch", "create", "delete"), g(coreGroup), "pods"),
			eventsRule(),
		),
		c(ReplicationController,
			rule(v("get", "list", "watch", "update"), g(coreGroup), "replicationcontrollers"),
			rule(v("update"), g(coreGroup), "replicationcontrollers/status"),
			rule(v("update"), g(coreGroup), "replicationcontrollers/finalizers"),
			rule(v("list", "watch", "patch", "create", "delete"), g(coreGroup), "pods"),
			eventsRule(),
		),
		c(ServiceAccountController,
			rule(v("create"), g(coreGroup), "serviceaccounts"),
			eventsRule(),
		),
		c(StatefulSetController,
			rule(v("list", "watch"), g(coreGroup), "pods"),
			rule(v("list", "watch"), g(appsGroup), "statefulsets"),
			rule(v("update"), g(appsGroup), "statefulsets/status"),
			rule(v("update"), g(appsGroup), "statefulsets/finalizers"),
			rule(v("get", "create", "delete", "update", "patch"), g(coreGroup), "pods"),
			rule(v("get", "create", "delete", "update", "patch", "list", "watch"), g(appsGroup), "controllerrevisions"),
			rule(v("get", "create"), g(coreGroup), "persistentvolumeclaims"),
			rule(v("update", "delete"), g(coreGroup), "persistentvolumeclaims"),
			eventsRule(),
		),
		c(DisruptionController,
			rule(v("get", "list", "watch"), g(extensionsGroup, appsGroup), "deployments"),
			rule(v("get", "list", "watch"), g(appsGroup, extensionsGroup), "replicasets"),
			rule(v("get", "list", "watch"), g(coreGroup), "replicationcontrollers"),
			rule(v("get", "list", "watch"), g(policyGroup), "poddisruptionbudgets"),
			rule(v("get", "list", "watch"), g(appsGroup), "statefulsets"),
			rule(v("update"), g(policyGroup), "poddisruptionbudgets/status"),
			rule(v("patch", "update"), g(coreGroup), "pods/status"),
			rule(v("get"), g("*"), "*/scale"),
			eventsRule(),
		),
		c(ResourceQuotaController,
			// Quota counts objects of any resource, so it sees them all.
			rule(v("list", "watch"), g("*"), "*"),
			rule(v("update"), g(coreGroup), "resourcequotas/status"),
			eventsRule(),
		),
		c(CronJobController,
			rule(v("get", "list", "watch", "update"), g(batchGroup), "cronjobs"),
			rule(v("get", "list", "watch", "create", "update", "delete", "patch"), g(batchGroup), "jobs"),
			rule(v("update"), g(batchGroup), "cronjobs/status"),
			rule(v("update"), g(batchGroup), "cronjobs/finalizers"),
			rule(v("list", "delete"), g(coreGroup), "pods"),
			eventsRule(),
		),
		c(TaintEvictionController,
			rule(v("delete"), g(coreGroup), "pods"),
			rule(v("patch"), g(coreGroup), "pods/status"),
			eventsRule(),
		),
	}
}

// ClusterRoleBindings returns the default cluster role bindings.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bindings := []rbacv1.ClusterRoleBinding{
		clusterRoleBinding(ClusterAdminRole, ClusterAdminRole, Group(SystemPrivilegedGroup)),
		// kubeadm init creates this one rather than the API server; klab
		// has no kubeadm, so its bootstrap policy holds it.
		clusterRoleBinding(ClusterAdminsGroup, ClusterAdminRole, Group(ClusterAdminsGroup)),
		clusterRoleBinding(MonitoringRole, MonitoringRole, Group(MonitoringGroup)),
		clusterRoleBinding(DiscoveryRole, DiscoveryRole, Group(AllAuthenticated)),
		clusterRoleBinding(BasicUserRole, BasicUserRole, Group(AllAuthenticated)),
		clusterRoleBinding(PublicInfoViewerRole, PublicInfoViewerRole, Group(AllAuthenticated), Group(AllUnauthenticated)),
		clusterRoleBinding(NodeProxierRole, NodeProxierRole, UserSubject(KubeProxy)),
		clusterRoleBinding(ControllerManagerRole, ControllerManagerRole, UserSubject(KubeControllerManager)),
		clusterRoleBinding("system:kube-dns", "system:kube-dns", ServiceAccountSubject("kube-system", "kube-dns")),
		clusterRoleBinding(KubeSchedulerRole, KubeSchedulerRole, UserSubject(KubeScheduler)),
		clusterRoleBinding(VolumeSchedulerRole, VolumeSchedulerRole, UserSubject(KubeScheduler)),
		clusterRoleBinding(SchedulerExplanationsRole, SchedulerExplanationsRole, UserSubject(KubeScheduler)),
		clusterRoleBinding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery", Group(ServiceAccountsGroup)),
		// Upstream's binding without subjects: the Node authorizer
		// decides for kubelets, each for its own node, by the rules of
		// system:node (NodeRules).
		clusterRoleBinding(NodeRole, NodeRole),
		// The user too, not only its group: kubectl --as=klab-viewer
		// impersonates the name without the group, and must be answered
		// as the viewer's own token is. The user comes first, so that an
		// allow names it, as upstream names a binding's first subject
		// that applies.
		clusterRoleBinding(ViewersBinding, ViewRole, UserSubject(ViewerUser), Group(ViewersGroup)),
	}
	// Upstream's controller manager, started with
	// --use-service-account-credentials, runs each controller as its own
	// service account. klab's runs them all with its own credentials, so,
	// as upstream requires for that mode, its user holds every
	// controller's role too.
	for _, r := range controllerRoles() {
		name := r.Name[len(ControllerRolePrefix):]
		bindings = append(bindings, clusterRoleBinding(r.Name, r.Name,
			ServiceAccountSubject("kube-system", name), UserSubject(KubeControllerManager)))
	}
	return bindings
}

// Roles returns the default namespaced roles.
func Roles() []rbacv1.Role {
	return []rbacv1.Role{{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: defaultMeta(KubeProxyRole, "kube-system", nil),
		// kubeadm's role lets kube-proxy get its ConfigMap. klab's
		// kube-proxy watches it (the mode can be switched while it runs),
		// and a list or watch has no object name to limit it by.
		Rules: []rbacv1.PolicyRule{rule(read, g(coreGroup), "configmaps")},
	}}
}

// RoleBindings returns the default role bindings.
func RoleBindings() []rbacv1.RoleBinding {
	return []rbacv1.RoleBinding{{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: defaultMeta(KubeProxyRole, "kube-system", nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "Role", Name: KubeProxyRole},
		Subjects:   []rbacv1.Subject{UserSubject(KubeProxy)},
	}}
}

func clusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: defaultMeta(name, "", labels),
		Rules:      rules,
	}
}

// aggregatedRole is a ClusterRole whose rules the aggregation controller
// gathers from the ClusterRoles carrying label=true.
func aggregatedRole(name string, labels map[string]string, label string) rbacv1.ClusterRole {
	r := clusterRole(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{label: "true"}},
	}}
	return r
}

func clusterRoleBinding(name, role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: defaultMeta(name, "", nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

// defaultMeta marks a default object as upstream marks its own: the
// bootstrapping label, and the annotation that lets reconciliation update
// it.
func defaultMeta(name, namespace string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}
	for k, val := range labels {
		l[k] = val
	}
	return metav1.ObjectMeta{
		Name: name, Namespace: namespace, Labels: l,
		Annotations: map[string]string{AutoUpdateAnnotation: "true"},
	}
}

// Group is a Group subject.
func Group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacGroup, Name: name}
}

// UserSubject is a User subject.
func UserSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacGroup, Name: name}
}

// ServiceAccountSubject is a ServiceAccount subject.
func ServiceAccountSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}
