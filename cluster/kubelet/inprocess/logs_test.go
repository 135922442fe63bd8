package inprocess

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// t0 is when the test logs begin; each write in writeLines is a second
// later than the one before.
var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// newTestLog opens a log whose clock is moved by the test.
func newTestLog(t *testing.T, maxSize int64) (*logFile, *time.Time) {
	t.Helper()
	l, err := openLogFile(filepath.Join(t.TempDir(), "web", "0.log"), maxSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	now := t0
	l.now = func() time.Time { return now }
	return l, &now
}

func ptr[T any](v T) *T { return &v }

func TestLogFileFormat(t *testing.T) {
	l, now := newTestLog(t, DefaultLogMaxSize)
	out, errOut := l.stream("stdout"), l.stream("stderr")
	out.Write([]byte("hello\nwor"))
	*now = now.Add(time.Second)
	errOut.Write([]byte("oops\n"))
	out.Write([]byte("ld\n"))
	out.Write([]byte(strings.Repeat("x", maxLogLine+3) + "\n"))
	out.Write([]byte("no newline"))
	l.finish()

	data, err := os.ReadFile(l.path)
	if err != nil {
		t.Fatal(err)
	}
	want := "2024-05-01T12:00:00Z stdout F hello\n" +
		"2024-05-01T12:00:01Z stderr F oops\n" +
		"2024-05-01T12:00:01Z stdout F world\n" +
		"2024-05-01T12:00:01Z stdout P " + strings.Repeat("x", maxLogLine) + "\n" +
		"2024-05-01T12:00:01Z stdout F xxx\n" +
		"2024-05-01T12:00:01Z stdout P no newline\n"
	gotLines, wantLines := strings.Split(string(data), "\n"), strings.Split(want, "\n")
	if len(gotLines) != len(wantLines) {
		t.Fatalf("log file has %d lines, want %d", len(gotLines), len(wantLines))
	}
	for i := range gotLines {
		if gotLines[i] != wantLines[i] {
			t.Errorf("line %d = %.60q... (%d bytes), want %.60q... (%d bytes)",
				i, gotLines[i], len(gotLines[i]), wantLines[i], len(wantLines[i]))
		}
	}
	l.stream("stdout").Write([]byte("after the end\n"))
	if after, _ := os.ReadFile(l.path); !bytes.Equal(after, data) {
		t.Errorf("a write after the container exited reached the log")
	}
}

// writeLines writes lines to stdout, one second apart, starting at t0.
func writeLines(l *logFile, now *time.Time, lines ...string) {
	for i, line := range lines {
		*now = t0.Add(time.Duration(i) * time.Second)
		l.stream("stdout").Write([]byte(line + "\n"))
	}
}

func TestLogRead(t *testing.T) {
	tests := []struct {
		name string
		opts cri.LogOptions
		want string
	}{
		{name: "everything", want: "one\ntwo\nthree\nfour\n"},
		{name: "tail", opts: cri.LogOptions{TailLines: ptr[int64](2)}, want: "three\nfour\n"},
		{name: "tail zero", opts: cri.LogOptions{TailLines: ptr[int64](0)}, want: ""},
		{name: "tail more than there is", opts: cri.LogOptions{TailLines: ptr[int64](10)}, want: "one\ntwo\nthree\nfour\n"},
		{name: "since is inclusive", opts: cri.LogOptions{SinceTime: ptr(t0.Add(2 * time.Second))}, want: "three\nfour\n"},
		{name: "since between lines", opts: cri.LogOptions{SinceTime: ptr(t0.Add(1500 * time.Millisecond))}, want: "three\nfour\n"},
		{name: "since and tail", opts: cri.LogOptions{SinceTime: ptr(t0.Add(time.Second)), TailLines: ptr[int64](5)}, want: "two\nthree\nfour\n"},
		{name: "limit bytes cuts a line", opts: cri.LogOptions{LimitBytes: ptr[int64](6)}, want: "one\ntw"},
		{name: "limit bytes zero", opts: cri.LogOptions{LimitBytes: ptr[int64](0)}, want: ""},
		{name: "timestamps", opts: cri.LogOptions{Timestamps: true, TailLines: ptr[int64](1)},
			want: "2024-05-01T12:00:03.000000000Z four\n"},
		{name: "timestamps count towards the limit", opts: cri.LogOptions{Timestamps: true, LimitBytes: ptr[int64](10)},
			want: "2024-05-01"},
		{name: "follow ends with an exited container", opts: cri.LogOptions{Follow: true, TailLines: ptr[int64](1)}, want: "four\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, now := newTestLog(t, DefaultLogMaxSize)
			writeLines(l, now, "one", "two", "three", "four")
			l.finish()
			var b strings.Builder
			if err := l.read(context.Background(), tt.opts, &b); err != nil {
				t.Fatalf("read: %v", err)
			}
			if b.String() != tt.want {
				t.Errorf("read = %q, want %q", b.String(), tt.want)
			}
		})
	}
}

func TestLogRotation(t *testing.T) {
	// Each entry is 32 bytes ("2024-05-01T12:00:0NZ stdout F lN\n"); the
	// bound holds three.
	l, now := newTestLog(t, 100)
	writeLines(l, now, "l0", "l1", "l2", "l3", "l4", "l5", "l6", "l7")
	l.finish()
	var b strings.Builder
	if err := l.read(context.Background(), cri.LogOptions{}, &b); err != nil {
		t.Fatal(err)
	}
	// l0-l2 went in the first file, l3-l5 in the second (now .1), l6-l7 in
	// the current one: the first was dropped at the second rotation.
	if want := "l3\nl4\nl5\nl6\nl7\n"; b.String() != want {
		t.Errorf("read = %q, want %q", b.String(), want)
	}
	for _, p := range []string{l.path, l.path + ".1"} {
		if info, err := os.Stat(p); err != nil || info.Size() > 100 {
			t.Errorf("%s: %v, size bound 100", p, err)
		}
	}
}

// notifyingBuffer is a writer a test can wait on.
type notifyingBuffer struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newNotifyingBuffer() *notifyingBuffer { return &notifyingBuffer{changed: make(chan struct{})} }

func (n *notifyingBuffer) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.buf.Write(p)
	close(n.changed)
	n.changed = make(chan struct{})
	return len(p), nil
}

func (n *notifyingBuffer) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.buf.String()
}

// waitFor waits until the buffer holds want exactly.
func (n *notifyingBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		n.mu.Lock()
		got, changed := n.buf.String(), n.changed
		n.mu.Unlock()
		if got == want {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("buffer = %q, want %q", got, want)
		}
	}
}

func TestLogFollow(t *testing.T) {
	tests := []struct {
		name    string
		maxSize int64
		opts    cri.LogOptions
		// before is written before the read begins and shows as
		// wantBefore; after is written line by line while it follows.
		before     []string
		wantBefore string
		after      []string
		want       string
	}{
		{name: "new lines arrive", maxSize: DefaultLogMaxSize, opts: cri.LogOptions{Follow: true},
			before: []string{"a"}, wantBefore: "a\n", after: []string{"b", "c"}, want: "a\nb\nc\n"},
		{name: "tail then follow", maxSize: DefaultLogMaxSize, opts: cri.LogOptions{Follow: true, TailLines: ptr[int64](1)},
			before: []string{"a", "b"}, wantBefore: "b\n", after: []string{"c"}, want: "b\nc\n"},
		// Two 32-byte entries fit under the bound: every other line
		// rotates the file.
		{name: "across rotations", maxSize: 70, opts: cri.LogOptions{Follow: true},
			before: []string{"a"}, wantBefore: "a\n", after: []string{"b", "c", "d", "e"}, want: "a\nb\nc\nd\ne\n"},
		{name: "since applies to new lines", maxSize: DefaultLogMaxSize,
			opts:   cri.LogOptions{Follow: true, SinceTime: ptr(t0.Add(time.Hour))},
			before: []string{"a"}, wantBefore: "", after: []string{"b"}, want: "b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, now := newTestLog(t, tt.maxSize)
			writeLines(l, now, tt.before...)
			*now = t0.Add(time.Hour)
			out := newNotifyingBuffer()
			result := make(chan error, 1)
			go func() { result <- l.read(context.Background(), tt.opts, out) }()
			want := tt.wantBefore
			out.waitFor(t, want)
			for _, line := range tt.after {
				// Each line is written once the previous one was read: a
				// follower more than a whole file behind loses lines.
				l.stream("stdout").Write([]byte(line + "\n"))
				want += line + "\n"
				out.waitFor(t, want)
			}
			l.finish()
			select {
			case err := <-result:
				if err != nil {
					t.Fatalf("read: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("follow did not return once the container exited")
			}
			if out.String() != tt.want {
				t.Errorf("read = %q, want %q", out.String(), tt.want)
			}
		})
	}
}

func TestLogFollowStopsAtLimit(t *testing.T) {
	l, now := newTestLog(t, DefaultLogMaxSize)
	writeLines(l, now, "a")
	out := newNotifyingBuffer()
	result := make(chan error, 1)
	go func() {
		result <- l.read(context.Background(), cri.LogOptions{Follow: true, LimitBytes: ptr[int64](4)}, out)
	}()
	out.waitFor(t, "a\n")
	l.stream("stdout").Write([]byte("bcd\n"))
	select {
	case err := <-result:
		if err != nil || out.String() != "a\nbc" {
			t.Errorf("read = %v, %q; want nil, %q", err, out.String(), "a\nbc")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not stop at the byte limit")
	}
}

func TestLogFollowStopsWithContext(t *testing.T) {
	l, now := newTestLog(t, DefaultLogMaxSize)
	writeLines(l, now, "a")
	ctx, cancel := context.WithCancel(context.Background())
	out := newNotifyingBuffer()
	result := make(chan error, 1)
	go func() { result <- l.read(ctx, cri.LogOptions{Follow: true}, out) }()
	out.waitFor(t, "a\n")
	cancel()
	select {
	case err := <-result:
		if err != nil {
			t.Errorf("read = %v, want nil when the client goes away", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not return after cancel")
	}
}
