package defaults

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:v1"}}},
	}
}

// The template spec every workload below ends up with: the PodSpec
// defaults, but none of the Pod-only ones (no enableServiceLinks, no
// preemptionPolicy), as `kubectl get deploy -o yaml` shows.
func defaultedTemplateSpec() corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "app", Image: "app:v1", ImagePullPolicy: corev1.PullIfNotPresent,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}},
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		DNSPolicy:                     corev1.DNSClusterFirst,
		SecurityContext:               &corev1.PodSecurityContext{},
		SchedulerName:                 "default-scheduler",
	}
}

func TestDefaultDeployment(t *testing.T) {
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: template(labels),
	}}
	Default(d)

	want := appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: defaultedTemplateSpec()},
		Strategy: appsv1.DeploymentStrategy{
			Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromString("25%")),
				MaxSurge:       ptr.To(intstr.FromString("25%")),
			},
		},
		RevisionHistoryLimit:    ptr.To[int32](10),
		ProgressDeadlineSeconds: ptr.To[int32](600),
	}
	if diff := cmp.Diff(want, d.Spec); diff != "" {
		t.Errorf("defaulted Deployment spec differs (-want +got):\n%s", diff)
	}
}

func TestDefaultDeploymentRecreate(t *testing.T) {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](0),
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
	}}
	Default(d)
	if d.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("Recreate strategy got rollingUpdate %+v, want none", d.Spec.Strategy.RollingUpdate)
	}
	if *d.Spec.Replicas != 0 {
		t.Errorf("replicas = %d, want the user's 0 kept", *d.Spec.Replicas)
	}
}

func TestDefaultReplicaSetAndDaemonSet(t *testing.T) {
	rs := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Template: template(nil)}}
	Default(rs)
	if *rs.Spec.Replicas != 1 {
		t.Errorf("ReplicaSet replicas = %d, want 1", *rs.Spec.Replicas)
	}
	if diff := cmp.Diff(defaultedTemplateSpec(), rs.Spec.Template.Spec); diff != "" {
		t.Errorf("ReplicaSet template spec (-want +got):\n%s", diff)
	}

	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: template(nil)}}
	Default(ds)
	wantStrategy := appsv1.DaemonSetUpdateStrategy{
		Type: appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			MaxSurge:       ptr.To(intstr.FromInt32(0)),
		},
	}
	if diff := cmp.Diff(wantStrategy, ds.Spec.UpdateStrategy); diff != "" {
		t.Errorf("DaemonSet updateStrategy (-want +got):\n%s", diff)
	}
	if *ds.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("DaemonSet revisionHistoryLimit = %d, want 10", *ds.Spec.RevisionHistoryLimit)
	}
}

func TestDefaultJob(t *testing.T) {
	tests := []struct {
		name string
		job  batchv1.Job
		want batchv1.Job
	}{
		{
			name: "generated selector and labels",
			job: batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "6d1c7b2e"},
				Spec:       batchv1.JobSpec{Template: template(nil)},
			},
			want: batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "6d1c7b2e", Labels: map[string]string{
					"batch.kubernetes.io/controller-uid": "6d1c7b2e", "batch.kubernetes.io/job-name": "pi",
					"controller-uid": "6d1c7b2e", "job-name": "pi",
				}},
				Spec: batchv1.JobSpec{
					Parallelism:          ptr.To[int32](1),
					Completions:          ptr.To[int32](1),
					BackoffLimit:         ptr.To[int32](6),
					CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
					Suspend:              ptr.To(false),
					PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
					Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "6d1c7b2e"}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
							"batch.kubernetes.io/controller-uid": "6d1c7b2e", "batch.kubernetes.io/job-name": "pi",
							"controller-uid": "6d1c7b2e", "job-name": "pi",
						}},
						Spec: defaultedTemplateSpec(),
					},
				},
			},
		},
		{
			name: "manual selector, parallel work queue",
			job: batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "queue", UID: "1234", Labels: map[string]string{"team": "a"}},
				Spec: batchv1.JobSpec{
					Parallelism:      ptr.To[int32](3),
					ManualSelector:   ptr.To(true),
					Selector:         &metav1.LabelSelector{MatchLabels: map[string]string{"app": "q"}},
					Template:         template(map[string]string{"app": "q"}),
					PodFailurePolicy: &batchv1.PodFailurePolicy{},
				},
			},
			want: batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "queue", UID: "1234", Labels: map[string]string{"team": "a"}},
				Spec: batchv1.JobSpec{
					Parallelism:          ptr.To[int32](3),
					BackoffLimit:         ptr.To[int32](6),
					CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
					Suspend:              ptr.To(false),
					PodReplacementPolicy: ptr.To(batchv1.Failed),
					ManualSelector:       ptr.To(true),
					PodFailurePolicy:     &batchv1.PodFailurePolicy{},
					Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"app": "q"}},
					Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "q"}}, Spec: defaultedTemplateSpec()},
				},
			},
		},
		{
			name: "no uid yet: no selector",
			job:  batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi"}, Spec: batchv1.JobSpec{Completions: ptr.To[int32](5), BackoffLimitPerIndex: ptr.To[int32](1), Template: template(nil)}},
			want: batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "pi"},
				Spec: batchv1.JobSpec{
					Completions:          ptr.To[int32](5),
					Parallelism:          ptr.To[int32](1),
					BackoffLimitPerIndex: ptr.To[int32](1),
					BackoffLimit:         ptr.To[int32](2147483647),
					CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
					Suspend:              ptr.To(false),
					PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
					Template:             corev1.PodTemplateSpec{Spec: defaultedTemplateSpec()},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := tt.job.DeepCopy()
			Default(job)
			if diff := cmp.Diff(&tt.want, job); diff != "" {
				t.Errorf("defaulted Job differs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultService(t *testing.T) {
	port := func(p int32) []corev1.ServicePort { return []corev1.ServicePort{{Port: p}} }
	tests := []struct {
		name string
		spec corev1.ServiceSpec
		want corev1.ServiceSpec
	}{
		{
			name: "ClusterIP",
			spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: port(80)},
			want: corev1.ServiceSpec{
				Selector:              map[string]string{"app": "web"},
				Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
				Type:                  corev1.ServiceTypeClusterIP,
				SessionAffinity:       corev1.ServiceAffinityNone,
				InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
				IPFamilyPolicy:        ptr.To(corev1.IPFamilyPolicySingleStack),
				IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
			},
		},
		{
			name: "NodePort with named targetPort",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolUDP}}},
			want: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeNodePort,
				Selector:              map[string]string{"app": "web"},
				Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("http")}},
				SessionAffinity:       corev1.ServiceAffinityNone,
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
				InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
				IPFamilyPolicy:        ptr.To(corev1.IPFamilyPolicySingleStack),
				IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
			},
		},
		{
			name: "LoadBalancer with ClientIP affinity and a chosen clusterIP",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.20", Ports: port(443),
				SessionAffinity: corev1.ServiceAffinityClientIP},
			want: corev1.ServiceSpec{
				Type:                          corev1.ServiceTypeLoadBalancer,
				ClusterIP:                     "10.96.0.20",
				ClusterIPs:                    []string{"10.96.0.20"},
				Ports:                         []corev1.ServicePort{{Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(443)}},
				SessionAffinity:               corev1.ServiceAffinityClientIP,
				SessionAffinityConfig:         &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](10800)}},
				ExternalTrafficPolicy:         corev1.ServiceExternalTrafficPolicyCluster,
				InternalTrafficPolicy:         ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
				AllocateLoadBalancerNodePorts: ptr.To(true),
				IPFamilyPolicy:                ptr.To(corev1.IPFamilyPolicySingleStack),
				IPFamilies:                    []corev1.IPFamily{corev1.IPv4Protocol},
			},
		},
		{
			name: "headless without selector is dual-stack",
			spec: corev1.ServiceSpec{ClusterIP: "None"},
			want: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeClusterIP,
				ClusterIP:             "None",
				ClusterIPs:            []string{"None"},
				SessionAffinity:       corev1.ServiceAffinityNone,
				InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
				IPFamilyPolicy:        ptr.To(corev1.IPFamilyPolicyRequireDualStack),
				IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol},
			},
		},
		{
			name: "headless with selector",
			spec: corev1.ServiceSpec{ClusterIPs: []string{"None"}, Selector: map[string]string{"app": "db"}},
			want: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeClusterIP,
				ClusterIP:             "None",
				ClusterIPs:            []string{"None"},
				Selector:              map[string]string{"app": "db"},
				SessionAffinity:       corev1.ServiceAffinityNone,
				InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
				IPFamilyPolicy:        ptr.To(corev1.IPFamilyPolicySingleStack),
				IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
			},
		},
		{
			name: "IPv6 clusterIP picks its family",
			spec: corev1.ServiceSpec{ClusterIP: "fd00::10", Ports: port(80)},
			want: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeClusterIP,
				ClusterIP:             "fd00::10",
				ClusterIPs:            []string{"fd00::10"},
				Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
				SessionAffinity:       corev1.ServiceAffinityNone,
				InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
				IPFamilyPolicy:        ptr.To(corev1.IPFamilyPolicySingleStack),
				IPFamilies:            []corev1.IPFamily{corev1.IPv6Protocol},
			},
		},
		{
			name: "ExternalName gets no IP fields",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
			want: corev1.ServiceSpec{
				Type:            corev1.ServiceTypeExternalName,
				ExternalName:    "db.example.com",
				SessionAffinity: corev1.ServiceAffinityNone,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &corev1.Service{Spec: *tt.spec.DeepCopy()}
			Default(svc)
			if diff := cmp.Diff(tt.want, svc.Spec); diff != "" {
				t.Errorf("defaulted Service spec differs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultSmallKinds(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
		want runtime.Object
	}{
		{
			name: "Namespace gets its name label and starts Active",
			obj:  &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "a"}}},
			want: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "a", "kubernetes.io/metadata.name": "shop"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "Namespace with only generateName gets no label",
			obj:  &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}},
			want: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		},
		{
			name: "Secret is Opaque and stringData moves into data",
			obj: &corev1.Secret{
				Data:       map[string][]byte{"user": []byte("old"), "keep": []byte("k")},
				StringData: map[string]string{"user": "admin", "password": "s3cret"},
			},
			want: &corev1.Secret{
				Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{"user": []byte("admin"), "password": []byte("s3cret"), "keep": []byte("k")},
			},
		},
		{
			name: "ConfigMap data becomes an empty map",
			obj:  &corev1.ConfigMap{},
			want: &corev1.ConfigMap{Data: map[string]string{}},
		},
		{
			name: "Node allocatable copies capacity",
			obj: &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110"),
			}}},
			want: &corev1.Node{Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")},
			}},
		},
		{
			name: "Endpoints ports are TCP",
			obj:  &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}}}},
			want: &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}},
		},
		{
			name: "EndpointSlice port name and protocol",
			obj:  &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}}},
			want: &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Name: ptr.To(""), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](80)}}},
		},
		{
			name: "Lease has no defaults",
			obj:  &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
			want: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			Default(tt.obj)
			if diff := cmp.Diff(tt.want, tt.obj); diff != "" {
				t.Errorf("defaulted object differs (-want +got):\n%s", diff)
			}
		})
	}
}

// Default runs on every create and update, so running it on its own output
// must change nothing.
func TestDefaultIsIdempotent(t *testing.T) {
	objects := []runtime.Object{
		&corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "a", Image: "a",
			Ports:     []corev1.ContainerPort{{ContainerPort: 80}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}},
		&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: template(map[string]string{"a": "b"})}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", UID: "u"}, Spec: batchv1.JobSpec{Template: template(map[string]string{"a": "b"})}},
		&corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "None", Ports: []corev1.ServicePort{{Port: 53}}}},
		&corev1.Secret{StringData: map[string]string{"k": "v"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}},
	}
	for _, obj := range objects {
		t.Run(fmt.Sprintf("%T", obj), func(t *testing.T) {
			Default(obj)
			once := obj.DeepCopyObject()
			Default(obj)
			if diff := cmp.Diff(once, obj); diff != "" {
				t.Errorf("second Default changed the object (-first +second):\n%s", diff)
			}
		})
	}
}

// A v1 HPA gets upstream's one v1 default, minReplicas 1; the CPU target it
// leaves out is written down by the conversion to v2, not here.
func TestDefaultHPAV1(t *testing.T) {
	h := &autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3}}
	Default(h)
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas != 1 || h.Spec.TargetCPUUtilizationPercentage != nil {
		t.Errorf("defaulted v1 spec = %+v; want minReplicas 1 and no target", h.Spec)
	}
	h.Spec.MinReplicas = ptr.To[int32](2)
	Default(h)
	if *h.Spec.MinReplicas != 2 {
		t.Errorf("minReplicas %d overwritten", *h.Spec.MinReplicas)
	}
}
