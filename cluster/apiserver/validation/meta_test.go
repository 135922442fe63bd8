package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestObjectMetaOnCreate(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
		want []string
	}{
		{
			name: "name missing",
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}},
			want: []string{`metadata.name: Required value: name or generateName is required`},
		},
		{
			name: "upper-case name",
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Web", Namespace: "default"}},
			want: []string{`metadata.name: Invalid value: "Web": ` + dnsSubdomainMsg},
		},
		{
			name: "name too long",
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 254), Namespace: "default"}},
			want: []string{`metadata.name: Invalid value: "` + strings.Repeat("a", 254) + `": must be no more than 253 characters`},
		},
		{
			name: "generateName may end in a dash",
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Name: "web-x7k2p", Namespace: "default"}},
		},
		{
			name: "bad generateName",
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "Web-", Name: "web-x7k2p", Namespace: "default"}},
			want: []string{`metadata.generateName: Invalid value: "Web-": ` + dnsSubdomainMsg},
		},
		{
			name: "namespace missing on a namespaced kind",
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}},
			want: []string{`metadata.namespace: Required value`},
		},
		{
			name: "namespace on a cluster-scoped kind",
			obj:  &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Namespace: "default"}},
			want: []string{`metadata.namespace: Forbidden: not allowed on this type`},
		},
		{
			name: "namespace names are DNS labels",
			obj:  &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team.a"}},
			want: []string{`metadata.name: Invalid value: "team.a": must not contain dots`},
		},
		{
			name: "service names start with a letter",
			obj:  validService(func(s *corev1.Service) { s.Name = "1web" }),
			want: []string{`metadata.name: Invalid value: "1web": ` + dns1035Msg},
		},
		{
			name: "bad label value",
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default", Labels: map[string]string{"app": "my app"}}},
			want: []string{`metadata.labels: Invalid value: "my app": ` + labelValueMsg},
		},
		{
			name: "bad label key",
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default", Labels: map[string]string{"-app": "web"}}},
			want: []string{`metadata.labels: Invalid value: "-app": ` + labelKeyNameMsg},
		},
		{
			name: "finalizer without a domain",
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default", Finalizers: []string{"cleanup"}}},
			want: []string{`metadata.finalizers[0]: Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified`},
		},
		{
			name: "standard finalizers",
			obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default",
				Finalizers: []string{"kubernetes", "foregroundDeletion", "example.com/cleanup"}}},
		},
		{
			name: "annotations over 256 KiB",
			obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default",
				Annotations: map[string]string{"big": strings.Repeat("x", 256*1024)}}},
			want: []string{`metadata.annotations: Too long: may not be more than 262144 bytes`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, ValidateCreate(tt.obj), tt.want...)
		})
	}
}

func TestObjectMetaOnUpdate(t *testing.T) {
	old := &corev1.ConfigMap{ObjectMeta: objectMeta("cfg"), Data: map[string]string{"a": "b"}}
	tests := []struct {
		name   string
		mutate func(*corev1.ConfigMap)
		want   []string
	}{
		{name: "labels may change", mutate: func(c *corev1.ConfigMap) { c.Labels = map[string]string{"tier": "backend"} }},
		{
			name:   "name is immutable",
			mutate: func(c *corev1.ConfigMap) { c.Name = "other" },
			want:   []string{`metadata.name: Invalid value: "other": field is immutable`},
		},
		{
			name:   "resourceVersion is needed",
			mutate: func(c *corev1.ConfigMap) { c.ResourceVersion = "" },
			want:   []string{`metadata.resourceVersion: Invalid value: "": must be specified for an update`},
		},
		{
			// Upstream checks the new metadata as an update and again as an
			// object, so the first error comes twice there too.
			name:   "generation may not go down",
			mutate: func(c *corev1.ConfigMap) { c.Generation = -1 },
			want: []string{
				`metadata.generation: Invalid value: -1: must be greater than or equal to 0`,
				`metadata.generation: Invalid value: -1: must be greater than or equal to 0`,
				`metadata.generation: Invalid value: -1: must not be decremented`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := old.DeepCopy()
			tt.mutate(cm)
			checkErrors(t, ValidateUpdate(cm, old), tt.want...)
		})
	}
}
