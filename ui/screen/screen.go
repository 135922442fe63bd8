// Package screen draws the TUI's frames on the terminal, in place of
// Bubble Tea's renderer (the program runs with tea.WithoutRenderer).
//
// Bubble Tea's renderer looks for a new frame on a ticker, FPS times a
// second, whether or not anything changed: an idle workspace paid twenty
// wake-ups a second for nothing. A Screen writes when it is handed a frame
// that differs from the last, at most FPS times a second, and only the
// lines that changed; between changes nothing runs. Terminal owns the rest
// of what the renderer did: raw input, the alternate screen, the cursor,
// bracketed paste, and the size.
package screen

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// Screen writes frames to a terminal in the alternate screen.
type Screen struct {
	out      io.Writer
	interval time.Duration

	mu            sync.Mutex
	width, height int
	frame         string   // the newest frame
	shown         []string // the lines on the terminal; nil: paint it all
	dirty         bool     // frame is not on the terminal yet
	written       time.Time
	timer         *time.Timer // a write waiting for the interval to pass
	closed        bool
	err           error
}

// New returns a Screen writing to out at most fps frames a second.
func New(out io.Writer, fps int) *Screen {
	return &Screen{out: out, interval: time.Second / time.Duration(max(fps, 1))}
}

// Open enters the alternate screen, clears it, hides the cursor and turns
// on bracketed paste.
func (s *Screen) Open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := io.WriteString(s.out, ansi.SetAltScreenSaveCursorMode+ansi.EraseEntireScreen+ansi.CursorHomePosition+
		ansi.HideCursor+ansi.SetBracketedPasteMode)
	return err
}

// Close stops writing and gives the terminal back: bracketed paste off,
// the cursor shown, the main screen restored.
func (s *Screen) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	_, err := io.WriteString(s.out, ansi.ResetBracketedPasteMode+ansi.ShowCursor+ansi.ResetAltScreenSaveCursorMode)
	return err
}

// Resize sets the terminal's size: the next Draw paints the whole frame on
// a cleared screen (a terminal may have moved what it showed), even if it
// is the same.
func (s *Screen) Resize(width, height int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.width, s.height = width, height
	s.shown = nil
	s.dirty = true
}

// Draw hands the Screen a frame. A frame equal to the last costs nothing;
// another is written now, or when the interval since the last write has
// passed (then the newest frame by that time is written).
func (s *Screen) Draw(frame string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if frame == s.frame && !s.dirty {
		return
	}
	s.frame, s.dirty = frame, true
	s.schedule()
}

// Err returns the first error writing to the terminal.
func (s *Screen) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// schedule writes the frame now or arms the timer; s.mu is held.
func (s *Screen) schedule() {
	if s.closed || s.timer != nil || !s.dirty {
		return
	}
	if wait := s.interval - time.Since(s.written); wait > 0 {
		s.timer = time.AfterFunc(wait, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.timer = nil
			if !s.closed {
				s.write()
			}
		})
		return
	}
	s.write()
}

// write puts the frame on the terminal: the lines that differ from what
// it shows, each addressed by its row. s.mu is held.
func (s *Screen) write() {
	if !s.dirty {
		return
	}
	s.dirty = false
	s.written = time.Now()
	lines := strings.Split(s.frame, "\n")
	// Rows below the terminal cannot be reached: keep the bottom rows, as
	// Bubble Tea does.
	if s.height > 0 && len(lines) > s.height {
		lines = lines[len(lines)-s.height:]
	}
	var b bytes.Buffer
	if s.shown == nil {
		b.WriteString(ansi.EraseEntireScreen)
	}
	for i, line := range lines {
		if s.shown != nil && i < len(s.shown) && s.shown[i] == line {
			continue
		}
		moveTo(&b, i)
		w := ansi.StringWidth(line)
		if s.width > 0 && w > s.width {
			line, w = ansi.Truncate(line, s.width, ""), s.width
		}
		b.WriteString(line)
		// A line as wide as the terminal leaves the cursor on its last
		// cell, which erasing would blank.
		if s.width <= 0 || w < s.width {
			b.WriteString(ansi.EraseLineRight)
		}
	}
	for i := len(lines); i < len(s.shown); i++ {
		moveTo(&b, i)
		b.WriteString(ansi.EraseLineRight)
	}
	s.shown = lines
	if _, err := s.out.Write(b.Bytes()); err != nil && s.err == nil {
		s.err = err
	}
}

// moveTo moves the cursor to the start of row (from 0).
func moveTo(b *bytes.Buffer, row int) {
	b.WriteString("\x1b[")
	b.WriteString(strconv.Itoa(row + 1))
	b.WriteString(";1H")
}
