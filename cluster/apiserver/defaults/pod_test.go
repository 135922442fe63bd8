package defaults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The Pod `kubectl run web --image=nginx` creates, as upstream stores it.
func TestDefaultPodMinimal(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
	}
	Default(pod)

	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:                     "web",
				Image:                    "nginx",
				ImagePullPolicy:          corev1.PullAlways,
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy:                     corev1.DNSClusterFirst,
			SecurityContext:               &corev1.PodSecurityContext{},
			SchedulerName:                 "default-scheduler",
			EnableServiceLinks:            ptr.To(true),
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
	}
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Errorf("defaulted Pod differs (-want +got):\n%s", diff)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		name  string
		image string
		set   corev1.PullPolicy
		want  corev1.PullPolicy
	}{
		{name: "no tag means latest", image: "nginx", want: corev1.PullAlways},
		{name: "latest tag", image: "nginx:latest", want: corev1.PullAlways},
		{name: "fixed tag", image: "nginx:1.27", want: corev1.PullIfNotPresent},
		{name: "registry port is not a tag", image: "localhost:5000/app", want: corev1.PullAlways},
		{name: "registry port and tag", image: "localhost:5000/app:v1", want: corev1.PullIfNotPresent},
		{name: "digest only", image: "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", want: corev1.PullIfNotPresent},
		{name: "latest tag and digest", image: "nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", want: corev1.PullAlways},
		{name: "user choice is kept", image: "nginx", set: corev1.PullNever, want: corev1.PullNever},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := corev1.Container{Name: "c", Image: tt.image, ImagePullPolicy: tt.set}
			defaultContainer(&c)
			if c.ImagePullPolicy != tt.want {
				t.Errorf("imagePullPolicy for %q = %q, want %q", tt.image, c.ImagePullPolicy, tt.want)
			}
		})
	}
}

func TestDefaultContainerParts(t *testing.T) {
	c := corev1.Container{
		Name:  "app",
		Image: "app:v1",
		Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
		Env: []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
		}}},
		Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001")},
		},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)},
		}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:   corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}},
			PeriodSeconds:  5,
			TimeoutSeconds: 2,
		},
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")},
		}},
	}
	defaultContainer(&c)

	if got := []corev1.Protocol{c.Ports[0].Protocol, c.Ports[1].Protocol}; got[0] != corev1.ProtocolTCP || got[1] != corev1.ProtocolUDP {
		t.Errorf("port protocols = %v, want [TCP UDP]", got)
	}
	if got := c.Env[0].ValueFrom.FieldRef.APIVersion; got != "v1" {
		t.Errorf("fieldRef apiVersion = %q, want v1", got)
	}
	if got := c.Resources.Limits[corev1.ResourceCPU]; got.String() != "1m" {
		t.Errorf("cpu limit 0.0001 rounds to %s, want 1m", got.String())
	}
	wantLiveness := &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
		TimeoutSeconds:   1,
		PeriodSeconds:    10,
		SuccessThreshold: 1,
		FailureThreshold: 3,
	}
	if diff := cmp.Diff(wantLiveness, c.LivenessProbe); diff != "" {
		t.Errorf("liveness probe (-want +got):\n%s", diff)
	}
	wantReadiness := &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: ptr.To("")}},
		TimeoutSeconds:   2,
		PeriodSeconds:    5,
		SuccessThreshold: 1,
		FailureThreshold: 3,
	}
	if diff := cmp.Diff(wantReadiness, c.ReadinessProbe); diff != "" {
		t.Errorf("readiness probe (-want +got):\n%s", diff)
	}
	if h := c.Lifecycle.PreStop.HTTPGet; h.Path != "/" || h.Scheme != corev1.URISchemeHTTP {
		t.Errorf("preStop httpGet = path %q scheme %q, want / HTTP", h.Path, h.Scheme)
	}
}

func TestDefaultPodVolumes(t *testing.T) {
	spec := corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "scratch"},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To[int32](0o400)}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
		{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
		}}}},
	}}
	defaultPodSpec(&spec)

	v := spec.Volumes
	if v[0].EmptyDir == nil {
		t.Errorf("volume without a source: got %+v, want an emptyDir", v[0].VolumeSource)
	}
	if got := *v[1].ConfigMap.DefaultMode; got != 0o644 {
		t.Errorf("configMap defaultMode = %o, want 644", got)
	}
	if got := *v[2].Secret.DefaultMode; got != 0o400 {
		t.Errorf("secret defaultMode set by the user = %o, want it kept at 400", got)
	}
	if got := *v[3].HostPath.Type; got != corev1.HostPathUnset {
		t.Errorf("hostPath type = %q, want empty (unset)", got)
	}
	if got := *v[4].Projected.DefaultMode; got != 0o644 {
		t.Errorf("projected defaultMode = %o, want 644", got)
	}
	if got := *v[4].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds; got != 3600 {
		t.Errorf("token expirationSeconds = %d, want 3600", got)
	}
}

func TestDefaultPodOnlyFields(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		HostNetwork:        true,
		ServiceAccountName: "builder",
		Containers: []corev1.Container{{
			Name:  "app",
			Image: "app:v1",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 9090, HostPort: 19090}},
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			},
		}},
	}}
	Default(pod)

	c := pod.Spec.Containers[0]
	if got := c.Resources.Requests[corev1.ResourceMemory]; got.String() != "128Mi" {
		t.Errorf("memory request = %s, want the limit 128Mi", got.String())
	}
	if got := c.Resources.Requests[corev1.ResourceCPU]; got.String() != "100m" {
		t.Errorf("cpu request = %s, want the user's 100m", got.String())
	}
	if c.Ports[0].HostPort != 8080 || c.Ports[1].HostPort != 19090 {
		t.Errorf("host ports = %d, %d; want 8080 (from containerPort) and 19090 (kept)", c.Ports[0].HostPort, c.Ports[1].HostPort)
	}
	if pod.Spec.DeprecatedServiceAccount != "builder" {
		t.Errorf("serviceAccount = %q, want it to follow serviceAccountName", pod.Spec.DeprecatedServiceAccount)
	}
	if pod.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("qosClass = %q, want Burstable", pod.Status.QOSClass)
	}
}

func TestPodQOSClass(t *testing.T) {
	res := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	container := func(req, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	tests := []struct {
		name       string
		containers []corev1.Container
		init       []corev1.Container
		want       corev1.PodQOSClass
	}{
		{name: "nothing set", containers: []corev1.Container{{}}, want: corev1.PodQOSBestEffort},
		{name: "zero requests count as none", containers: []corev1.Container{container(res("0", "0"), nil)}, want: corev1.PodQOSBestEffort},
		{name: "limits equal requests", containers: []corev1.Container{container(res("1", "1Gi"), res("1", "1Gi"))}, want: corev1.PodQOSGuaranteed},
		{name: "same amount in other units", containers: []corev1.Container{container(res("1000m", "1024Mi"), res("1", "1Gi"))}, want: corev1.PodQOSGuaranteed},
		{name: "request below limit", containers: []corev1.Container{container(res("500m", "1Gi"), res("1", "1Gi"))}, want: corev1.PodQOSBurstable},
		{name: "memory limit missing", containers: []corev1.Container{container(res("1", ""), res("1", ""))}, want: corev1.PodQOSBurstable},
		{name: "one container unconstrained", containers: []corev1.Container{container(res("1", "1Gi"), res("1", "1Gi")), {}}, want: corev1.PodQOSBurstable},
		{name: "init container counts", containers: []corev1.Container{{}}, init: []corev1.Container{container(res("100m", ""), nil)}, want: corev1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &corev1.PodSpec{Containers: tt.containers, InitContainers: tt.init}
			if got := podQOSClass(spec); got != tt.want {
				t.Errorf("podQOSClass = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultPodStatusIPs(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.5", HostIPs: []corev1.HostIP{{IP: "172.18.0.3"}}}}
	defaultPodStatus(pod)
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("phase = %q, want Running kept", pod.Status.Phase)
	}
	if diff := cmp.Diff([]corev1.PodIP{{IP: "10.244.1.5"}}, pod.Status.PodIPs); diff != "" {
		t.Errorf("podIPs (-want +got):\n%s", diff)
	}
	if pod.Status.HostIP != "172.18.0.3" {
		t.Errorf("hostIP = %q, want hostIPs[0]", pod.Status.HostIP)
	}
}
