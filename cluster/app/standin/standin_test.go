package standin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		image string
		want  string // "" when klab has no stand-in
	}{
		{"nginx", "nginx"},
		{"nginx:1.27-alpine", "nginx"},
		{"docker.io/library/nginx:latest", "nginx"},
		{"library/httpd:2.4", "httpd"},
		{"busybox@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "busybox"},
		{"alpine:3.20", "alpine"},
		{"ubuntu", "ubuntu"},
		{"bitnami/nginx", ""},
		{"quay.io/nginx", ""},
		{"127.0.0.1:5000/busybox", ""},
		{"redis", ""},
		{"klab/app:v1", ""},
		{"NGINX", ""}, // not a valid reference
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			img, ok := Lookup(tt.image)
			if got := img.Name; got != tt.want || ok != (tt.want != "") {
				t.Errorf("Lookup(%q) = %q, %v; want %q", tt.image, got, ok, tt.want)
			}
		})
	}
}

func TestProcess(t *testing.T) {
	tests := []struct {
		image         string
		command, args []string
		want          Process
	}{
		{"nginx", nil, nil, Process{Web: true}},
		{"nginx", []string{"nginx"}, []string{"-g", "daemon off;"}, Process{Web: true}},
		{"nginx", nil, []string{"nginx-debug", "-g", "daemon off;"}, Process{Web: true}},
		{"nginx", nil, []string{"sh", "-c", "echo hi"}, Process{Argv: []string{"sh", "-c", "echo hi"}}},
		{"httpd", nil, nil, Process{Web: true}},
		{"httpd", []string{"/usr/local/bin/httpd-foreground"}, nil, Process{Web: true}},
		{"busybox", nil, nil, Process{Argv: []string{"sh"}}},
		{"busybox", nil, []string{"sleep", "3600"}, Process{Argv: []string{"sleep", "3600"}}},
		{"busybox", []string{"sh", "-c"}, []string{"while true; do echo hi; sleep 1; done"}, Process{Argv: []string{"sh", "-c", "while true; do echo hi; sleep 1; done"}}},
		{"alpine", nil, nil, Process{Argv: []string{"/bin/sh"}}},
		{"ubuntu", nil, nil, Process{Argv: []string{"sh"}}},
		{"ubuntu", []string{"/bin/bash", "-c", "echo x"}, nil, Process{Argv: []string{"sh", "-c", "echo x"}}},
	}
	for _, tt := range tests {
		img, _ := Lookup(tt.image)
		if diff := cmp.Diff(tt.want, img.Process(tt.command, tt.args)); diff != "" {
			t.Errorf("%s command %q args %q (-want +got):\n%s", tt.image, tt.command, tt.args, diff)
		}
	}
}
