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
