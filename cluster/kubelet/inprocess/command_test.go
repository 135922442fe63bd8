package inprocess

import (
	"slices"
	"strings"
	"testing"
)

func TestAppArgs(t *testing.T) {
	app := imageRef{AppRepository, "v1"}
	node := imageRef{NodeRepository, "dev"}
	tests := []struct {
		name          string
		image         imageRef
		command, args []string
		want          []string
		wantErr       string
	}{
		{name: "entrypoint with args", image: app, args: []string{"--exit-after=5s"}, want: []string{"--exit-after=5s"}},
		{name: "entrypoint alone", image: app, want: []string{}},
		{name: "app named as the command", image: app, command: []string{"/app", "--port=9090"}, args: []string{"--message=x"},
			want: []string{"--port=9090", "--message=x"}},
		{name: "klab component app", image: app, command: []string{"klab", "component", "app"}, args: []string{"--crash-after=1s"},
			want: []string{"--crash-after=1s"}},
		{name: "node image runs the app as a component", image: node, command: []string{"/klab", "component", "app"},
			want: []string{}},
		{name: "node image args after its entrypoint", image: node, args: []string{"component", "app", "--port=1"},
			want: []string{"--port=1"}},
		{name: "a shell", image: app, command: []string{"sh", "-c", "echo hi"},
			wantErr: `exec: "sh": executable file not found in $PATH: image klab/app:v1 holds only the klab app`},
		{name: "busybox habits", image: app, command: []string{"sleep", "3600"}, wantErr: `exec: "sleep"`},
		{name: "node image alone", image: node, wantErr: `a pod's container can run only the app`},
		{name: "another klab role", image: node, args: []string{"component", "etcd"}, wantErr: `["klab" "component" "etcd"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appArgs(tt.image, tt.command, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("appArgs = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "unable to start container process: ") {
					t.Errorf("error %q does not read like a runtime's start error", err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("appArgs = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
