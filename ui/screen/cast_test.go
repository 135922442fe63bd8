package screen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCastIsAsciicastV2: a recording is a header object and then one
// event array per line, as asciinema reads them: the text played back is
// exactly what the terminal got, a character cut between two writes
// arrives whole in one event, times only grow, and a change of size is an
// "r" event that an unchanged size does not repeat.
func TestCastIsAsciicastV2(t *testing.T) {
	name := filepath.Join(t.TempDir(), "lab.cast")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(125 * time.Millisecond); return clock }
	c, err := newCast(f, 100, 30, now)
	if err != nil {
		t.Fatal(err)
	}
	var term bytes.Buffer
	out := c.Tee(&term)
	leader := []byte("리더 master-1")
	writes := [][]byte{[]byte("\x1b[?1049h\x1b[2J"), leader[:4], leader[4:], []byte(" ✓\r\n")}
	for i, w := range writes {
		if _, err := out.Write(w); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			c.Resize(100, 30) // the size it already has: nothing recorded
			c.Resize(120, 40)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() {
		t.Fatal("empty recording")
	}
	var header map[string]any
	if err := json.Unmarshal(sc.Bytes(), &header); err != nil {
		t.Fatalf("header %q is not a JSON object: %v", sc.Text(), err)
	}
	if header["version"] != 2.0 || header["width"] != 100.0 || header["height"] != 30.0 {
		t.Errorf("header = %v, want version 2, width 100, height 30", header)
	}
	if ts, ok := header["timestamp"].(float64); !ok || int64(ts) != time.Date(2026, 11, 29, 4, 0, 0, 125e6, time.UTC).Unix() {
		t.Errorf("header timestamp = %v", header["timestamp"])
	}
	var played strings.Builder
	var resizes []string
	last := -1.0
	events := 0
	for sc.Scan() {
		var ev []any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || len(ev) != 3 {
			t.Fatalf("event %q is not [time, code, data]: %v", sc.Text(), err)
		}
		at, ok1 := ev[0].(float64)
		code, ok2 := ev[1].(string)
		text, ok3 := ev[2].(string)
		if !ok1 || !ok2 || !ok3 {
			t.Fatalf("event %q has the wrong types", sc.Text())
		}
		if at < last {
			t.Errorf("event at %.3f s comes after one at %.3f s", at, last)
		}
		last = at
		events++
		switch code {
		case "o":
			if strings.ContainsRune(text, '\uFFFD') {
				t.Errorf("event %q holds a broken character", text)
			}
			played.WriteString(text)
		case "r":
			resizes = append(resizes, text)
		default:
			t.Errorf("event code %q, want o or r", code)
		}
	}
	if got := played.String(); got != term.String() {
		t.Errorf("played back %q, the terminal got %q", got, term.String())
	}
	if strings.Join(resizes, ",") != "120x40" {
		t.Errorf("resizes = %v, want [120x40]", resizes)
	}
	// One event per write (the cut character's first byte waited for the
	// rest, and "리" went alone), and the resize.
	if events != len(writes)+1 {
		t.Errorf("%d events, want %d", events, len(writes)+1)
	}
}

// TestCastCannotBeCreated: a recording that cannot be created is refused
// before the TUI starts, naming the file.
func TestCastCannotBeCreated(t *testing.T) {
	name := filepath.Join(t.TempDir(), "no-such-dir", "lab.cast")
	_, err := CreateCast(name, 80, 24)
	if err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("CreateCast(%s) = %v, want an error naming the file", name, err)
	}
}
