package screen

import (
	"bytes"
	"context"
	"io"
	"os"

	"github.com/charmbracelet/x/term"

	"github.com/klab-dev/klab/assets/i18n"
)

// Terminal is the terminal the TUI runs on: its input in raw mode (for
// tea.WithInput), and a Screen on its output in the alternate screen.
type Terminal struct {
	In     *os.File
	Screen *Screen
	out    *os.File
	ownIn  bool
	state  *term.State
	cast   *Cast
}

// Open takes over the terminal: standard input, or /dev/tty when standard
// input is not one, in raw mode, and standard output's alternate screen.
// With a cast name, everything shown is also recorded there (Cast).
func Open(fps int, cast string) (*Terminal, error) {
	t := &Terminal{In: os.Stdin, out: os.Stdout}
	var out io.Writer = t.out
	if cast != "" {
		w, h, err := term.GetSize(t.out.Fd())
		if err != nil {
			w, h = 80, 24
		}
		if t.cast, err = CreateCast(cast, w, h); err != nil {
			return nil, err
		}
		out = t.cast.Tee(t.out)
	}
	if !term.IsTerminal(t.In.Fd()) {
		f, err := os.Open("/dev/tty")
		if err != nil {
			return nil, i18n.Wrap(err, "ui.err.no-tty")
		}
		t.In, t.ownIn = f, true
	}
	state, err := term.MakeRaw(t.In.Fd())
	if err != nil {
		t.closeIn()
		if t.cast != nil {
			t.cast.Close()
		}
		return nil, i18n.Wrap(err, "ui.err.raw-mode")
	}
	t.state = state
	t.Screen = New(out, fps)
	if err := t.Screen.Open(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// WatchSize calls send with the terminal's size now and whenever it
// changes, until ctx ends. An output that is not a terminal has no size:
// send is never called.
func (t *Terminal) WatchSize(ctx context.Context, send func(width, height int)) {
	if !term.IsTerminal(t.out.Fd()) {
		return
	}
	changed, stop := notifyResize()
	go func() {
		defer stop()
		for {
			if w, h, err := term.GetSize(t.out.Fd()); err == nil {
				if t.cast != nil {
					t.cast.Resize(w, h)
				}
				send(w, h)
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
	}()
}

// Close gives the terminal back as Open found it.
func (t *Terminal) Close() error {
	var err error
	if t.Screen != nil {
		err = t.Screen.Close()
	}
	if t.state != nil {
		if rerr := term.Restore(t.In.Fd(), t.state); err == nil {
			err = rerr
		}
		t.state = nil
	}
	t.closeIn()
	if t.cast != nil {
		if cerr := t.cast.Close(); err == nil {
			err = cerr
		}
		t.cast = nil
	}
	return err
}

func (t *Terminal) closeIn() {
	if t.ownIn {
		t.In.Close()
		t.ownIn = false
	}
}

// HoldOutput catches what is written to os.Stdout and os.Stderr while the
// TUI owns the terminal (a library's stray print, Bubble Tea's report of
// a panic), which would tear the screen or vanish with the alternate
// screen. release puts them back and returns what was caught (up to
// 1 MiB), to be written once the terminal is restored.
func HoldOutput() (release func() []byte) {
	r, w, err := os.Pipe()
	if err != nil {
		return func() []byte { return nil }
	}
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(&buf, io.LimitReader(r, 1<<20))
		io.Copy(io.Discard, r)
	}()
	return func() []byte {
		os.Stdout, os.Stderr = stdout, stderr
		w.Close()
		<-done
		r.Close()
		return buf.Bytes()
	}
}
