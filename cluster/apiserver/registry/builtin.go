package registry

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MetricsGroup is the resource metrics API's group.
const MetricsGroup = "metrics.k8s.io"

// rbacGroup is the API group of RBAC's roles and bindings.
const rbacGroup = "rbac.authorization.k8s.io"

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// builtin is the table of served resources. Verbs, short names, categories
// and subresources are those `kubectl api-resources -o wide` shows for a
// kube-apiserver of the same version.
func builtin() []*Resource {
	return []*Resource{
		// core/v1
		{GroupVersionResource: gvr("", "v1", "bindings"), Kind: "Binding", Namespaced: true, Verbs: createOnly, Virtual: true},
		{GroupVersionResource: gvr("", "v1", "configmaps"), Kind: "ConfigMap", Namespaced: true, Verbs: allVerbs, ShortNames: []string{"cm"}},
		{GroupVersionResource: gvr("", "v1", "endpoints"), Kind: "Endpoints", SingularName: "endpoints", Namespaced: true, Verbs: allVerbs, ShortNames: []string{"ep"}},
		{GroupVersionResource: gvr("", "v1", "events"), Kind: "Event", Namespaced: true, Verbs: allVerbs, ShortNames: []string{"ev"}, FieldLabels: coreEventFields},
		{GroupVersionResource: gvr("", "v1", "limitranges"), Kind: "LimitRange", Namespaced: true, Verbs: allVerbs, ShortNames: []string{"limits"}},
		{GroupVersionResource: gvr("", "v1", "namespaces"), Kind: "Namespace", Verbs: namespaceVerb, Subresources: []string{SubFinalize, SubStatus}, ShortNames: []string{"ns"}, FieldLabels: namespaceFields},
		{GroupVersionResource: gvr("", "v1", "nodes"), Kind: "Node", Verbs: allVerbs, Subresources: []string{SubProxy, SubStatus}, ShortNames: []string{"no"}, FieldLabels: nodeFields},
		{GroupVersionResource: gvr("", "v1", "pods"), Kind: "Pod", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubAttach, SubBinding, SubEviction, SubExec, SubLog, SubPortForward, SubProxy, SubStatus}, ShortNames: []string{"po"}, Categories: []string{"all"}, FieldLabels: podFields},
		{GroupVersionResource: gvr("", "v1", "podtemplates"), Kind: "PodTemplate", Namespaced: true, Verbs: allVerbs},
		{GroupVersionResource: gvr("", "v1", "replicationcontrollers"), Kind: "ReplicationController", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubScale, SubStatus}, ShortNames: []string{"rc"}, Categories: []string{"all"}, FieldLabels: replicationControllerFields},
		{GroupVersionResource: gvr("", "v1", "resourcequotas"), Kind: "ResourceQuota", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubStatus}, ShortNames: []string{"quota"}},
		{GroupVersionResource: gvr("", "v1", "secrets"), Kind: "Secret", Namespaced: true, Verbs: allVerbs, FieldLabels: secretFields},
		{GroupVersionResource: gvr("", "v1", "serviceaccounts"), Kind: "ServiceAccount", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubToken}, ShortNames: []string{"sa"}},
		{GroupVersionResource: gvr("", "v1", "services"), Kind: "Service", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubProxy, SubStatus}, ShortNames: []string{"svc"}, Categories: []string{"all"}, FieldLabels: serviceFields},
		// apps/v1
		{GroupVersionResource: gvr("apps", "v1", "controllerrevisions"), Kind: "ControllerRevision", Namespaced: true, Verbs: allVerbs},
		{GroupVersionResource: gvr("apps", "v1", "daemonsets"), Kind: "DaemonSet", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubStatus}, ShortNames: []string{"ds"}, Categories: []string{"all"}},
		{GroupVersionResource: gvr("apps", "v1", "deployments"), Kind: "Deployment", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubScale, SubStatus}, ShortNames: []string{"deploy"}, Categories: []string{"all"}},
		{GroupVersionResource: gvr("apps", "v1", "statefulsets"), Kind: "StatefulSet", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubScale, SubStatus}, ShortNames: []string{"sts"}, Categories: []string{"all"}},
		{GroupVersionResource: gvr("apps", "v1", "replicasets"), Kind: "ReplicaSet", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubScale, SubStatus}, ShortNames: []string{"rs"}, Categories: []string{"all"}, FieldLabels: replicaSetFields},
		// autoscaling/v2, then autoscaling/v1: the same HPAs, stored as v2
		// (the preferred version, listed first) and served in both.
		{GroupVersionResource: gvr("autoscaling", "v2", "horizontalpodautoscalers"), Kind: "HorizontalPodAutoscaler", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubStatus}, ShortNames: []string{"hpa"}, Categories: []string{"all"}},
		{GroupVersionResource: gvr("autoscaling", "v1", "horizontalpodautoscalers"), Kind: "HorizontalPodAutoscaler", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubStatus}, ShortNames: []string{"hpa"}, Categories: []string{"all"}},
		// authentication.k8s.io/v1, authorization.k8s.io/v1: computed per request.
		{GroupVersionResource: gvr("authentication.k8s.io", "v1", "selfsubjectreviews"), Kind: "SelfSubjectReview", Verbs: createOnly, Virtual: true},
		{GroupVersionResource: gvr("authorization.k8s.io", "v1", "localsubjectaccessreviews"), Kind: "LocalSubjectAccessReview", Namespaced: true, Verbs: createOnly, Virtual: true},
		{GroupVersionResource: gvr("authorization.k8s.io", "v1", "selfsubjectaccessreviews"), Kind: "SelfSubjectAccessReview", Verbs: createOnly, Virtual: true},
		{GroupVersionResource: gvr("authorization.k8s.io", "v1", "selfsubjectrulesreviews"), Kind: "SelfSubjectRulesReview", Verbs: createOnly, Virtual: true},
		{GroupVersionResource: gvr("authorization.k8s.io", "v1", "subjectaccessreviews"), Kind: "SubjectAccessReview", Verbs: createOnly, Virtual: true},
		// certificates.k8s.io/v1
		{GroupVersionResource: gvr("certificates.k8s.io", "v1", "certificatesigningrequests"), Kind: "CertificateSigningRequest", Verbs: allVerbs, Subresources: []string{SubApproval, SubStatus}, ShortNames: []string{"csr"}, FieldLabels: csrFields},
		// batch/v1
		{GroupVersionResource: gvr("batch", "v1", "cronjobs"), Kind: "CronJob", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubStatus}, ShortNames: []string{"cj"}, Categories: []string{"all"}},
		{GroupVersionResource: gvr("batch", "v1", "jobs"), Kind: "Job", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubStatus}, Categories: []string{"all"}, FieldLabels: jobFields},
		// coordination.k8s.io/v1
		{GroupVersionResource: gvr("coordination.k8s.io", "v1", "leases"), Kind: "Lease", Namespaced: true, Verbs: allVerbs},
		// discovery.k8s.io/v1
		{GroupVersionResource: gvr("discovery.k8s.io", "v1", "endpointslices"), Kind: "EndpointSlice", Namespaced: true, Verbs: allVerbs},
		// metrics.k8s.io/v1beta1: read from the kubelets per request,
		// never stored (metrics-server's resources, served built in).
		{GroupVersionResource: gvr(MetricsGroup, "v1beta1", "nodes"), Kind: "NodeMetrics", Verbs: getList, Virtual: true},
		{GroupVersionResource: gvr(MetricsGroup, "v1beta1", "pods"), Kind: "PodMetrics", Namespaced: true, Verbs: getList, Virtual: true},
		// policy/v1
		{GroupVersionResource: gvr("policy", "v1", "poddisruptionbudgets"), Kind: "PodDisruptionBudget", Namespaced: true, Verbs: allVerbs, Subresources: []string{SubStatus}, ShortNames: []string{"pdb"}},
		// rbac.authorization.k8s.io/v1: the policy the RBAC authorizer
		// decides by, stored like any other object.
		{GroupVersionResource: gvr(rbacGroup, "v1", "clusterrolebindings"), Kind: "ClusterRoleBinding", Verbs: allVerbs},
		{GroupVersionResource: gvr(rbacGroup, "v1", "clusterroles"), Kind: "ClusterRole", Verbs: allVerbs},
		{GroupVersionResource: gvr(rbacGroup, "v1", "rolebindings"), Kind: "RoleBinding", Namespaced: true, Verbs: allVerbs},
		{GroupVersionResource: gvr(rbacGroup, "v1", "roles"), Kind: "Role", Namespaced: true, Verbs: allVerbs},
		// scheduling.k8s.io/v1
		{GroupVersionResource: gvr("scheduling.k8s.io", "v1", "priorityclasses"), Kind: "PriorityClass", Verbs: allVerbs, ShortNames: []string{"pc"}},
		// events.k8s.io/v1: the same events as core/v1, in the newer shape.
		{GroupVersionResource: gvr("events.k8s.io", "v1", "events"), Kind: "Event", Namespaced: true, Verbs: allVerbs, ShortNames: []string{"ev"}, StorageResource: "events", FieldLabels: coreEventFields},
	}
}

// The field selector labels below are upstream's (each resource's
// ToSelectableFields / GetAttrs in pkg/registry).

func podFields(obj runtime.Object) map[string]string {
	p := obj.(*corev1.Pod)
	return map[string]string{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

func csrFields(obj runtime.Object) map[string]string {
	return map[string]string{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
}

func nodeFields(obj runtime.Object) map[string]string {
	return map[string]string{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
}

func namespaceFields(obj runtime.Object) map[string]string {
	return map[string]string{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
}

func secretFields(obj runtime.Object) map[string]string {
	return map[string]string{"type": string(obj.(*corev1.Secret).Type)}
}

func serviceFields(obj runtime.Object) map[string]string {
	s := obj.(*corev1.Service)
	return map[string]string{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
}

func replicaSetFields(obj runtime.Object) map[string]string {
	return map[string]string{"status.replicas": strconv.Itoa(int(obj.(*appsv1.ReplicaSet).Status.Replicas))}
}

func replicationControllerFields(obj runtime.Object) map[string]string {
	return map[string]string{"status.replicas": strconv.Itoa(int(obj.(*corev1.ReplicationController).Status.Replicas))}
}

func jobFields(obj runtime.Object) map[string]string {
	return map[string]string{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
}

func coreEventFields(obj runtime.Object) map[string]string {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return nil // events.k8s.io events are converted to core events before selection
	}
	return map[string]string{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         e.Source.Component,
		"type":                           e.Type,
	}
}
