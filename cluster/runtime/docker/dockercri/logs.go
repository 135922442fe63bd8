package dockercri

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// timestampFormat is how `kubectl logs --timestamps` prints a line's time:
// RFC 3339 with nanoseconds always nine digits wide, as the kubelet (and
// Docker) do.
const timestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

// errLimitReached stops a read once LimitBytes were written.
var errLimitReached = errors.New("log limit reached")

// ContainerLogs writes the container's log to w as `kubectl logs` shows it,
// as the in-process runtime does: each line's text, after its time when
// opts.Timestamps, the lines at or after opts.SinceTime, the last
// opts.TailLines of those, cut after opts.LimitBytes; with opts.Follow it
// goes on until the container exits or ctx is done.
//
// Docker applies TailLines before SinceTime, the in-process runtime after;
// both give the same lines because a log's times only grow.
func (r *Runtime) ContainerLogs(ctx context.Context, id string, opts cri.LogOptions, w io.Writer) error {
	info, err := r.inspect(ctx, id, labels.RolePod)
	if err != nil {
		if ctx.Err() != nil {
			return nil // the reader went away
		}
		return fmt.Errorf("container logs %s: %w", id, err)
	}
	out := newLogWriter(w, opts)
	if out.remaining == 0 {
		return nil
	}
	req := container.LogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true, Follow: opts.Follow}
	if n := opts.TailLines; n != nil && *n >= 0 {
		req.Tail = strconv.FormatInt(*n, 10)
	}
	if t := opts.SinceTime; t != nil && t.Unix() > 0 {
		req.Since = fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond())
	}
	body, err := r.docker.ContainerLogs(ctx, info.ID, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("container logs %s: %w", id, err)
	}
	defer body.Close()
	_, err = stdcopy.StdCopy(out, out, body)
	switch {
	case err == nil, errors.Is(err, errLimitReached), ctx.Err() != nil:
		return nil
	default:
		return fmt.Errorf("container logs %s: %w", id, err)
	}
}

// logWriter turns Docker's log stream into `kubectl logs` output. The
// engine sends one log message per frame, "<time> <text>", with a newline
// at its end unless it is part of a line (one longer than 16 KiB, or output
// that ended without a newline); StdCopy hands over one frame per Write.
type logWriter struct {
	w         io.Writer
	opts      cri.LogOptions
	remaining int64 // bytes left under LimitBytes; -1 for no limit
}

func newLogWriter(w io.Writer, opts cri.LogOptions) *logWriter {
	l := &logWriter{w: w, opts: opts, remaining: -1}
	if opts.LimitBytes != nil {
		l.remaining = max(*opts.LimitBytes, 0)
	}
	return l
}

// Write writes one frame's messages.
func (l *logWriter) Write(frame []byte) (int, error) {
	n := len(frame)
	for len(frame) > 0 {
		msg, rest, full := frame, []byte(nil), false
		if i := bytes.IndexByte(frame, '\n'); i >= 0 {
			msg, rest, full = frame[:i], frame[i+1:], true
		}
		frame = rest
		stamp, text, ok := bytes.Cut(msg, []byte(" "))
		t, err := time.Parse(time.RFC3339Nano, string(stamp))
		if !ok || err != nil {
			// Not a message Docker stamped; show it rather than lose it.
			t, text = time.Time{}, msg
		}
		if l.opts.SinceTime != nil && !t.IsZero() && t.Before(*l.opts.SinceTime) {
			continue
		}
		if err := l.entry(t, text, full); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// entry writes one line (or part of one), cutting it short once LimitBytes
// are reached, as the kubelet does.
func (l *logWriter) entry(t time.Time, text []byte, full bool) error {
	var b []byte
	if l.opts.Timestamps && !t.IsZero() {
		b = t.UTC().AppendFormat(b, timestampFormat)
		b = append(b, ' ')
	}
	b = append(b, text...)
	if full {
		b = append(b, '\n')
	}
	if l.remaining >= 0 {
		if l.remaining == 0 {
			return errLimitReached
		}
		if int64(len(b)) > l.remaining {
			b = b[:l.remaining]
		}
		l.remaining -= int64(len(b))
	}
	if _, err := l.w.Write(b); err != nil {
		return err
	}
	if l.remaining == 0 {
		return errLimitReached
	}
	return nil
}
