package validation

import (
	"strings"
	"testing"

	"github.com/klab-dev/klab/cluster/apiserver/defaults"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestPodCreate(t *testing.T) {
	limits := func(name corev1.ResourceName, q string) corev1.ResourceList {
		return corev1.ResourceList{name: resource.MustParse(q)}
	}
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{name: "valid", mutate: func(*corev1.Pod) {}},
		{
			name:   "no containers",
			mutate: func(p *corev1.Pod) { p.Spec.Containers = nil },
			want:   []string{`spec.containers: Required value`},
		},
		{
			name:   "container name missing",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" },
			want:   []string{`spec.containers[0].name: Required value`},
		},
		{
			name:   "container name not a DNS label",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "Web" },
			want:   []string{`spec.containers[0].name: Invalid value: "Web": ` + dnsLabelMsg},
		},
		{
			name:   "duplicate container name",
			mutate: func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, container("web", "busybox")) },
			want:   []string{`spec.containers[1].name: Duplicate value: "web"`},
		},
		{
			name:   "init container named like a container",
			mutate: func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{container("web", "busybox")} },
			want:   []string{`spec.initContainers[0].name: Duplicate value: "web"`},
		},
		{
			name:   "image missing",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			want:   []string{`spec.containers[0].image: Required value`},
		},
		{
			name:   "image with a space",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx " },
			want:   []string{`spec.containers[0].image: Invalid value: "nginx ": must not have leading or trailing whitespace`},
		},
		{
			name: "ports",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{
					{Name: "http", ContainerPort: 70000},
					{Name: "http", Protocol: "HTTP"},
					{Name: "HTTP", ContainerPort: 8443},
				}
			},
			want: []string{
				`spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`,
				`spec.containers[0].ports[1].name: Duplicate value: "http"`,
				`spec.containers[0].ports[1].containerPort: Required value`,
				`spec.containers[0].ports[1].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`,
				`spec.containers[0].ports[2].name: Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
				`spec.containers[0].ports[2].name: Invalid value: "HTTP": must contain at least one letter (a-z)`,
			},
		},
		{
			name: "two containers on one host port",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
				side := container("side", "busybox")
				side.Ports = []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080}}
				p.Spec.Containers = append(p.Spec.Containers, side)
			},
			want: []string{`spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"`},
		},
		{
			name: "hostNetwork needs hostPort to equal containerPort",
			mutate: func(p *corev1.Pod) {
				p.Spec.HostNetwork = true
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 9090}}
			},
			want: []string{"spec.containers[0].ports[0].hostPort: Invalid value: 9090: must match `containerPort` when `hostNetwork` is true"},
		},
		{
			name:   "restartPolicy",
			mutate: func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			want:   []string{`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
		},
		{
			name:   "dnsPolicy",
			mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = "Cluster" },
			want:   []string{`spec.dnsPolicy: Unsupported value: "Cluster": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`},
		},
		{
			name:   "dnsPolicy None needs dnsConfig",
			mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone },
			want:   []string{"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"},
		},
		{
			name: "volumes and mounts",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{
					{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "both", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}},
				}
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
					{Name: "data", MountPath: "/data"},
					{Name: "cache", MountPath: "/data"},
				}
			},
			want: []string{
				`spec.volumes[1].name: Duplicate value: "data"`,
				`spec.volumes[2].hostPath: Forbidden: may not specify more than 1 volume type`,
				`spec.containers[0].volumeMounts[1].name: Not found: "cache"`,
				`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/data": must be unique`,
			},
		},
		{
			name: "configMap volume item outside the volume",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
					Items:                []corev1.KeyToPath{{Key: "a", Path: "/etc/a"}, {Key: "b", Path: "../b"}},
				}}}}
			},
			want: []string{
				`spec.volumes[0].configMap.items[0].path: Invalid value: "/etc/a": must be a relative path`,
				`spec.volumes[0].configMap.items[1].path: Invalid value: "../b": must not contain '..'`,
			},
		},
		{
			name: "projected token needs a service account",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
				}}}}
			},
			want: []string{`spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set`},
		},
		{
			name: "env",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{
					{Name: "A=B", Value: "x"},
					{Name: "POD", Value: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "PHASE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.phase"}}},
					{Name: "EMPTY", ValueFrom: &corev1.EnvVarSource{}},
					{Name: "KEY", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
				}
			},
			want: []string{
				`spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
				"spec.containers[0].env[1].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
				`spec.containers[0].env[2].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`,
				"spec.containers[0].env[3].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
				`spec.containers[0].env[4].valueFrom.configMapKeyRef.key: Required value`,
			},
		},
		{
			name: "request above limit",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
					Limits: limits(corev1.ResourceCPU, "1"), Requests: limits(corev1.ResourceCPU, "2"),
				}
			},
			want: []string{`spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`},
		},
		{
			// Defaulting copies the limit into the request, so both report.
			name:   "negative memory",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = limits(corev1.ResourceMemory, "-1Gi") },
			want: []string{
				`spec.containers[0].resources.limits[memory]: Invalid value: "-1Gi": must be greater than or equal to 0`,
				`spec.containers[0].resources.requests[memory]: Invalid value: "-1Gi": must be greater than or equal to 0`,
			},
		},
		{
			name:   "unknown resource",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = limits("gpu", "1") },
			want: []string{
				`spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified`,
				`spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource for containers`,
			},
		},
		{
			name:   "extended resources come whole",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = limits("example.com/gpu", "500m") },
			want: []string{
				`spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer`,
				`spec.containers[0].resources.requests[example.com/gpu]: Invalid value: "500m": must be an integer`,
			},
		},
		{
			name: "probes",
			mutate: func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.LivenessProbe = &corev1.Probe{SuccessThreshold: 2, PeriodSeconds: -1}
				c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet:   &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(0), Scheme: corev1.URISchemeHTTP},
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")},
				}}
			},
			want: []string{
				`spec.containers[0].livenessProbe: Required value: must specify a handler type`,
				`spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0`,
				`spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1`,
				`spec.containers[0].readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive`,
				`spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type`,
			},
		},
		{
			name: "probes only on sidecar init containers",
			mutate: func(p *corev1.Pod) {
				probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
				setup := container("setup", "busybox")
				setup.ReadinessProbe = probe
				proxy := container("proxy", "envoy")
				proxy.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
				proxy.ReadinessProbe = probe
				p.Spec.InitContainers = []corev1.Container{setup, proxy}
			},
			want: []string{`spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`},
		},
		{
			name: "tolerations",
			mutate: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{
					{Operator: corev1.TolerationOpEqual, Value: "x"},
					{Key: "dedicated", Operator: corev1.TolerationOpExists, Value: "gpu", Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To[int64](60)},
					{Key: "dedicated", Operator: "In", Effect: "NoRun"},
				}
			},
			want: []string{
				"spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
				"spec.tolerations[1].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
				"spec.tolerations[1].operator: Invalid value: \"gpu\": value must be empty when `operator` is 'Exists'",
				`spec.tolerations[2].operator: Unsupported value: "In": supported values: "Equal", "Exists"`,
				`spec.tolerations[2].effect: Unsupported value: "NoRun": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
			},
		},
		{
			name:   "nodeSelector is a set of labels",
			mutate: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "fast ssd"} },
			want:   []string{`spec.nodeSelector: Invalid value: "fast ssd": ` + labelValueMsg},
		},
		{
			name: "affinity",
			mutate: func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{
					NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn}},
						}}},
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 0}},
					},
					PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: ""}},
					},
				}
			},
			want: []string{
				"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
				`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100`,
				`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty`,
				`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": name part must be non-empty`,
				`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": ` + labelKeyNameMsg,
			},
		},
		{
			name: "empty node selector",
			mutate: func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
			},
			want: []string{`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term`},
		},
		{
			name: "topology spread",
			mutate: func(p *corev1.Pod) {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: "Maybe"}}
			},
			want: []string{
				`spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero`,
				`spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway"`,
			},
		},
		{
			name:   "activeDeadlineSeconds",
			mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) },
			want:   []string{`spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive`},
		},
		{
			name:   "runAsUser",
			mutate: func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](-1)} },
			want:   []string{`spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive`},
		},
		{
			name:   "nodeName",
			mutate: func(p *corev1.Pod) { p.Spec.NodeName = "Worker_1" },
			want:   []string{`spec.nodeName: Invalid value: "Worker_1": ` + dnsSubdomainMsg},
		},
		{
			name: "ephemeral containers only through their subresource",
			mutate: func(p *corev1.Pod) {
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
			},
			want: []string{`spec.ephemeralContainers: Forbidden: cannot be set on create`},
		},
		{
			name: "nodeName before the gates open",
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = "worker-1"
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
			},
			want: []string{`spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared`},
		},
		{
			name: "annotations the server reads",
			mutate: func(p *corev1.Pod) {
				p.Annotations = map[string]string{"kubernetes.io/config.mirror": "abc", "controller.kubernetes.io/pod-deletion-cost": "007"}
			},
			want: []string{
				`metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "abc": must set spec.nodeName if mirror pod annotation is set`,
				`metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: "007": must be a 32bit integer`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, ValidateCreate(validPod(tt.mutate)), tt.want...)
		})
	}
}

const podUpdateForbidden = "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"

func TestPodUpdate(t *testing.T) {
	tolerate := corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}
	tests := []struct {
		name   string
		old    func(*corev1.Pod)
		mutate func(*corev1.Pod)
		want   []string
		// wantForbidden expects the one "may not change fields" error, whose
		// diff part go-cmp words as it likes; it must name this field.
		wantForbidden string
	}{
		{name: "new image", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.27" }},
		{name: "labels", mutate: func(p *corev1.Pod) { p.Labels = map[string]string{"version": "2"} }},
		{
			name:          "command",
			mutate:        func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"sleep", "1d"} },
			wantForbidden: "Command",
		},
		{
			name: "resources",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			},
			wantForbidden: "Limits",
		},
		{
			name:   "added container",
			mutate: func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, container("side", "busybox")) },
			want:   []string{`spec.containers: Forbidden: pod updates may not add or remove containers`},
		},
		{
			name:   "image removed",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			want:   []string{`spec.containers[0].image: Required value`, `spec.containers[0].image: Required value`},
		},
		{name: "deadline set", mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) }},
		{
			name:   "deadline raised",
			old:    func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) },
			mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) },
			want:   []string{`spec.activeDeadlineSeconds: Invalid value: 60: must be less than or equal to previous value`},
		},
		{
			name:   "deadline removed",
			old:    func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) },
			mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
			want:   []string{`spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value`},
		},
		{name: "toleration added", mutate: func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{tolerate} }},
		{
			name: "tolerationSeconds changed",
			old:  func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{tolerate} },
			mutate: func(p *corev1.Pod) {
				p.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](10)
			},
		},
		{
			name:   "toleration removed",
			old:    func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{tolerate} },
			mutate: func(p *corev1.Pod) { p.Spec.Tolerations = nil },
			want:   []string{`spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds`},
		},
		{
			name:   "negative grace period corrected to 1",
			old:    func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1) },
			mutate: func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1) },
		},
		{
			name:          "grace period changed",
			mutate:        func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5) },
			wantForbidden: "TerminationGracePeriodSeconds",
		},
		{
			name: "scheduling gate removed, node selector added while gated",
			old:  func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "a"}, {Name: "b"}} },
			mutate: func(p *corev1.Pod) {
				p.Spec.SchedulingGates = p.Spec.SchedulingGates[1:]
				p.Spec.NodeSelector = map[string]string{"zone": "a"}
			},
		},
		{
			name: "scheduling gate added",
			old:  func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "a"}} },
			mutate: func(p *corev1.Pod) {
				p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: "b"})
			},
			want: []string{`spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'b'`},
		},
		{
			name: "node selector changed while gated",
			old: func(p *corev1.Pod) {
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "a"}}
				p.Spec.NodeSelector = map[string]string{"zone": "a"}
			},
			mutate: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} },
			want:   []string{`spec.nodeSelector: Invalid value: {"zone":"b"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)`},
		},
		{
			name: "mirror annotation added",
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = ""
				p.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
			},
			want: []string{
				`metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation`,
				`metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "x": must set spec.nodeName if mirror pod annotation is set`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validPod()
			if tt.old != nil {
				tt.old(old)
			}
			pod := old.DeepCopy()
			tt.mutate(pod)
			defaults.Default(pod) // as the server does with a request body
			errs := ValidateUpdate(pod, old)
			if tt.wantForbidden == "" {
				checkErrors(t, errs, tt.want...)
				return
			}
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), podUpdateForbidden) || !strings.Contains(errs[0].Error(), tt.wantForbidden) {
				t.Errorf("got %v, want one error starting %q and naming %s", errs, podUpdateForbidden, tt.wantForbidden)
			}
		})
	}
}

func TestPodStatusUpdate(t *testing.T) {
	terminated := corev1.ContainerStatus{Name: "web", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}
	running := corev1.ContainerStatus{Name: "web", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	tests := []struct {
		name   string
		old    func(*corev1.Pod)
		mutate func(*corev1.Pod)
		want   []string
	}{
		{
			name: "kubelet reports Running",
			mutate: func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.PodIP, p.Status.PodIPs = "10.244.1.5", []corev1.PodIP{{IP: "10.244.1.5"}}
				p.Status.HostIP, p.Status.HostIPs = "172.18.0.3", []corev1.HostIP{{IP: "172.18.0.3"}}
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: "example.com/ready", Status: corev1.ConditionTrue}}
			},
		},
		{
			name:   "status write may not bind",
			mutate: func(p *corev1.Pod) { p.Spec.NodeName = "worker-1" },
			want:   []string{`status.nodeName: Forbidden: may not be changed directly`},
		},
		{
			name:   "QoS class is fixed",
			mutate: func(p *corev1.Pod) { p.Status.QOSClass = corev1.PodQOSGuaranteed },
			want:   []string{`status.qosClass: Invalid value: "Guaranteed": field is immutable`},
		},
		{
			name: "finished container stays finished",
			old: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated}
			},
			mutate: func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{running} },
			want:   []string{`status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state`},
		},
		{
			name:   "restartPolicy Always restarts",
			old:    func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated} },
			mutate: func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{running} },
		},
		{
			name: "pod IPs",
			mutate: func(p *corev1.Pod) {
				p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.5"}, {IP: "10.244.1.300"}}
			},
			// Upstream also fails its dual-stack check on the bad IP.
			want: []string{
				`status.podIPs[1]: Invalid value: "10.244.1.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
				`status.podIPs: Internal error: failed to check for dual stack with error:invalid IP[1]: 10.244.1.300`,
				`status.podIPs: Invalid value: [{"ip":"10.244.1.5"},{"ip":"10.244.1.300"}]: may specify no more than one IP for each IP family`,
			},
		},
		{
			name: "two IPv4 pod IPs",
			mutate: func(p *corev1.Pod) {
				p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.5"}, {IP: "10.244.1.5"}}
			},
			want: []string{
				`status.podIPs: Invalid value: [{"ip":"10.244.1.5"},{"ip":"10.244.1.5"}]: may specify no more than one IP for each IP family`,
				`status.podIPs[1]: Duplicate value: {"ip":"10.244.1.5"}`,
			},
		},
		{
			name: "hostIPs must start with hostIP",
			mutate: func(p *corev1.Pod) {
				p.Status.HostIP, p.Status.HostIPs = "172.18.0.3", []corev1.HostIP{{IP: "172.18.0.4"}}
			},
			want: []string{"status.hostIPs[0].ip: Invalid value: \"172.18.0.4\": must be equal to `hostIP`"},
		},
		{
			name: "custom condition type",
			mutate: func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: "-ready", Status: corev1.ConditionTrue}}
			},
			want: []string{`metadata.conditions[0].Type: Invalid value: "-ready": ` + labelKeyNameMsg},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validPod()
			if tt.old != nil {
				tt.old(old)
			}
			pod := old.DeepCopy()
			tt.mutate(pod)
			checkErrors(t, ValidateStatusUpdate(pod, old), tt.want...)
		})
	}
}
