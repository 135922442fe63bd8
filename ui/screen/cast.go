package screen

import (
	"encoding/json"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/klab-dev/klab/assets/i18n"
)

// Cast records what is written to a terminal as an asciicast v2 file, the
// format asciinema plays: a header line (a JSON object with the version,
// the terminal's size and when the recording began), then one JSON array
// per write, [seconds since the start, "o", text], and one per change of
// size, [seconds, "r", "COLSxROWS"].
type Cast struct {
	mu    sync.Mutex
	f     *os.File
	start time.Time
	now   func() time.Time
	carry []byte // the start of a UTF-8 character cut by a write
	w, h  int    // the size last recorded
	err   error
}

// CreateCast creates the recording at name for a terminal of width×height.
func CreateCast(name string, width, height int) (*Cast, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, i18n.Wrap(err, "ui.err.cast", name)
	}
	c, err := newCast(f, width, height, time.Now)
	if err != nil {
		f.Close()
		return nil, i18n.Wrap(err, "ui.err.cast", name)
	}
	return c, nil
}

func newCast(f *os.File, width, height int, now func() time.Time) (*Cast, error) {
	c := &Cast{f: f, start: now(), now: now, w: max(width, 1), h: max(height, 1)}
	header := struct {
		Version   int               `json:"version"`
		Width     int               `json:"width"`
		Height    int               `json:"height"`
		Timestamp int64             `json:"timestamp"`
		Title     string            `json:"title"`
		Env       map[string]string `json:"env,omitempty"`
	}{2, c.w, c.h, c.start.Unix(), "klab", map[string]string{}}
	if t := os.Getenv("TERM"); t != "" {
		header.Env["TERM"] = t
	}
	if sh := os.Getenv("SHELL"); sh != "" {
		header.Env["SHELL"] = sh
	}
	line, err := json.Marshal(header)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return nil, err
	}
	return c, nil
}

// Tee returns a writer that writes to out and records what it wrote.
func (c *Cast) Tee(out io.Writer) io.Writer { return castTee{c, out} }

type castTee struct {
	c   *Cast
	out io.Writer
}

func (t castTee) Write(p []byte) (int, error) {
	n, err := t.out.Write(p)
	t.c.output(p[:n])
	return n, err
}

// output records text written to the terminal. A write that ends inside a
// UTF-8 character keeps that part back for the next one, since every event
// must be whole text.
func (c *Cast) output(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data := append(c.carry, p...)
	c.carry = nil
	cut := len(data)
	// At most the last 3 bytes can be an unfinished character.
	for i := len(data) - 1; i >= 0 && i >= len(data)-3; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	if cut < len(data) {
		c.carry = append([]byte(nil), data[cut:]...)
		data = data[:cut]
	}
	if len(data) > 0 {
		c.event("o", string(data))
	}
}

// Resize records a change of the terminal's size.
func (c *Cast) Resize(width, height int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if width == c.w && height == c.h {
		return
	}
	c.w, c.h = width, height
	c.event("r", strconv.Itoa(width)+"x"+strconv.Itoa(height))
}

// event appends one event line; the first error stops the recording (and
// Close reports it), never the TUI.
func (c *Cast) event(code, data string) {
	if c.err != nil || c.f == nil {
		return
	}
	secs := float64(c.now().Sub(c.start).Microseconds()) / 1e6
	line, err := json.Marshal([]any{json.Number(strconv.FormatFloat(secs, 'f', 6, 64)), code, data})
	if err == nil {
		_, err = c.f.Write(append(line, '\n'))
	}
	c.err = err
}

// Close ends the recording and reports a write that failed on the way.
func (c *Cast) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return c.err
	}
	if len(c.carry) > 0 {
		c.event("o", string(c.carry))
		c.carry = nil
	}
	name := c.f.Name()
	err := c.err
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	c.f = nil
	if err != nil {
		return i18n.Wrap(err, "ui.err.cast", name)
	}
	return nil
}
