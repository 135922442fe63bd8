package screen

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// vterm is a terminal of the few sequences a Screen writes: cursor
// position (CUP), erase to the end of the line (EL), erase the screen
// (ED 2), modes (ignored) and colours (dropped). Each write is also sent
// on writes.
type vterm struct {
	mu       sync.Mutex
	w, h     int
	cells    [][]string
	row, col int
	bytes    int
	writes   chan string
}

func newVterm(w, h int) *vterm {
	t := &vterm{w: w, h: h, writes: make(chan string, 64)}
	t.clear()
	return t
}

func (t *vterm) clear() {
	t.cells = make([][]string, t.h)
	for i := range t.cells {
		t.cells[i] = make([]string, t.w)
		for j := range t.cells[i] {
			t.cells[i][j] = " "
		}
	}
}

func (t *vterm) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bytes += len(p)
	s := string(p)
	for len(s) > 0 {
		if strings.HasPrefix(s, "\x1b[") {
			end := strings.IndexAny(s[2:], "HJKhlm") + 2
			params, final := s[2:end], s[end]
			s = s[end+1:]
			switch final {
			case 'H':
				t.row, t.col = 0, 0
				if r, c, ok := strings.Cut(params, ";"); ok {
					ri, _ := strconv.Atoi(r)
					ci, _ := strconv.Atoi(c)
					t.row, t.col = ri-1, ci-1
				}
			case 'K':
				for j := t.col; j < t.w; j++ {
					t.cells[t.row][j] = " "
				}
			case 'J':
				if params == "2" {
					t.clear()
				}
			}
			continue
		}
		r := []rune(s)[0]
		s = s[len(string(r)):]
		cw := ansi.StringWidth(string(r))
		if t.col+cw > t.w {
			continue // a Screen never writes past the edge
		}
		t.cells[t.row][t.col] = string(r)
		if cw == 2 {
			t.cells[t.row][t.col+1] = ""
		}
		t.col += cw
	}
	t.writes <- string(p)
	return len(p), nil
}

// lines returns the screen's rows, trailing blanks cut.
func (t *vterm) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, row := range t.cells {
		out = append(out, strings.TrimRight(strings.Join(row, ""), " "))
	}
	return out
}

func want(t *testing.T, tm *vterm, rows ...string) {
	t.Helper()
	got := tm.lines()
	for i := range got {
		w := ""
		if i < len(rows) {
			w = rows[i]
		}
		if got[i] != w {
			t.Errorf("row %d = %q, want %q", i+1, got[i], w)
		}
	}
}

func next(t *testing.T, tm *vterm) string {
	t.Helper()
	select {
	case w := <-tm.writes:
		return w
	case <-time.After(2 * time.Second):
		t.Fatal("nothing written")
		return ""
	}
}

func nothing(t *testing.T, tm *vterm, within time.Duration) {
	t.Helper()
	select {
	case w := <-tm.writes:
		t.Fatalf("wrote %q; want nothing", w)
	case <-time.After(within):
	}
}

func TestScreenWritesOnlyWhatChanged(t *testing.T) {
	tm := newVterm(20, 5)
	s := New(tm, 1000)
	s.Resize(20, 5)
	s.Draw("alpha\n\x1b[1mbeta\x1b[0m\ngamma")
	first := next(t, tm)
	if !strings.HasPrefix(first, ansi.EraseEntireScreen) {
		t.Errorf("the first frame does not clear the screen: %q", first)
	}
	want(t, tm, "alpha", "beta", "gamma")

	time.Sleep(2 * time.Millisecond)
	s.Draw("alpha\n\x1b[1mbeta\x1b[0m\nGAMMA!")
	if w := next(t, tm); strings.Contains(w, "alpha") || strings.Contains(w, "beta") || !strings.Contains(w, "\x1b[3;1HGAMMA!") {
		t.Errorf("one changed row wrote %q; want only row 3", w)
	}
	want(t, tm, "alpha", "beta", "GAMMA!")

	// The same frame again writes nothing: an idle screen costs nothing.
	s.Draw("alpha\n\x1b[1mbeta\x1b[0m\nGAMMA!")
	nothing(t, tm, 20*time.Millisecond)

	// A shorter frame clears the rows it no longer has.
	s.Draw("one")
	next(t, tm)
	want(t, tm, "one")
}

func TestScreenFitsTheTerminal(t *testing.T) {
	tm := newVterm(10, 3)
	s := New(tm, 1000)
	s.Resize(10, 3)
	// Too wide rows are cut at the edge, wide characters whole; a row as
	// wide as the terminal is not erased after (its last cell would go);
	// rows below the terminal leave the top ones out, as Bubble Tea does.
	s.Draw("zero\n0123456789AB\n한국어한국어\n" + strings.Repeat("x", 10))
	next(t, tm)
	want(t, tm, "0123456789", "한국어한국", "xxxxxxxxxx")
}

func TestScreenResizeRepaints(t *testing.T) {
	tm := newVterm(20, 4)
	s := New(tm, 1000)
	s.Resize(20, 4)
	s.Draw("a\nb")
	next(t, tm)
	time.Sleep(2 * time.Millisecond)
	// The terminal lost what it showed (as one may on a resize): the same
	// frame after Resize is painted whole.
	tm.mu.Lock()
	tm.clear()
	tm.mu.Unlock()
	s.Resize(20, 4)
	s.Draw("a\nb")
	next(t, tm)
	want(t, tm, "a", "b")
}

// Frames closer than the interval are written once it has passed, the
// newest of them.
func TestScreenPacesFrames(t *testing.T) {
	tm := newVterm(20, 3)
	s := New(tm, 10) // 100 ms apart
	s.Resize(20, 3)
	s.Draw("1")
	next(t, tm)
	start := time.Now()
	s.Draw("2")
	s.Draw("3")
	next(t, tm)
	if took := time.Since(start); took < 80*time.Millisecond {
		t.Errorf("the next frame came %v after the last; want 100 ms", took)
	}
	want(t, tm, "3")
	nothing(t, tm, 150*time.Millisecond)
}

func TestScreenOpenAndClose(t *testing.T) {
	tm := newVterm(10, 2)
	s := New(tm, 10)
	s.Open()
	if w := next(t, tm); !strings.Contains(w, ansi.SetAltScreenSaveCursorMode) || !strings.Contains(w, ansi.HideCursor) {
		t.Errorf("Open wrote %q", w)
	}
	s.Draw("x")
	next(t, tm)
	s.Draw("y") // waits for the interval, then finds the screen closed
	s.Close()
	if w := next(t, tm); !strings.Contains(w, ansi.ResetAltScreenSaveCursorMode) || !strings.Contains(w, ansi.ShowCursor) {
		t.Errorf("Close wrote %q", w)
	}
	nothing(t, tm, 150*time.Millisecond)
	if s.Close() != nil {
		t.Error("a second Close failed")
	}
}
