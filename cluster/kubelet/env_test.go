package kubelet

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "beta", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "alpha"},
		{"x-$(A)-$(B)-y", "x-alpha-beta-y"},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$alpha"},
		{"$(EMPTY)!", "!"},
		{"$(A", "$(A"},
		{"cost: $5", "cost: $5"},
		{"trailing $", "trailing $"},
		{"$()", "$()"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := expand(tt.in, lookup); got != tt.want {
				t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestContainerEnv(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	ctx := context.Background()
	fx.client.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"},
		Data:       map[string]string{"mode": "fast", "level": "3", "1st": "x"},
	}, metav1.CreateOptions{})
	fx.client.CoreV1().Secrets("default").Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		Data:       map[string][]byte{"password": []byte("s3cret")},
	}, metav1.CreateOptions{})
	pod := testPod("web", appImage, func(p *v1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.ServiceAccountName = "default"
	})
	cmKey := func(name, key string, optional bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}
	}
	field := func(path string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}
	}
	tests := []struct {
		name    string
		c       v1.Container
		want    []cri.KeyValue
		wantErr string
	}{
		{
			name: "downward API",
			c: v1.Container{Env: []v1.EnvVar{
				{Name: "NAME", ValueFrom: field("metadata.name")}, {Name: "NS", ValueFrom: field("metadata.namespace")},
				{Name: "UID", ValueFrom: field("metadata.uid")}, {Name: "NODE", ValueFrom: field("spec.nodeName")},
				{Name: "HOST_IP", ValueFrom: field("status.hostIP")}, {Name: "POD_IP", ValueFrom: field("status.podIP")},
				{Name: "APP", ValueFrom: field("metadata.labels['app']")}, {Name: "SA", ValueFrom: field("spec.serviceAccountName")},
			}},
			want: []cri.KeyValue{
				{Key: "NAME", Value: "web"}, {Key: "NS", Value: "default"}, {Key: "UID", Value: "web-uid"}, {Key: "NODE", Value: testNode},
				{Key: "HOST_IP", Value: "10.0.0.1"}, {Key: "POD_IP", Value: "10.88.0.9"}, {Key: "APP", Value: "web"}, {Key: "SA", Value: "default"},
			},
		},
		{
			name: "ConfigMap and Secret keys, values referring to earlier ones",
			c: v1.Container{Env: []v1.EnvVar{
				{Name: "MODE", ValueFrom: cmKey("settings", "mode", false)},
				{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
				{Name: "URL", Value: "db://admin:$(PASSWORD)@db/$(MODE)"},
				{Name: "MODE", Value: "slow"},
			}},
			want: []cri.KeyValue{{Key: "MODE", Value: "slow"}, {Key: "PASSWORD", Value: "s3cret"}, {Key: "URL", Value: "db://admin:s3cret@db/fast"}},
		},
		{
			name: "envFrom skips keys that are no variable names, env overrides",
			c: v1.Container{
				EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}}},
				Env:     []v1.EnvVar{{Name: "mode", Value: "override"}},
			},
			want: []cri.KeyValue{{Key: "level", Value: "3"}, {Key: "mode", Value: "override"}},
		},
		{
			name: "envFrom prefix",
			c: v1.Container{
				EnvFrom: []v1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}}},
			},
			want: []cri.KeyValue{{Key: "CFG_1st", Value: "x"}, {Key: "CFG_level", Value: "3"}, {Key: "CFG_mode", Value: "fast"}},
		},
		{
			name: "optional missing keys are left out",
			c: v1.Container{Env: []v1.EnvVar{
				{Name: "A", ValueFrom: cmKey("settings", "nope", true)}, {Name: "B", ValueFrom: cmKey("nope", "mode", true)},
			}},
			want: []cri.KeyValue{},
		},
		{
			name: "resource limits in units of the divisor",
			c: v1.Container{
				Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("64Mi")}},
				Env: []v1.EnvVar{
					{Name: "CPU", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
					{Name: "MEM_MI", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
				},
			},
			want: []cri.KeyValue{{Key: "CPU", Value: "2"}, {Key: "MEM_MI", Value: "64"}},
		},
		{
			name:    "missing ConfigMap",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "A", ValueFrom: cmKey("nope", "mode", false)}}},
			wantErr: `configmap "nope" not found`,
		},
		{
			name:    "missing key",
			c:       v1.Container{Env: []v1.EnvVar{{Name: "A", ValueFrom: cmKey("settings", "nope", false)}}},
			wantErr: "couldn't find key nope in ConfigMap default/settings",
		},
		{
			name:    "missing Secret",
			c:       v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}}}},
			wantErr: `secret "nope" not found`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := fx.k.containerEnv(ctx, pod, &tt.c, "10.88.0.9")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, env.list()); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigErrorIsWaitingReason: a missing ConfigMap keeps the container
// in CreateContainerConfigError until it appears.
func TestConfigErrorIsWaitingReason(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	pod := fx.create(testPod("web", appImage, func(p *v1.Pod) {
		p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "later"}}}}
	}))
	w := &podWorker{}
	fx.sync(w, pod)
	cs := fx.container(pod)
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonCreateContainerConfig || cs.State.Waiting.Message != `configmap "later" not found` {
		t.Fatalf("state = %+v", cs.State)
	}
	if events := fx.drain(); !hasEvent(events, `Warning Failed Error: configmap "later" not found`) {
		t.Errorf("events = %v", events)
	}
	fx.client.CoreV1().ConfigMaps("default").Create(context.Background(), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "default"}}, metav1.CreateOptions{})
	fx.sync(w, pod)
	if cs := fx.container(pod); cs.State.Running == nil {
		t.Errorf("state after the ConfigMap appeared = %+v", cs.State)
	}
}
