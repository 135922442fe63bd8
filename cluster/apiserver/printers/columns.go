package printers

import (
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The column definitions below are kube-apiserver's, name for name and in the
// same order. Descriptions come from the same API field documentation upstream
// reads them from (the generated SwaggerDoc of k8s.io/api), so a client that
// shows them (kubectl explain-like tools, dashboards) sees the same text.

// objectMetaDoc documents metadata fields: NAME and AGE of every table.
var objectMetaDoc = metav1.ObjectMeta{}.SwaggerDoc()

// column returns a column every kubectl get shows.
func column(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description}
}

// wide returns a column only kubectl get -o wide shows.
func wide(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description, Priority: 1}
}

var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]}
	ageColumn  = column("Age", "string", objectMetaDoc["creationTimestamp"])

	containersColumn = wide("Containers", "string", "Names of each container in the template.")
	imagesColumn     = wide("Images", "string", "Images referenced by each container in the template.")
)

var podColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
	column("Status", "string", "The aggregate status of the containers in this pod."),
	column("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
	ageColumn,
	wide("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"]),
	wide("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"]),
	wide("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]),
	wide("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"]),
}

var nodeColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Status", "string", "The status of the node"),
	column("Roles", "string", "The roles of the node"),
	ageColumn,
	column("Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]),
	wide("Internal-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
	wide("External-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
	wide("OS-Image", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"]),
	wide("Kernel-Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]),
	wide("Container-Runtime", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]),
}

var namespaceColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Status", "string", "The status of the namespace"),
	ageColumn,
}

var serviceColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"]),
	column("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
	column("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
	column("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"]),
	ageColumn,
	wide("Selector", "string", corev1.ServiceSpec{}.SwaggerDoc()["selector"]),
}

var endpointsColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"]),
	ageColumn,
}

var endpointSliceColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("AddressType", "string", discoveryv1beta1.EndpointSlice{}.SwaggerDoc()["addressType"]),
	column("Ports", "string", discoveryv1beta1.EndpointSlice{}.SwaggerDoc()["ports"]),
	column("Endpoints", "string", discoveryv1beta1.EndpointSlice{}.SwaggerDoc()["endpoints"]),
	ageColumn,
}

var configMapColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]),
	ageColumn,
}

var secretColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
	column("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]),
	ageColumn,
}

var serviceAccountColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]),
	ageColumn,
}

// eventColumns serve both core/v1 and events.k8s.io/v1 Events: upstream prints
// the one internal Event both convert to. NAME is a wide column here, and the
// table starts with LAST SEEN.
var eventColumns = []metav1.TableColumnDefinition{
	column("Last Seen", "string", corev1.Event{}.SwaggerDoc()["lastTimestamp"]),
	column("Type", "string", corev1.Event{}.SwaggerDoc()["type"]),
	column("Reason", "string", corev1.Event{}.SwaggerDoc()["reason"]),
	column("Object", "string", corev1.Event{}.SwaggerDoc()["involvedObject"]),
	wide("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
	wide("Source", "string", corev1.Event{}.SwaggerDoc()["source"]),
	column("Message", "string", corev1.Event{}.SwaggerDoc()["message"]),
	wide("First Seen", "string", corev1.Event{}.SwaggerDoc()["firstTimestamp"]),
	wide("Count", "string", corev1.Event{}.SwaggerDoc()["count"]),
	{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: objectMetaDoc["name"]},
}

var deploymentColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Ready", "string", "Number of the pod with ready state"),
	column("Up-to-date", "string", extensionsv1beta1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
	column("Available", "string", extensionsv1beta1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
	ageColumn,
	containersColumn,
	imagesColumn,
	wide("Selector", "string", extensionsv1beta1.DeploymentSpec{}.SwaggerDoc()["selector"]),
}

var replicaSetColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Desired", "integer", extensionsv1beta1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
	column("Current", "integer", extensionsv1beta1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
	column("Ready", "integer", extensionsv1beta1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
	ageColumn,
	containersColumn,
	imagesColumn,
	wide("Selector", "string", extensionsv1beta1.ReplicaSetSpec{}.SwaggerDoc()["selector"]),
}

var replicationControllerColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Desired", "integer", corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]),
	column("Current", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]),
	column("Ready", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]),
	ageColumn,
	containersColumn,
	imagesColumn,
	wide("Selector", "string", corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"]),
}

// podTemplateColumns shows the containers and images in every view, not
// only -o wide: they are all a PodTemplate has to say.
var podTemplateColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Containers", "string", "Names of each container in the template."),
	column("Images", "string", "Images referenced by each container in the template."),
	column("Pod Labels", "string", "The labels for the pod template."),
}

var daemonSetColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Desired", "integer", extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
	column("Current", "integer", extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
	column("Ready", "integer", extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
	column("Up-to-date", "integer", extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
	column("Available", "integer", extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
	column("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
	ageColumn,
	containersColumn,
	imagesColumn,
	wide("Selector", "string", extensionsv1beta1.DaemonSetSpec{}.SwaggerDoc()["selector"]),
}

var statefulSetColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Ready", "string", "Number of the pod with ready state"),
	ageColumn,
	containersColumn,
	imagesColumn,
}

var jobColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Status", "string", "Status of the job."),
	column("Completions", "string", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
	column("Duration", "string", "Time required to complete the job."),
	ageColumn,
	containersColumn,
	imagesColumn,
	wide("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"]),
}

var leaseColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
	ageColumn,
}
