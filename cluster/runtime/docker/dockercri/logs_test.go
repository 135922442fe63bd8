package dockercri

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// allLines is the log of klabtest lines 6.
const allLines = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n"

func TestContainerLogs(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sb := fx.sandbox("talker")
	id := fx.start(sb, containerConfig("main", "lines", "6"))
	fx.waitExited(id)
	errID := fx.start(sb, containerConfig("errors", "stderr", "oops"))
	fx.waitExited(errID)
	if got := fx.logs(errID, cri.LogOptions{}); got != "oops\n" {
		t.Errorf("log of a container writing to stderr = %q, want %q", got, "oops\n")
	}

	// Each line's time, from the log with timestamps.
	stamped := fx.logs(id, cri.LogOptions{Timestamps: true})
	lines := strings.Split(strings.TrimSuffix(stamped, "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("log with timestamps has %d lines, want 6:\n%s", len(lines), stamped)
	}
	var times []time.Time
	for i, line := range lines {
		stamp, text, _ := strings.Cut(line, " ")
		at, err := time.Parse(timestampFormat, stamp)
		if err != nil || len(stamp) != len("2006-01-02T15:04:05.000000000Z") {
			t.Fatalf("line %d %q: timestamp %q is not RFC 3339 with nine-digit nanoseconds: %v", i, line, stamp, err)
		}
		if want := fmt.Sprintf("line %d", i+1); text != want {
			t.Errorf("line %d = %q, want %q", i, text, want)
		}
		times = append(times, at)
	}

	ptr := func(n int64) *int64 { return &n }
	tests := []struct {
		name string
		opts cri.LogOptions
		want string
	}{
		{"everything", cri.LogOptions{}, allLines},
		{"tail", cri.LogOptions{TailLines: ptr(2)}, "line 5\nline 6\n"},
		{"tail 0", cri.LogOptions{TailLines: ptr(0)}, ""},
		{"limit cuts a line", cri.LogOptions{LimitBytes: ptr(9)}, "line 1\nli"},
		{"since a line's time keeps it", cri.LogOptions{SinceTime: &times[3]}, "line 4\nline 5\nline 6\n"},
		{"since and tail", cri.LogOptions{SinceTime: &times[3], TailLines: ptr(1)}, "line 6\n"},
		{"tail with timestamps", cri.LogOptions{TailLines: ptr(1), Timestamps: true}, lines[5] + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fx.logs(id, tt.opts); got != tt.want {
				t.Errorf("ContainerLogs(%+v) = %q, want %q", tt.opts, got, tt.want)
			}
		})
	}
}

func TestContainerLogsFollow(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sb := fx.sandbox("talker")

	// Following a running container returns when it exits, with all it
	// wrote.
	id := fx.start(sb, containerConfig("main", "lines", "6"))
	if got, want := fx.logs(id, cri.LogOptions{Follow: true}), allLines; got != want {
		t.Errorf("followed log = %q, want %q", got, want)
	}

	// Following a container that keeps running returns when ctx is done.
	cfg := containerConfig("quiet", "pause")
	quiet := fx.start(sb, cfg)
	ctx, cancel := context.WithCancel(fx.ctx())
	done := make(chan error, 1)
	go func() { done <- fx.rt.ContainerLogs(ctx, quiet, cri.LogOptions{Follow: true}, &bytes.Buffer{}) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ContainerLogs after cancel = %v, want nil", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("ContainerLogs with Follow did not return when its context was cancelled")
	}
}

// TestLogWriter covers the conversion of Docker's frames on its own.
func TestLogWriter(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 60, time.UTC)
	stamp := at.Format(timestampFormat)
	ptr := func(n int64) *int64 { return &n }
	later := at.Add(time.Second)
	tests := []struct {
		name   string
		opts   cri.LogOptions
		frames []string
		want   string
	}{
		{"lines", cri.LogOptions{}, []string{stamp + " a\n", stamp + " b\n"}, "a\nb\n"},
		{"timestamps", cri.LogOptions{Timestamps: true}, []string{stamp + " a\n"}, "2024-01-02T03:04:05.000000060Z a\n"},
		{"part of a line has no newline", cri.LogOptions{}, []string{stamp + " par", stamp + " t\n"}, "part\n"},
		{"text with spaces", cri.LogOptions{}, []string{stamp + " a b  c\n"}, "a b  c\n"},
		{"empty line", cri.LogOptions{}, []string{stamp + " \n"}, "\n"},
		{"since drops earlier lines", cri.LogOptions{SinceTime: &later}, []string{stamp + " a\n"}, ""},
		{"limit", cri.LogOptions{LimitBytes: ptr(3)}, []string{stamp + " a\n", stamp + " bcd\n"}, "a\nb"},
		{"unstamped text is kept", cri.LogOptions{Timestamps: true}, []string{"oops\n"}, "oops\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := newLogWriter(&buf, tt.opts)
			for _, f := range tt.frames {
				if _, err := w.Write([]byte(f)); err != nil {
					if err != errLimitReached {
						t.Fatalf("Write: %v", err)
					}
					break
				}
			}
			if buf.String() != tt.want {
				t.Errorf("output = %q, want %q", buf.String(), tt.want)
			}
		})
	}
}
