package docker

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
)

// tinyStaticBinary builds a small static linux program for the machine's
// architecture, standing in for klab where only the file's form matters.
func tinyStaticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tiny\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tiny")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goruntime.GOARCH, "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build a static test binary: %v\n%s", err, b)
	}
	return out
}

// dynamicBinary returns a dynamically linked ELF executable of the system,
// or skips.
func dynamicBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/bin/true", "/usr/bin/true", "/bin/ls"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				return p
			}
		}
	}
	t.Skip("no dynamically linked ELF executable on this system to test with")
	return ""
}

func TestCheckBinary(t *testing.T) {
	static := tinyStaticBinary(t)
	text := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := "arm64"
	if goruntime.GOARCH == "arm64" {
		other = "amd64"
	}
	tests := []struct {
		name    string
		path    func(t *testing.T) string
		arch    string
		wantErr string // "" = no error
	}{
		{"static for the engine's arch", func(*testing.T) string { return static }, goruntime.GOARCH, ""},
		{"static for another arch", func(*testing.T) string { return static }, other, "the Docker engine runs on " + other},
		{"dynamically linked", dynamicBinary, goruntime.GOARCH, "dynamically linked"},
		{"not ELF", func(*testing.T) string { return text }, goruntime.GOARCH, "is not a Linux executable"},
		{"missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nothing") }, goruntime.GOARCH, "read the klab binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkBinary(tt.path(t), tt.arch)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkBinary: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("checkBinary error = %v, want one containing %q", err, tt.wantErr)
			}
			if tt.name != "missing" && (!errors.Is(err, ErrUnusableBinary) || !strings.Contains(err.Error(), "make image")) {
				t.Errorf("error %q does not wrap ErrUnusableBinary and tell the user to run make image", err)
			}
		})
	}
}

func TestBinaryBuildID(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("one"), 0o755)
	os.WriteFile(b, []byte("two"), 0o755)
	idA, err := binaryBuildID(a)
	if err != nil {
		t.Fatal(err)
	}
	idA2, _ := binaryBuildID(a)
	idB, _ := binaryBuildID(b)
	// sha256("one") starts 7692c3ad3540.
	if idA != "7692c3ad3540" || idA2 != idA || idB == idA {
		t.Errorf("build IDs: a=%s again=%s b=%s", idA, idA2, idB)
	}
}

func TestImageBinary(t *testing.T) {
	t.Setenv(BinaryEnv, "")
	if got, _ := imageBinary("/x/klab"); got != "/x/klab" {
		t.Errorf("named binary: got %s", got)
	}
	self, _ := os.Executable()
	if got, _ := imageBinary(""); got != self {
		t.Errorf("default binary: got %s, want the running one %s", got, self)
	}
	t.Setenv(BinaryEnv, "/env/klab")
	if got, _ := imageBinary("/x/klab"); got != "/env/klab" {
		t.Errorf("with %s set: got %s", BinaryEnv, got)
	}
}
