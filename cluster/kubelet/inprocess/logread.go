package inprocess

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// timestampFormat is how `kubectl logs --timestamps` prints a line's time:
// RFC 3339 with nanoseconds always nine digits wide, as the kubelet does.
const timestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

// errLimitReached stops a read once LimitBytes were written.
var errLimitReached = errors.New("log limit reached")

// logEntry is one parsed entry of a CRI log file.
type logEntry struct {
	time    time.Time
	stream  string
	partial bool
	text    []byte
}

// parseEntries parses complete lines of a CRI log file, skipping any that
// are malformed rather than failing the whole log.
func parseEntries(data []byte) []logEntry {
	var entries []logEntry
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if e, ok := parseEntry(line); ok {
			entries = append(entries, e)
		}
	}
	return entries
}

func parseEntry(line []byte) (logEntry, bool) {
	fields := bytes.SplitN(line, []byte(" "), 4)
	if len(fields) != 4 {
		return logEntry{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return logEntry{}, false
	}
	return logEntry{time: t, stream: string(fields[1]), partial: string(fields[2]) == tagPartial, text: fields[3]}, true
}

// logOutput writes entries as `kubectl logs` shows them, honouring the
// options that apply to each entry.
type logOutput struct {
	w         io.Writer
	opts      cri.LogOptions
	remaining int64 // bytes left under LimitBytes; -1 for no limit
}

func newLogOutput(w io.Writer, opts cri.LogOptions) *logOutput {
	o := &logOutput{w: w, opts: opts, remaining: -1}
	if opts.LimitBytes != nil {
		o.remaining = max(*opts.LimitBytes, 0)
	}
	return o
}

// keep reports whether an entry passes SinceTime.
func (o *logOutput) keep(e logEntry) bool {
	return o.opts.SinceTime == nil || !e.time.Before(*o.opts.SinceTime)
}

// write writes one entry; it returns errLimitReached once LimitBytes are
// written, cutting the last entry short as the kubelet does.
func (o *logOutput) write(e logEntry) error {
	var b []byte
	if o.opts.Timestamps {
		b = e.time.AppendFormat(b, timestampFormat)
		b = append(b, ' ')
	}
	b = append(b, e.text...)
	if !e.partial {
		b = append(b, '\n')
	}
	if o.remaining >= 0 {
		if o.remaining == 0 {
			return errLimitReached
		}
		if int64(len(b)) > o.remaining {
			b = b[:o.remaining]
		}
		o.remaining -= int64(len(b))
	}
	if _, err := o.w.Write(b); err != nil {
		return err
	}
	if o.remaining == 0 {
		return errLimitReached
	}
	return nil
}

// read writes the log to w as opts asks: the kept part of what is there
// now and then, with Follow, what is written until the container exits or
// ctx is done.
func (l *logFile) read(ctx context.Context, opts cri.LogOptions, w io.Writer) error {
	out := newLogOutput(w, opts)
	if out.remaining == 0 {
		return nil
	}
	// Open both files under the lock, so that no rotation falls between
	// them; writes after this go to cur, which is what a follower reads.
	l.mu.Lock()
	old, oldErr := os.Open(l.path + ".1")
	cur, err := os.Open(l.path)
	generation := l.generation
	l.mu.Unlock()
	if oldErr == nil {
		defer old.Close()
	}
	if err != nil {
		return fmt.Errorf("open container log: %w", err)
	}
	defer func() { cur.Close() }()

	var history []logEntry
	if oldErr == nil {
		data, err := io.ReadAll(old)
		if err != nil {
			return fmt.Errorf("read container log: %w", err)
		}
		history = parseEntries(data)
	}
	f := follower{file: cur}
	entries, err := f.more()
	if err != nil {
		return err
	}
	history = append(history, entries...)
	if err := out.writeHistory(history); err != nil {
		return ignoreLimit(err)
	}
	if !opts.Follow {
		return nil
	}

	for {
		// Look at the log's state before reading, so a write after the
		// read still wakes the wait below.
		l.mu.Lock()
		changed, done, gen := l.changed, l.done, l.generation
		l.mu.Unlock()
		entries, err := f.more()
		if err != nil {
			return err
		}
		if err := out.writeAll(entries); err != nil {
			return ignoreLimit(err)
		}
		if len(entries) > 0 {
			continue
		}
		switch {
		case gen != generation:
			// The file was rotated and we have read it to its end: go on
			// with the new one.
			l.mu.Lock()
			next, err := os.Open(l.path)
			generation = l.generation
			l.mu.Unlock()
			if err != nil {
				return fmt.Errorf("open container log: %w", err)
			}
			cur.Close()
			cur = next
			f = follower{file: cur}
		case done:
			return nil
		default:
			select {
			case <-changed:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// writeHistory writes the entries that were in the log when the read
// began, after SinceTime and TailLines.
func (o *logOutput) writeHistory(entries []logEntry) error {
	kept := entries[:0:0]
	for _, e := range entries {
		if o.keep(e) {
			kept = append(kept, e)
		}
	}
	if n := o.opts.TailLines; n != nil && *n >= 0 && int64(len(kept)) > *n {
		kept = kept[int64(len(kept))-*n:]
	}
	return o.writeAll(kept)
}

func (o *logOutput) writeAll(entries []logEntry) error {
	for _, e := range entries {
		if !o.keep(e) {
			continue
		}
		if err := o.write(e); err != nil {
			return err
		}
	}
	return nil
}

func ignoreLimit(err error) error {
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

// follower reads a log file's complete lines as they are appended.
type follower struct {
	file   *os.File
	offset int64
}

// more returns the entries appended since the last call. A line still being
// written is left for the next call.
func (f *follower) more() ([]logEntry, error) {
	if _, err := f.file.Seek(f.offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read container log: %w", err)
	}
	data, err := io.ReadAll(f.file)
	if err != nil {
		return nil, fmt.Errorf("read container log: %w", err)
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	f.offset += int64(end)
	return parseEntries(data[:end]), nil
}
