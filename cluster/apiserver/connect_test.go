package apiserver

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStreamParams(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		exec    bool
		want    url.Values
		wantErr string
	}{
		{name: "exec -it", query: "command=sh&stdin=true&stdout=true&tty=true&container=app", exec: true,
			want: url.Values{"input": {"1"}, "output": {"1"}, "tty": {"1"}, "command": {"sh"}}},
		{name: "exec keeps the command's words", query: "command=sh&command=-c&command=echo+hi&stdout=1&stderr=1", exec: true,
			want: url.Values{"output": {"1"}, "error": {"1"}, "command": {"sh", "-c", "echo hi"}}},
		{name: "attach needs no command", query: "stdout=true", want: url.Values{"output": {"1"}}},
		{name: "no stream", query: "command=ls&tty=true", exec: true, wantErr: "you must specify at least 1 of stdin, stdout, stderr"},
		{name: "no command", query: "stdout=true", exec: true, wantErr: "command: Required value"},
		{name: "bad flag", query: "stdout=maybe", wantErr: `stdout: Invalid value: "maybe": must be true or false`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got := url.Values{}
			err = streamParams(got, q, tc.exec)
			if tc.wantErr != "" {
				if !apierrors.IsBadRequest(err) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want BadRequest %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("kubelet query (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodContainer(t *testing.T) {
	one := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	two := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "app"}, {Name: "sidecar"}},
	}}
	tests := []struct {
		name, container string
		pod             *corev1.Pod
		want, wantErr   string
	}{
		{name: "the only container", pod: one, want: "app"},
		{name: "named", pod: two, container: "sidecar", want: "sidecar"},
		{name: "an init container", pod: two, container: "init", want: "init"},
		{name: "missing", pod: one, container: "nosuch", wantErr: "container nosuch is not valid for pod web"},
		{name: "ambiguous", pod: two, wantErr: "a container name must be specified for pod web, choose one of: [app sidecar] or one of the init containers: [init]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podContainer(tc.pod, tc.container)
			if tc.wantErr != "" {
				if !apierrors.IsBadRequest(err) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want BadRequest %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("podContainer = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestPodLogOptions(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		want    url.Values
		wantErr string
	}{
		{name: "kubectl logs -f --tail", query: "follow=true&tailLines=10&container=app",
			want: url.Values{"follow": {"true"}, "tailLines": {"10"}, "container": {"app"}}},
		{name: "unknown parameters stay here", query: "previous=true&x=/etc/passwd",
			want: url.Values{"previous": {"true"}}},
		{name: "negative tail", query: "tailLines=-1",
			wantErr: `PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0`},
		{name: "zero limit", query: "limitBytes=0",
			wantErr: `PodLogOptions "web" is invalid: limitBytes: Invalid value: 0: must be greater than 0`},
		{name: "both since", query: "sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z",
			wantErr: "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{name: "since zero", query: "sinceSeconds=0",
			wantErr: `PodLogOptions "web" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0`},
		{name: "not a number", query: "tailLines=ten", wantErr: "ten"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := podLogOptions(q, "web")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)) {
					t.Fatalf("err = %v, want Invalid or BadRequest with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("kubelet query (-want +got):\n%s", diff)
			}
		})
	}
}
