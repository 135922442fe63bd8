package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func validControllerRevision(mutate ...func(*appsv1.ControllerRevision)) *appsv1.ControllerRevision {
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "web-6bd6fd695c", Namespace: "default", ResourceVersion: "1"},
		Data:       runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}}`)},
		Revision:   1,
	}
	for _, m := range mutate {
		m(cr)
	}
	return cr
}

func TestControllerRevisionCreate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.ControllerRevision)
		want   []string
	}{
		{name: "valid", mutate: func(*appsv1.ControllerRevision) {}},
		{name: "no data", mutate: func(cr *appsv1.ControllerRevision) { cr.Data = runtime.RawExtension{} },
			want: []string{`data: Required value: data is mandatory`}},
		{name: "null data", mutate: func(cr *appsv1.ControllerRevision) { cr.Data = runtime.RawExtension{Raw: []byte("null")} },
			want: []string{`data: Required value: data is mandatory`}},
		{name: "negative revision", mutate: func(cr *appsv1.ControllerRevision) { cr.Revision = -1 },
			want: []string{`revision: Invalid value: -1: must be greater than or equal to 0`}},
		{name: "name not a DNS subdomain", mutate: func(cr *appsv1.ControllerRevision) { cr.Name = "Web_1" },
			want: []string{`metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, ValidateCreate(validControllerRevision(tt.mutate)), tt.want...)
		})
	}
}

func TestControllerRevisionUpdate(t *testing.T) {
	old := validControllerRevision()
	tests := []struct {
		name   string
		mutate func(*appsv1.ControllerRevision)
		want   []string
	}{
		{name: "a rollback renumbers it", mutate: func(cr *appsv1.ControllerRevision) { cr.Revision = 4 }},
		{name: "the same data, formatted otherwise", mutate: func(cr *appsv1.ControllerRevision) {
			cr.Data.Raw = []byte(`{ "spec": {"template": {"spec": {"containers": [{"image": "nginx:1.27", "name": "nginx"}]}, "$patch": "replace"}}}`)
		}},
		{name: "data is immutable", mutate: func(cr *appsv1.ControllerRevision) {
			cr.Data.Raw = []byte(`{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}}`)
		}, want: []string{`data: Invalid value: {"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}}: field is immutable`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, ValidateUpdate(validControllerRevision(tt.mutate), old), tt.want...)
		})
	}
}
