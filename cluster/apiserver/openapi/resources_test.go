package openapi

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// allVerbs is what kube-apiserver serves for an ordinary resource.
var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// resourceOf describes a resource served with every verb.
func resourceOf[T, L any](group, version, resource string, namespaced bool, subresources ...string) Resource {
	typ := reflect.TypeFor[T]()
	listType := reflect.TypeFor[L]()
	return Resource{
		Group: group, Version: version, Resource: resource,
		Kind: typ.Name(), ListKind: listType.Name(),
		Namespaced: namespaced, Verbs: allVerbs, Subresources: subresources,
		Type: typ, ListType: listType,
	}
}

// testResources is roughly what klab's API server serves: 30 resources in
// 11 group-versions.
func testResources() []Resource {
	return []Resource{
		resourceOf[corev1.Pod, corev1.PodList]("", "v1", "pods", true,
			"status", "binding", "eviction", "log", "exec", "attach", "portforward", "proxy", "ephemeralcontainers"),
		resourceOf[corev1.Service, corev1.ServiceList]("", "v1", "services", true, "status", "proxy"),
		resourceOf[corev1.ConfigMap, corev1.ConfigMapList]("", "v1", "configmaps", true),
		resourceOf[corev1.Secret, corev1.SecretList]("", "v1", "secrets", true),
		resourceOf[corev1.Namespace, corev1.NamespaceList]("", "v1", "namespaces", false, "status"),
		resourceOf[corev1.Node, corev1.NodeList]("", "v1", "nodes", false, "status", "proxy"),
		resourceOf[corev1.ServiceAccount, corev1.ServiceAccountList]("", "v1", "serviceaccounts", true, "token"),
		resourceOf[corev1.Endpoints, corev1.EndpointsList]("", "v1", "endpoints", true),
		resourceOf[corev1.Event, corev1.EventList]("", "v1", "events", true),
		resourceOf[corev1.PersistentVolume, corev1.PersistentVolumeList]("", "v1", "persistentvolumes", false, "status"),
		resourceOf[corev1.PersistentVolumeClaim, corev1.PersistentVolumeClaimList]("", "v1", "persistentvolumeclaims", true, "status"),
		resourceOf[corev1.ReplicationController, corev1.ReplicationControllerList]("", "v1", "replicationcontrollers", true, "status", "scale"),
		resourceOf[corev1.ResourceQuota, corev1.ResourceQuotaList]("", "v1", "resourcequotas", true, "status"),
		resourceOf[corev1.LimitRange, corev1.LimitRangeList]("", "v1", "limitranges", true),
		resourceOf[appsv1.Deployment, appsv1.DeploymentList]("apps", "v1", "deployments", true, "status", "scale"),
		resourceOf[appsv1.ReplicaSet, appsv1.ReplicaSetList]("apps", "v1", "replicasets", true, "status", "scale"),
		resourceOf[appsv1.StatefulSet, appsv1.StatefulSetList]("apps", "v1", "statefulsets", true, "status", "scale"),
		resourceOf[appsv1.DaemonSet, appsv1.DaemonSetList]("apps", "v1", "daemonsets", true, "status"),
		resourceOf[appsv1.ControllerRevision, appsv1.ControllerRevisionList]("apps", "v1", "controllerrevisions", true),
		resourceOf[batchv1.Job, batchv1.JobList]("batch", "v1", "jobs", true, "status"),
		resourceOf[batchv1.CronJob, batchv1.CronJobList]("batch", "v1", "cronjobs", true, "status"),
		resourceOf[networkingv1.Ingress, networkingv1.IngressList]("networking.k8s.io", "v1", "ingresses", true, "status"),
		resourceOf[networkingv1.NetworkPolicy, networkingv1.NetworkPolicyList]("networking.k8s.io", "v1", "networkpolicies", true),
		resourceOf[rbacv1.Role, rbacv1.RoleList]("rbac.authorization.k8s.io", "v1", "roles", true),
		resourceOf[rbacv1.RoleBinding, rbacv1.RoleBindingList]("rbac.authorization.k8s.io", "v1", "rolebindings", true),
		resourceOf[rbacv1.ClusterRole, rbacv1.ClusterRoleList]("rbac.authorization.k8s.io", "v1", "clusterroles", false),
		resourceOf[rbacv1.ClusterRoleBinding, rbacv1.ClusterRoleBindingList]("rbac.authorization.k8s.io", "v1", "clusterrolebindings", false),
		resourceOf[coordinationv1.Lease, coordinationv1.LeaseList]("coordination.k8s.io", "v1", "leases", true),
		resourceOf[policyv1.PodDisruptionBudget, policyv1.PodDisruptionBudgetList]("policy", "v1", "poddisruptionbudgets", true, "status"),
		resourceOf[discoveryv1.EndpointSlice, discoveryv1.EndpointSliceList]("discovery.k8s.io", "v1", "endpointslices", true),
		resourceOf[storagev1.StorageClass, storagev1.StorageClassList]("storage.k8s.io", "v1", "storageclasses", false),
		resourceOf[schedulingv1.PriorityClass, schedulingv1.PriorityClassList]("scheduling.k8s.io", "v1", "priorityclasses", false),
		resourceOf[autoscalingv2.HorizontalPodAutoscaler, autoscalingv2.HorizontalPodAutoscalerList]("autoscaling", "v2", "horizontalpodautoscalers", true, "status"),
	}
}
