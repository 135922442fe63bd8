package app

import "testing"

func TestImageTag(t *testing.T) {
	tests := []struct{ image, want string }{
		{"klab/app:v2", "v2"},
		{"klab/app", "latest"},
		{"localhost:5000/klab/app", "latest"},
		{"localhost:5000/klab/app:1.2", "1.2"},
		{"klab/app:v1@sha256:abc", "v1"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			if got := imageTag(tt.image); got != tt.want {
				t.Errorf("imageTag(%q) = %q, want %q", tt.image, got, tt.want)
			}
		})
	}
}

func TestIdentityFrom(t *testing.T) {
	tests := []struct {
		name       string
		env        []string
		listenHost string
		want       identity
	}{
		{
			name: "downward API variables",
			env: []string{"POD_NAME=web-1", "POD_NAMESPACE=shop", "NODE_NAME=worker-2", "POD_IP=127.250.1.5",
				"KLAB_IMAGE=klab/app:v2", "HOSTNAME=other"},
			listenHost: "127.250.1.9",
			want:       identity{Pod: "web-1", Namespace: "shop", Node: "worker-2", PodIP: "127.250.1.5", Image: "klab/app:v2", Version: "v2"},
		},
		{
			name:       "falls back to HOSTNAME and the listen address",
			env:        []string{"HOSTNAME=web-2", "KLAB_IMAGE=klab/app"},
			listenHost: "127.250.1.9",
			want:       identity{Pod: "web-2", PodIP: "127.250.1.9", Image: "klab/app", Version: "latest"},
		},
		{
			name:       "every address is no pod IP",
			env:        nil,
			listenHost: "0.0.0.0",
			want:       identity{},
		},
		{
			name: "last repeated variable wins",
			env:  []string{"POD_NAME=first", "POD_NAME=second", "junk"},
			want: identity{Pod: "second"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := identityFrom(envMap(tt.env), tt.listenHost); got != tt.want {
				t.Errorf("identity = %+v, want %+v", got, tt.want)
			}
		})
	}
}
