package critest

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// WriteLog appends a line to a container's log, stamped now.
func (r *Runtime) WriteLog(id, line string) error { return r.WriteLogAt(id, r.opts.Now(), line) }

// WriteLogAt appends a line stamped at, so a test can place lines before
// a sinceTime.
func (r *Runtime) WriteLogAt(id string, at time.Time, line string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return fmt.Errorf("write log of %s: %w", id, cri.ErrNotFound)
	}
	c.logs = append(c.logs, logLine{at: at, text: line})
	close(c.changed)
	c.changed = make(chan struct{})
	return nil
}

// ContainerLogs writes the log as a CRI log reader does: the last
// TailLines lines, of those the ones at or after SinceTime, each prefixed
// with its RFC 3339 timestamp when asked, cut after LimitBytes; with
// Follow it then waits for more until the container exits.
func (r *Runtime) ContainerLogs(ctx context.Context, id string, opts cri.LogOptions, w io.Writer) error {
	r.mu.Lock()
	c, ok := r.containers[id]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("logs of %s: %w", id, cri.ErrNotFound)
	}
	lines := c.logs
	if opts.TailLines != nil && *opts.TailLines >= 0 && int(*opts.TailLines) < len(lines) {
		lines = lines[len(lines)-int(*opts.TailLines):]
	}
	next := len(c.logs)
	pending := append([]logLine(nil), lines...)
	r.mu.Unlock()

	lw := &limitWriter{w: w, left: -1}
	if opts.LimitBytes != nil {
		lw.left = *opts.LimitBytes
	}
	for {
		for _, l := range pending {
			if opts.SinceTime != nil && l.at.Before(*opts.SinceTime) {
				continue
			}
			text := l.text + "\n"
			if opts.Timestamps {
				text = l.at.UTC().Format(time.RFC3339Nano) + " " + text
			}
			if err := lw.write(text); err != nil {
				if err == errLimit {
					return nil
				}
				return err
			}
		}
		if !opts.Follow {
			return nil
		}
		r.mu.Lock()
		if next < len(c.logs) {
			pending = append([]logLine(nil), c.logs[next:]...)
			next = len(c.logs)
			r.mu.Unlock()
			continue
		}
		exited := c.status.State == cri.StateExited
		_, alive := r.containers[id]
		changed := c.changed
		r.mu.Unlock()
		if exited || !alive {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		pending = nil
	}
}

var errLimit = fmt.Errorf("log limit reached")

// limitWriter stops after left bytes (left < 0: no limit).
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) write(s string) error {
	if l.left == 0 {
		return errLimit
	}
	if l.left > 0 && int64(len(s)) > l.left {
		s = s[:l.left]
	}
	n, err := io.WriteString(l.w, s)
	if l.left > 0 {
		l.left -= int64(n)
	}
	if err != nil {
		return err
	}
	if l.left == 0 {
		return errLimit
	}
	return nil
}
