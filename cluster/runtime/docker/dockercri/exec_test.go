package dockercri

import (
	"bytes"
	"strings"
	"testing"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// TestExecInContainer runs commands in a running container through the
// engine's exec API: the image's own programs (here klab's shell, linked
// as /bin/sh as in klab/app), their output, exit code and stdin, and a
// terminal.
func TestExecInContainer(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sb := fx.sandbox("exec")
	id := fx.start(sb, containerConfig("main", "sleep"))
	fx.waitLog(id, "ready")
	tests := []struct {
		name     string
		cmd      []string
		stdin    string
		tty      bool
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "ls", cmd: []string{"ls", "/"}, wantOut: "bin\n"},
		{name: "exit code and streams", cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, wantCode: 3, wantOut: "out\n", wantErr: "err\n"},
		{name: "stdin", cmd: []string{"wc", "-l"}, stdin: "a\nb\n", wantOut: "2\n"},
		{name: "terminal", cmd: []string{"sh"}, stdin: "echo hi\nexit 5\n", tty: true, wantCode: 5, wantOut: "hi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			streams := cri.Streams{Stdout: &out, TTY: tc.tty}
			if !tc.tty {
				streams.Stderr = &errOut
			}
			if tc.stdin != "" {
				streams.Stdin = strings.NewReader(tc.stdin)
			}
			code, err := fx.rt.ExecInContainer(fx.ctx(), id, tc.cmd, streams)
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || !strings.Contains(out.String(), tc.wantOut) || !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("exec %q = %d, stdout %q, stderr %q; want %d, %q, %q", tc.cmd, code, out.String(), errOut.String(), tc.wantCode, tc.wantOut, tc.wantErr)
			}
		})
	}
	// A program the image does not have: the engine's runtime says so.
	var out bytes.Buffer
	code, err := fx.rt.ExecInContainer(fx.ctx(), id, []string{"nosuch"}, cri.Streams{Stdout: &out, Stderr: &out})
	if err == nil && (code == 0 || !strings.Contains(out.String(), "executable file not found")) {
		t.Errorf("exec of a missing program = %d, %q, want the engine's executable file not found", code, out.String())
	}
}
