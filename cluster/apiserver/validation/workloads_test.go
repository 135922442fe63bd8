package validation

import (
	"testing"

	"github.com/klab-dev/klab/cluster/apiserver/defaults"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestDeploymentCreate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []string
	}{
		{name: "valid", mutate: func(*appsv1.Deployment) {}},
		{
			name:   "no selector",
			mutate: func(d *appsv1.Deployment) { d.Spec.Selector = nil },
			want: []string{
				`spec.selector: Required value`,
				"spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
			},
		},
		{
			name:   "empty selector",
			mutate: func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} },
			want:   []string{`spec.selector: Invalid value: {}: empty selector is invalid for deployment`},
		},
		{
			name:   "selector does not match the template",
			mutate: func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "api"} },
			want:   []string{"spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels`"},
		},
		{
			name: "bad selector operator",
			mutate: func(d *appsv1.Deployment) {
				d.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Is", Values: []string{"x"}}}
			},
			want: []string{
				`spec.selector.matchExpressions[0].operator: Invalid value: "Is": not a valid selector operator`,
				`spec.selector: Invalid value: {"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"Is","values":["x"]}]}: invalid label selector`,
			},
		},
		{
			name:   "negative replicas",
			mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](-1) },
			want:   []string{`spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
		},
		{
			name:   "Pods must run for ever",
			mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			want:   []string{`spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`},
		},
		{
			name:   "no deadline for a ReplicaSet's Pods",
			mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) },
			want:   []string{`spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported`},
		},
		{
			name:   "the template's Pod is validated",
			mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" },
			want:   []string{`spec.template.spec.containers[0].image: Required value`},
		},
		{
			name: "rollout that cannot progress",
			mutate: func(d *appsv1.Deployment) {
				d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromString("0%")),
				}
			},
			want: []string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"},
		},
		{
			name: "bad percentages",
			mutate: func(d *appsv1.Deployment) {
				d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromString("150%")), MaxSurge: ptr.To(intstr.FromString("half")),
				}
			},
			want: []string{
				`spec.strategy.rollingUpdate.maxSurge: Invalid value: "half": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')`,
				`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%`,
			},
		},
		{
			name: "Recreate takes no rollingUpdate",
			mutate: func(d *appsv1.Deployment) {
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
			},
			want: []string{"spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"},
		},
		{
			name:   "progress deadline below minReadySeconds",
			mutate: func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 },
			want:   []string{`spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, ValidateCreate(validDeployment(tt.mutate)), tt.want...)
		})
	}
}

func TestDeploymentUpdate(t *testing.T) {
	old := validDeployment()
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []string
	}{
		{name: "scale", mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }},
		{name: "new image", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" }},
		{
			name: "selector is immutable in apps/v1",
			mutate: func(d *appsv1.Deployment) {
				d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "track": "stable"}}
				d.Spec.Template.Labels = map[string]string{"app": "web", "track": "stable"}
			},
			want: []string{`spec.selector: Invalid value: {"matchLabels":{"app":"web","track":"stable"}}: field is immutable`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := old.DeepCopy()
			tt.mutate(d)
			defaults.Default(d)
			checkErrors(t, ValidateUpdate(d, old), tt.want...)
		})
	}
}

func TestWorkloadStatusUpdates(t *testing.T) {
	d := validDeployment()
	newD := d.DeepCopy()
	newD.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 3, AvailableReplicas: 3, UpdatedReplicas: -1}
	checkErrors(t, ValidateStatusUpdate(newD, d),
		`status.updatedReplicas: Invalid value: -1: must be greater than or equal to 0`,
		`status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas`,
		`status.availableReplicas: Invalid value: 3: cannot be greater than status.replicas`,
	)

	d.Status.CollisionCount = ptr.To[int32](2)
	newD = d.DeepCopy()
	newD.Status.CollisionCount = ptr.To[int32](1)
	checkErrors(t, ValidateStatusUpdate(newD, d), `status.collisionCount: Invalid value: 1: cannot be decremented`)

	rs := &appsv1.ReplicaSet{ObjectMeta: objectMeta("web-1"), Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: webLabels}, Template: podTemplate(webLabels)}}
	defaults.Default(rs)
	newRS := rs.DeepCopy()
	newRS.Status = appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2, AvailableReplicas: 3}
	checkErrors(t, ValidateStatusUpdate(newRS, rs), `status.availableReplicas: Invalid value: 3: cannot be greater than readyReplicas`)
}

func TestReplicaSet(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: objectMeta("web-1"), Spec: appsv1.ReplicaSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: webLabels}, Template: podTemplate(map[string]string{"app": "api"}),
	}}
	rs.Spec.MinReadySeconds = -5
	defaults.Default(rs)
	checkErrors(t, ValidateCreate(rs),
		`spec.minReadySeconds: Invalid value: -5: must be greater than or equal to 0`,
		"spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels`",
	)

	fixed := rs.DeepCopy()
	fixed.Spec.MinReadySeconds = 0
	fixed.Spec.Template.Labels = webLabels
	changed := fixed.DeepCopy()
	changed.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "v": "2"}}
	changed.Spec.Template.Labels = map[string]string{"app": "web", "v": "2"}
	checkErrors(t, ValidateUpdate(changed, fixed), `spec.selector: Invalid value: {"matchLabels":{"app":"web","v":"2"}}: field is immutable`)
}

func TestDaemonSet(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.DaemonSet)
		want   []string
	}{
		{name: "valid", mutate: func(*appsv1.DaemonSet) {}},
		{name: "surge instead of unavailable", mutate: func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))}
		}},
		{
			name: "both surge and unavailable",
			mutate: func(ds *appsv1.DaemonSet) {
				ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromString("10%"))}
			},
			want: []string{`spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "10%": may not be set when maxUnavailable is non-zero`},
		},
		{
			name: "neither",
			mutate: func(ds *appsv1.DaemonSet) {
				ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(0))}
			},
			want: []string{`spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0`},
		},
		{
			name:   "empty selector",
			mutate: func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} },
			want:   []string{`spec.selector: Invalid value: {}: empty selector is invalid for daemonset`},
		},
		{
			name:   "no deadline",
			mutate: func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](1) },
			want:   []string{`spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := &appsv1.DaemonSet{ObjectMeta: objectMeta("agent"), Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: webLabels}, Template: podTemplate(webLabels),
			}}
			tt.mutate(ds)
			defaults.Default(ds)
			checkErrors(t, ValidateCreate(ds), tt.want...)
		})
	}
}
