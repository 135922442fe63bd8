package inprocess

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// CRI log format: every line of a container's output becomes
//
//	2024-01-02T03:04:05.123456789Z stdout F the line
//
// with the time it was written, the stream, and F for a full line or P for
// part of one (a line longer than maxLogLine, or output that ended without
// a newline). The kubelet's log reader parses the same format.
const (
	tagFull    = "F"
	tagPartial = "P"
	// maxLogLine splits longer lines into partial entries, as containerd's
	// 16 KiB buffer does.
	maxLogLine = 16 << 10
)

// logFile is a container's log: a file in the CRI format, rotated once
// when it reaches maxSize (the previous file kept as <path>.1), and a
// broadcast that wakes followers when it grows.
type logFile struct {
	path    string
	maxSize int64
	now     func() time.Time

	mu   sync.Mutex
	file *os.File
	size int64
	// generation counts rotations, so a follower knows its file was moved.
	generation int
	// changed is closed and replaced whenever something happens that a
	// follower waits for: a write, a rotation, the end.
	changed chan struct{}
	// done is set when the container exited: no more writes.
	done bool
	// pending holds each stream's output after its last newline.
	pending map[string][]byte
	// attached are the clients of kubectl attach, who get the output as
	// it is written.
	attached map[*attachment]struct{}
}

// attachment is one attached client's stdout and stderr.
type attachment struct {
	stdout, stderr io.Writer
}

// attach adds a client that gets every write from now on; the returned
// function removes it.
func (l *logFile) attach(a *attachment) (detach func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.attached == nil {
		l.attached = map[*attachment]struct{}{}
	}
	l.attached[a] = struct{}{}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.attached, a)
	}
}

func openLogFile(path string, maxSize int64) (*logFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create log file: %w", err)
	}
	return &logFile{path: path, maxSize: maxSize, now: time.Now, file: f,
		changed: make(chan struct{}), pending: map[string][]byte{}}, nil
}

// stream returns the writer a container's stdout or stderr goes to.
func (l *logFile) stream(name string) io.Writer { return streamWriter{l, name} }

type streamWriter struct {
	log  *logFile
	name string
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.log.write(w.name, p)
	w.log.mu.Lock()
	var targets []io.Writer
	for a := range w.log.attached {
		target := a.stdout
		if w.name == "stderr" {
			target = a.stderr
		}
		if target != nil {
			targets = append(targets, target)
		}
	}
	w.log.mu.Unlock()
	// Written outside the lock: a slow client holds up the container's
	// output, as an attached terminal does, but not other readers.
	for _, t := range targets {
		t.Write(p)
	}
	return len(p), nil
}

// write logs a chunk of a stream's output, a line at a time.
func (l *logFile) write(stream string, p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		// A request the app was still answering when it was killed.
		return
	}
	now := l.now()
	buf := append(l.pending[stream], p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		switch {
		case i >= 0 && i <= maxLogLine:
			l.appendLocked(now, stream, tagFull, buf[:i])
			buf = buf[i+1:]
		case len(buf) >= maxLogLine:
			l.appendLocked(now, stream, tagPartial, buf[:maxLogLine])
			buf = buf[maxLogLine:]
		default:
			l.pending[stream] = bytes.Clone(buf)
			l.broadcastLocked()
			return
		}
	}
}

// appendLocked writes one entry, rotating the file first if the entry would
// take it past maxSize.
func (l *logFile) appendLocked(t time.Time, stream, tag string, text []byte) {
	entry := make([]byte, 0, len(text)+64)
	entry = t.UTC().AppendFormat(entry, time.RFC3339Nano)
	entry = append(entry, ' ')
	entry = append(entry, stream...)
	entry = append(entry, ' ')
	entry = append(entry, tag...)
	entry = append(entry, ' ')
	entry = append(entry, text...)
	entry = append(entry, '\n')
	if l.file == nil {
		return
	}
	if l.size > 0 && l.size+int64(len(entry)) > l.maxSize {
		l.rotateLocked()
	}
	n, _ := l.file.Write(entry)
	l.size += int64(n)
}

// rotateLocked moves the current file to <path>.1, replacing the older one,
// and starts a new file. A rotation that fails keeps writing to the old
// file rather than losing output.
func (l *logFile) rotateLocked() {
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return
	}
	l.file.Close()
	l.file, l.size = f, 0
	l.generation++
}

func (l *logFile) broadcastLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// finish writes what is left of each stream, as a partial line since no
// newline ended it, and marks the log complete: followers stop at its end.
func (l *logFile) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	now := l.now()
	for _, stream := range []string{"stdout", "stderr"} {
		if rest := l.pending[stream]; len(rest) > 0 {
			l.appendLocked(now, stream, tagPartial, rest)
		}
	}
	l.pending = nil
	l.done = true
	l.broadcastLocked()
}

// close finishes the log and closes its file.
func (l *logFile) close() {
	l.finish()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
}

// remove closes the log and deletes its files.
func (l *logFile) remove() error {
	l.close()
	for _, p := range []string{l.path, l.path + ".1"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove log: %w", err)
		}
	}
	// The container's directory goes once its last attempt's log does.
	os.Remove(filepath.Dir(l.path))
	return nil
}
