package eventstream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T, query string, def time.Duration, status func() any) (*Stream, *httptest.ResponseRecorder) {
	t.Helper()
	w := httptest.NewRecorder()
	s, err := Start(w, httptest.NewRequest(http.MethodGet, "/debug/klab/events"+query, nil), def, status)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, w
}

func TestStartRejectsBadParameters(t *testing.T) {
	status := func() any { return "ok" }
	for _, tc := range []struct{ query, names string }{
		{"?quiet=abc", "quiet="},
		{"?quiet=-5ms", "quiet="},
		{"?quiet=2001ms", "quiet="},
		{"?status=always", "status="},
	} {
		w := httptest.NewRecorder()
		if _, err := Start(w, httptest.NewRequest(http.MethodGet, "/debug/klab/events"+tc.query, nil), 0, status); err == nil {
			t.Errorf("%s accepted", tc.query)
		}
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tc.names) {
			t.Errorf("%s: %d %q; want 400 naming %s", tc.query, w.Code, w.Body.String(), tc.names)
		}
	}
	// A stream without a status cannot end its flushes with one.
	w := httptest.NewRecorder()
	if _, err := Start(w, httptest.NewRequest(http.MethodGet, "/debug/klab/events?status=flush", nil), 0, nil); err == nil || w.Code != http.StatusBadRequest {
		t.Errorf("status=flush without a status: %v, %d", err, w.Code)
	}
}

func TestHoldZeroFlushesEachEvent(t *testing.T) {
	s, w := start(t, "", 0, nil)
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
	s, w := start(t, "?quiet=2s", 0, nil)
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

func TestStatusLineEndsEachFlush(t *testing.T) {
	calls := 0
	s, w := start(t, "?quiet=1s&status=flush", 0, func() any { calls++; return map[string]int{"calls": calls} })
	s.Send(1, false)
	s.Send(2, true)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	// Nothing waited: no status line.
	s.Flush()
	s.Send(3, false)
	s.Flush()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(w.Body.String()), "\n") {
		var st StatusLine
		if json.Unmarshal([]byte(l), &st) == nil && st.Kind == StatusKind {
			if st.Time.IsZero() {
				t.Errorf("status line without a time: %s", l)
			}
			b, _ := json.Marshal(st.Status)
			l = "status " + string(b)
		}
		lines = append(lines, l)
	}
	want := `1|2|status {"calls":1}|3|status {"calls":2}`
	if got := strings.Join(lines, "|"); got != want {
		t.Errorf("stream %s, want %s", got, want)
	}
}

// numbered is an event as the components' streams carry them.
type numbered struct {
	Header
	Kind string `json:"kind"`
}

func TestHubReplayAndFanOut(t *testing.T) {
	const retain = 8
	h := NewHub(retain, (*numbered).Stamp)
	for range retain + 10 {
		h.Publish(numbered{Kind: "old"})
	}
	past, live, cancel := h.Subscribe(retain + 5)
	defer cancel()
	if len(past) != 5 || past[0].Seq != retain+6 || past[0].Time.IsZero() {
		t.Fatalf("replayed %d events starting at %+v, want 5 from %d", len(past), past[0], retain+6)
	}
	all, _, cancelAll := h.Subscribe(0)
	cancelAll()
	if len(all) != retain || all[0].Seq != 11 {
		t.Fatalf("replay of everything kept %d events from %d, want %d from 11", len(all), all[0].Seq, retain)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h.Publish(numbered{Header: Header{Time: at}, Kind: "new"})
	select {
	case e := <-live:
		if e.Kind != "new" || e.Seq != retain+11 || !e.Time.Equal(at) {
			t.Errorf("live event %+v; want seq %d at the time it was given", e, retain+11)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no live event")
	}
	// A cancelled subscriber is sent nothing more.
	cancel()
	h.Publish(numbered{Kind: "after"})
	select {
	case e := <-live:
		t.Errorf("event %+v after cancel", e)
	default:
	}
}

func TestUnnumberedHubReplaysAll(t *testing.T) {
	h := NewHub[string](3, nil)
	for _, s := range []string{"a", "b", "c", "d"} {
		h.Publish(s)
	}
	past, _, cancel := h.Subscribe(100)
	cancel()
	if strings.Join(past, "") != "bcd" {
		t.Errorf("replayed %q, want the three kept", past)
	}
}

func TestServe(t *testing.T) {
	h := NewHub(16, (*numbered).Stamp)
	h.Publish(numbered{Kind: "one"})
	h.Publish(numbered{Kind: "two"})
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Serve(w, r, h, Options[numbered]{
			Routine: func(e numbered) bool { return e.Kind != "news" },
			Status:  func() any { return "fine" },
			Done:    done,
		})
	}))
	defer srv.Close()

	for _, q := range []string{"?since=x", "?quiet=1h", "?status=now"} {
		resp, err := http.Get(srv.URL + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", q, resp.Status)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"?since=1&quiet=1s&status=flush", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("stream ended: %v", lines.Err())
		}
		return lines.Text()
	}
	// The replay after 1, then its status line.
	if l := next(); !strings.Contains(l, `"seq":2`) || !strings.Contains(l, `"kind":"two"`) {
		t.Errorf("replayed %s, want event 2", l)
	}
	if l := next(); !strings.Contains(l, `"kind":"status"`) || !strings.Contains(l, `"status":"fine"`) {
		t.Errorf("after the replay %s, want the status line", l)
	}
	// News comes within NewsWait, and takes the routine event that
	// waits for the beat with it.
	h.Publish(numbered{Kind: "routine"})
	h.Publish(numbered{Kind: "news"})
	for _, want := range []string{`"kind":"routine"`, `"kind":"news"`, `"kind":"status"`} {
		if l := next(); !strings.Contains(l, want) {
			t.Errorf("got %s, want %s", l, want)
		}
	}
	// Done ends the stream.
	close(done)
	if lines.Scan() {
		t.Errorf("stream went on after Done: %s", lines.Text())
	}
}

// beat is an event of a stream with series: a repeat of the others of its
// pair.
type beat struct {
	Header
	Pair    string `json:"pair"`
	Count   int    `json:"count,omitempty"`
	Skipped uint64 `json:"skipped,omitempty"`
}

func TestSeriesFoldRepeatsOfAFlush(t *testing.T) {
	h := NewHub(64, (*beat).Stamp)
	opts := Options[beat]{
		Series: func(b beat) (string, bool) { return b.Pair, b.Pair != "" },
		Summarize: func(b *beat, n int, skipped uint64) {
			if n > 1 {
				b.Count = n
			}
			b.Skipped = skipped
		},
	}
	for _, pair := range []string{"a", "b", "", "a", "b", "a", ""} {
		h.Publish(beat{Pair: pair})
	}
	read := func(query string) []beat {
		t.Helper()
		w := httptest.NewRecorder()
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the replay is written before the stream looks at ctx
		Serve(w, httptest.NewRequest(http.MethodGet, "/debug/klab/events"+query, nil).WithContext(ctx), h, opts)
		var out []beat
		for _, l := range strings.Split(strings.TrimSpace(w.Body.String()), "\n") {
			var b beat
			if err := json.Unmarshal([]byte(l), &b); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			out = append(out, b)
		}
		return out
	}
	describe := func(bs []beat) string {
		var parts []string
		for _, b := range bs {
			parts = append(parts, fmt.Sprintf("%d%s×%d-%d", b.Seq, b.Pair, b.Count, b.Skipped))
		}
		return strings.Join(parts, " ")
	}
	// 1 a, 2 b, 3 -, 4 a, 5 b, 6 a, 7 -: a's and b's last stand for them,
	// and what they leave out is skipped on the next line.
	if got, want := describe(read("?quiet=1s&series=true")), "3×0-2 5b×2-1 6a×3-0 7×0-0"; got != want {
		t.Errorf("with series: %s, want %s", got, want)
	}
	if got, want := describe(read("?quiet=1s")), "1a×0-0 2b×0-0 3×0-0 4a×0-0 5b×0-0 6a×0-0 7×0-0"; got != want {
		t.Errorf("without series: %s, want %s", got, want)
	}
	w := httptest.NewRecorder()
	Serve(w, httptest.NewRequest(http.MethodGet, "/debug/klab/events?series=maybe", nil), h, opts)
	if w.Code != http.StatusBadRequest {
		t.Errorf("series=maybe: %d, want 400", w.Code)
	}
	w = httptest.NewRecorder()
	Serve(w, httptest.NewRequest(http.MethodGet, "/debug/klab/events?series=true", nil), h, Options[beat]{})
	if w.Code != http.StatusBadRequest {
		t.Errorf("series on a stream without: %d, want 400", w.Code)
	}
}
