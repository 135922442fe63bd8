package inprocess

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

func TestParseImage(t *testing.T) {
	tests := []struct {
		image string
		want  imageRef
		ok    bool
	}{
		{"klab/app", imageRef{AppRepository, "latest"}, true},
		{"klab/app:v2", imageRef{AppRepository, "v2"}, true},
		{"docker.io/klab/app:v2", imageRef{AppRepository, "v2"}, true},
		{"klab/node:0123abc", imageRef{NodeRepository, "0123abc"}, true},
		{"klab/app:", imageRef{}, false},
		{"klab/app@sha256:0000", imageRef{}, false},
		{"nginx:1.27", imageRef{}, false},
		{"busybox", imageRef{}, false},
		{"ghcr.io/klab/app:v1", imageRef{}, false},
		{"klab/application:v1", imageRef{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got, ok := parseImage(tt.image)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseImage(%q) = %v, %v; want %v, %v", tt.image, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestImagePolicy(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	tests := []struct {
		image   string
		wantID  string
		wantErr bool
	}{
		{image: "klab/app:v1", wantID: imageID(AppRepository)},
		{image: "klab/app:v2", wantID: imageID(AppRepository)},
		{image: "klab/node:dev", wantID: imageID(NodeRepository)},
		{image: "nginx:1.27", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			for name, call := range map[string]func(context.Context, string) (cri.Image, error){
				"ImageStatus": rt.ImageStatus, "PullImage": rt.PullImage,
			} {
				img, err := call(ctx, tt.image)
				if tt.wantErr {
					if !errors.Is(err, cri.ErrImageNotFound) {
						t.Fatalf("%s(%q) = %v, want ErrImageNotFound", name, tt.image, err)
					}
					for _, want := range []string{`"nginx:1.27"`, "klab runs offline", "klab/app:<any tag>", "klab/node:<any tag>"} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("%s error %q does not say %q", name, err, want)
						}
					}
					continue
				}
				if err != nil || img.ID != tt.wantID || !slices.Equal(img.Names, []string{tt.image}) {
					t.Errorf("%s(%q) = %+v, %v", name, tt.image, img, err)
				}
			}
		})
	}
	images, err := rt.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, img := range images {
		names = append(names, img.Names...)
	}
	want := []string{"klab/app:latest", "klab/app:v1", "klab/app:v2", "klab/node:latest", "klab/node:dev"}
	if !slices.Equal(names, want) {
		t.Errorf("ListImages names = %v, want %v", names, want)
	}
}
