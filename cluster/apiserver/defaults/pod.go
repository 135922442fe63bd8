package defaults

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// defaultPod sets a Pod's defaults: those of every PodSpec, then the ones only
// a real Pod gets (a Deployment's template does not show them).
func defaultPod(pod *corev1.Pod) {
	spec := &pod.Spec
	defaultPodSpec(spec)

	// Requests default to limits, so a container that only sets limits is
	// scheduled by its limits. Upstream does this for Pods only, not
	// templates, so that a template's stored form stays what the user wrote.
	for i := range spec.InitContainers {
		defaultRequestsFromLimits(&spec.InitContainers[i].Resources)
	}
	for i := range spec.Containers {
		defaultRequestsFromLimits(&spec.Containers[i].Resources)
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	// With host networking a container port is a host port.
	if spec.HostNetwork {
		defaultHostNetworkPorts(spec.InitContainers)
		defaultHostNetworkPorts(spec.Containers)
	}
	// spec.priority and spec.preemptionPolicy are not defaults: the
	// Priority admission plugin resolves them from the pod's PriorityClass.
	defaultPodStatus(pod)
}

// defaultPodStatus gives a new Pod the status the pod strategy gives it on
// create (phase Pending and its QoS class), and keeps podIP/podIPs and
// hostIP/hostIPs in step as the round trip through the internal API version
// does upstream.
func defaultPodStatus(pod *corev1.Pod) {
	status := &pod.Status
	if status.Phase == "" {
		status.Phase = corev1.PodPending
	}
	if status.QOSClass == "" {
		status.QOSClass = podQOSClass(&pod.Spec)
	}
	if status.PodIP != "" && len(status.PodIPs) == 0 {
		status.PodIPs = []corev1.PodIP{{IP: status.PodIP}}
	}
	if status.PodIP == "" && len(status.PodIPs) > 0 {
		status.PodIP = status.PodIPs[0].IP
	}
	if status.HostIP != "" && len(status.HostIPs) == 0 {
		status.HostIPs = []corev1.HostIP{{IP: status.HostIP}}
	}
	if status.HostIP == "" && len(status.HostIPs) > 0 {
		status.HostIP = status.HostIPs[0].IP
	}
}

// defaultPodSpec sets the defaults of every PodSpec, in a Pod or in a
// workload's template (SetDefaults_PodSpec and the generated defaults of the
// structs inside it).
func defaultPodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	// serviceAccount is the deprecated twin of serviceAccountName; the
	// conversion to and from the internal version keeps both filled.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName

	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		c := corev1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		defaultContainer(&c)
		spec.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
	}
	roundUpResources(spec.Overhead)
}

// defaultContainer sets one container's defaults (SetDefaults_Container and
// the generated defaults of its ports, env, resources, probes and hooks).
func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil && from.FieldRef != nil && from.FieldRef.APIVersion == "" {
			from.FieldRef.APIVersion = "v1"
		}
	}
	roundUpResources(c.Resources.Limits)
	roundUpResources(c.Resources.Requests)
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		defaultLifecycleHandler(c.Lifecycle.PostStart)
		defaultLifecycleHandler(c.Lifecycle.PreStop)
	}
}

// defaultPullPolicy is Always for an image without a tag or tagged :latest,
// and IfNotPresent otherwise, so that a moving tag is pulled again and a
// fixed one is not.
func defaultPullPolicy(image string) corev1.PullPolicy {
	if imageTag(image) == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageTag returns the tag of an image reference, "latest" when it has
// neither tag nor digest, and "" when it is pinned by digest only. A colon in
// the registry part ("localhost:5000/app") is not a tag.
func imageTag(image string) string {
	if at := strings.Index(image, "@"); at >= 0 {
		name := image[:at]
		if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
			return name[i+1:]
		}
		return ""
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return "latest"
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

func defaultLifecycleHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		defaultHTTPGet(h.HTTPGet)
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// defaultVolume makes a volume without a source an emptyDir and fills in the
// file modes and token lifetime of the sources a lab uses.
func defaultVolume(v *corev1.Volume) {
	if ptr.AllPtrFieldsNil(&v.VolumeSource) {
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	src := &v.VolumeSource
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		defaultDownwardAPIFiles(src.DownwardAPI.Items)
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		src.HostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if p := src.Projected; p != nil {
		if p.DefaultMode == nil {
			p.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range p.Sources {
			if t := p.Sources[i].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptr.To[int64](3600)
			}
			if d := p.Sources[i].DownwardAPI; d != nil {
				defaultDownwardAPIFiles(d.Items)
			}
		}
	}
}

func defaultDownwardAPIFiles(files []corev1.DownwardAPIVolumeFile) {
	for i := range files {
		if ref := files[i].FieldRef; ref != nil && ref.APIVersion == "" {
			ref.APIVersion = "v1"
		}
	}
}

func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// roundUpResources rounds every quantity up to millis ("0.0001" CPU becomes
// "1m"), as upstream does to keep values it cannot represent out of storage.
func roundUpResources(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}

func defaultHostNetworkPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			port := &containers[i].Ports[j]
			if port.HostPort == 0 {
				port.HostPort = port.ContainerPort
			}
		}
	}
}
