package lab

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
)

func TestSpecValidate(t *testing.T) {
	ok := Spec{Name: "demo", Masters: 3, Speed: 1, Runtime: RuntimeAuto}
	tests := []struct {
		name    string
		mutate  func(*Spec)
		wantKey string // "" means valid
		wantIn  string // a fragment the English message must contain
	}{
		{"default shape", func(*Spec) {}, "", ""},
		{"one master", func(s *Spec) { s.Masters = 1 }, "", ""},
		{"two masters are allowed, to show why they do not help", func(s *Spec) { s.Masters = 2 }, "", ""},
		{"seven masters", func(s *Spec) { s.Masters = MaxMasters }, "", ""},
		{"local runtime", func(s *Spec) { s.Runtime = RuntimeLocal }, "", ""},
		{"docker runtime is a valid spec", func(s *Spec) { s.Runtime = RuntimeDocker }, "", ""},
		{"no masters", func(s *Spec) { s.Masters = 0 }, "spec.err.masters", "--masters must be between 1 and 7, not 0"},
		{"too many masters", func(s *Spec) { s.Masters = 8 }, "spec.err.masters", "not 8"},
		{"negative workers", func(s *Spec) { s.Workers = -1 }, "spec.err.workers", "--workers"},
		{"zero speed", func(s *Spec) { s.Speed = 0 }, "spec.err.speed", "--speed must be greater than 0"},
		{"huge speed", func(s *Spec) { s.Speed = 1000 }, "spec.err.speed", "not 1000"},
		{"unknown runtime", func(s *Spec) { s.Runtime = "podman" }, "spec.err.runtime", `not "podman"`},
		{"empty name", func(s *Spec) { s.Name = "" }, "spec.err.name-empty", "empty"},
		{"upper case name", func(s *Spec) { s.Name = "Demo" }, "spec.err.name-chars", `"Demo"`},
		{"name with slash", func(s *Spec) { s.Name = "../etc" }, "spec.err.name-chars", "lowercase"},
		{"name starting with a digit", func(s *Spec) { s.Name = "1lab" }, "spec.err.name-chars", ""},
		{"name ending with a dash", func(s *Spec) { s.Name = "lab-" }, "spec.err.name-chars", ""},
		{"name with underscore", func(s *Spec) { s.Name = "my_lab" }, "spec.err.name-chars", ""},
		{"long name", func(s *Spec) { s.Name = strings.Repeat("a", 64) }, "spec.err.name-long", "63"},
		{"dashes inside", func(s *Spec) { s.Name = "my-lab-2" }, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.mutate(&s)
			err := s.Validate()
			if tt.wantKey == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, &i18n.Error{Key: tt.wantKey}) {
				t.Fatalf("Validate() = %v, want an error with key %s", err, tt.wantKey)
			}
			if msg := i18n.Localize(err, i18n.English); !strings.Contains(msg, tt.wantIn) {
				t.Errorf("message %q does not contain %q", msg, tt.wantIn)
			}
		})
	}
}

func TestDefaultClusterName(t *testing.T) {
	t.Setenv("KLAB_CLUSTER", "")
	if got := DefaultClusterName(); got != "klab" {
		t.Errorf("default = %q, want klab", got)
	}
	t.Setenv("KLAB_CLUSTER", "class-a")
	if got := DefaultClusterName(); got != "class-a" {
		t.Errorf("with KLAB_CLUSTER = %q, want class-a", got)
	}
	if got := DefaultSpec().Name; got != "class-a" {
		t.Errorf("DefaultSpec().Name = %q, want class-a", got)
	}
}

func TestResolveRuntime(t *testing.T) {
	ctx := context.Background()
	if got, err := resolveRuntime(ctx, RuntimeLocal); err != nil || got != RuntimeLocal {
		t.Errorf("local = %q, %v; want local", got, err)
	}
	// An engine that does not answer: auto falls back, saying why, and
	// docker refuses.
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	got, why, err := ResolveRuntime(ctx, RuntimeAuto)
	if err != nil || got != RuntimeLocal || why == nil {
		t.Errorf("auto without an engine = %q, %v, %v; want local with a reason", got, why, err)
	}
	if _, err := resolveRuntime(ctx, RuntimeDocker); !errors.Is(err, ErrDockerUnavailable) {
		t.Errorf("docker without an engine = %v, want ErrDockerUnavailable", err)
	}
	if _, err := resolveRuntime(ctx, "podman"); err == nil {
		t.Error("podman: want an error")
	}
}
