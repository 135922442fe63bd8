package docker

import (
	"archive/tar"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestBuildContext(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "klab")
	if err := os.WriteFile(binary, []byte("\x7fELF binary"), 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		binary string
		want   map[string]int64 // file name → mode
	}{
		{"node image", binary, map[string]int64{"Dockerfile": 0o644, binaryInContext: 0o755}},
		{"app image", "", map[string]int64{"Dockerfile": 0o644}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newBuildContext(nodeDockerfile(), tt.binary, nil)
			defer rc.Close()
			tr := tar.NewReader(rc)
			got := map[string]int64{}
			for {
				h, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got[h.Name] = h.Mode
				b, _ := io.ReadAll(tr)
				switch h.Name {
				case "Dockerfile":
					if string(b) != nodeDockerfile() {
						t.Errorf("Dockerfile = %q", b)
					}
				case binaryInContext:
					if string(b) != "\x7fELF binary" {
						t.Errorf("binary = %q", b)
					}
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("context holds %v, want %v", got, tt.want)
			}
			for name, mode := range tt.want {
				if got[name] != mode {
					t.Errorf("%s: mode %o, want %o", name, got[name], mode)
				}
			}
		})
	}

	t.Run("missing binary", func(t *testing.T) {
		rc := newBuildContext(nodeDockerfile(), filepath.Join(t.TempDir(), "gone"), nil)
		defer rc.Close()
		if _, err := io.ReadAll(rc); err == nil || !contains(err.Error(), "read the klab binary") {
			t.Errorf("reading the context: %v, want an error about the binary", err)
		}
	})
}

func TestDockerfiles(t *testing.T) {
	node := nodeDockerfile()
	for _, want := range []string{"FROM scratch\n", "COPY klab /klab\n", `ENTRYPOINT ["/klab", "component"]`} {
		if !contains(node, want) {
			t.Errorf("node Dockerfile lacks %q:\n%s", want, node)
		}
	}
	app := appDockerfile("klab/node:abc")
	for _, want := range []string{"FROM klab/node:abc\n", `ENTRYPOINT ["/klab", "component", "app"]`} {
		if !contains(app, want) {
			t.Errorf("app Dockerfile lacks %q:\n%s", want, app)
		}
	}
}

func TestReadBuildOutput(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	tests := []struct {
		name    string
		output  string
		wantErr string // "" = success
	}{
		{"success", `{"stream":"Step 1/3 : FROM scratch\n"}{"stream":" ---\u003e \n"}{"aux":{"ID":"sha256:abc"}}{"stream":"Successfully built abc\n"}`, ""},
		{"error detail", `{"stream":"Step 2/3 : COPY klab /klab\n"}{"errorDetail":{"message":"COPY failed: file not found"},"error":"COPY failed: file not found"}`, "COPY failed: file not found"},
		{"old error form", `{"error":"no space left on device"}`, "no space left on device"},
		{"truncated", `{"stream":"Step 1/3`, "read the engine's build output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := readBuildOutput(strings.NewReader(tt.output), logger)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("error = %v", err)
				}
				return
			}
			if err == nil || !contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	err := readBuildOutput(strings.NewReader(`{"stream":"Step 2/3 : COPY klab /klab\n"}{"error":"boom"}`), logger)
	if err == nil || !contains(err.Error(), "Step 2/3") {
		t.Errorf("error = %v, want it to say which step failed", err)
	}
}
