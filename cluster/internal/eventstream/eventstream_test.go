package eventstream

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T, query string, def time.Duration) (*Stream, *httptest.ResponseRecorder) {
	t.Helper()
	w := httptest.NewRecorder()
	s, err := Start(w, httptest.NewRequest(http.MethodGet, "/debug/klab/events"+query, nil), def)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, w
}

func TestStartRejectsABadQuiet(t *testing.T) {
	for _, q := range []string{"abc", "-5ms", "2001ms"} {
		w := httptest.NewRecorder()
		if _, err := Start(w, httptest.NewRequest(http.MethodGet, "/debug/klab/events?quiet="+q, nil), 0); err == nil {
			t.Errorf("quiet=%s accepted", q)
		}
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "quiet=") {
			t.Errorf("quiet=%s: %d %q; want 400 naming quiet", q, w.Code, w.Body.String())
		}
	}
}

func TestHoldZeroFlushesEachEvent(t *testing.T) {
	s, w := start(t, "", 0)
	if err := s.Send(map[string]int{"seq": 1}, false); err != nil {
		t.Fatal(err)
	}
	if !w.Flushed || w.Body.String() != "{\"seq\":1}\n" {
		t.Errorf("flushed %v, body %q; want the event flushed at once", w.Flushed, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestRoutineWaitsForTheBeatAndNewsDoesNot(t *testing.T) {
	s, w := start(t, "?quiet=2s", 0)
	// Just after a multiple of 2 s, so the next is far.
	time.Sleep(time.Until(time.Now().Truncate(2 * time.Second).Add(2*time.Second + 10*time.Millisecond)))
	sent := time.Now()
	s.Send("routine", false)
	if w.Flushed {
		t.Fatal("routine traffic flushed at once")
	}
	select {
	case <-s.Due():
		t.Fatal("routine traffic due before the beat")
	case <-time.After(100 * time.Millisecond):
	}
	s.Send("news", true)
	select {
	case <-s.Due():
		if late := time.Since(sent); late > time.Second {
			t.Errorf("news due after %v; want about %v", late, 100*time.Millisecond+NewsWait)
		}
		s.Flush()
	case <-time.After(1900 * time.Millisecond):
		t.Fatal("news not due before the beat")
	}
	if !w.Flushed || w.Body.String() != "\"routine\"\n\"news\"\n" {
		t.Errorf("flushed %v, body %q; want both events", w.Flushed, w.Body.String())
	}
}

func TestFoldRewritesEachBatch(t *testing.T) {
	s, w := start(t, "?quiet=1s", 0)
	var batches [][]any
	s.Fold(func(b []any) []any {
		batches = append(batches, append([]any(nil), b...))
		return b[len(b)-1:]
	})
	s.Send(1, false)
	s.Send(2, false)
	s.Send(3, true)
	if w.Body.Len() != 0 {
		t.Fatalf("written before the flush: %q", w.Body.String())
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Send(4, false)
	s.Flush()
	// An empty batch is not folded.
	s.Flush()
	if w.Body.String() != "3\n4\n" || len(batches) != 2 || len(batches[0]) != 3 || len(batches[1]) != 1 {
		t.Errorf("body %q after folding %v; want the last of the first batch, then 4", w.Body.String(), batches)
	}

	// Without a hold nothing is batched, so nothing is folded.
	s0, w0 := start(t, "", 0)
	s0.Fold(func([]any) []any { t.Error("folded without a hold"); return nil })
	s0.Send(1, false)
	s0.Send(2, false)
	if w0.Body.String() != "1\n2\n" {
		t.Errorf("body %q, want both", w0.Body.String())
	}
}
