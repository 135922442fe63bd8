package record

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// TestScrubAllViews reads a hand-written recording of a pod scheduled
// onto worker-1 behind a Service, with its events, and draws every view
// at two moments: before the pod existed none shows it; after, each does
// in its own way. Read once, scrubbed forward, back and forward again,
// the frames are the same every time.
func TestScrubAllViews(t *testing.T) {
	for _, lang := range []i18n.Lang{i18n.English, i18n.Korean} {
		t.Run(string(lang), func(t *testing.T) {
			c := uitest.Setup(t, lang)
			sessions, err := Load("testdata/pod-scheduled.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			s := sessions[0]
			if s.Version != 2 || len(s.Tapes) == 0 {
				t.Fatalf("read version %d, %d tapes", s.Version, len(s.Tapes))
			}
			before, after := 1800*time.Millisecond, s.Duration()
			frames := map[time.Duration]map[string]string{before: {}, after: {}}
			for _, at := range []time.Duration{before, after} {
				for _, view := range ViewNames {
					f, err := Frame(c, s, view, at, 100, 30)
					if err != nil {
						t.Fatal(err)
					}
					uitest.CheckFrame(t, f, 100, 30)
					frames[at][view] = f
					when := "before"
					if at == after {
						when = "after"
					}
					uitest.Golden(t, "pod-"+view+"-"+when+"-"+string(lang), f)
				}
			}
			// The Overview counts the pod on worker-1 only after it was
			// bound there; the others name it.
			for _, view := range ViewNames {
				if view != ViewRaft && frames[before][view] == frames[after][view] {
					t.Errorf("the %s view draws the same before and after the pod", view)
				}
			}
			for view, want := range map[string]string{ViewScheduler: "default/web-1", ViewEvents: "pod/web-1", ViewProxy: "default/web"} {
				if !strings.Contains(frames[after][view], want) {
					t.Errorf("after the pod, the %s view lacks %q:\n%s", view, want, frames[after][view])
				}
				if strings.Contains(frames[before][view], want) {
					t.Errorf("before the pod, the %s view shows %q:\n%s", view, want, frames[before][view])
				}
			}

			if lang == i18n.English {
				// Before the pod the Overview counts none; after, one
				// running.
				if !strings.Contains(frames[before][ViewOverview], "0 pods") || !strings.Contains(frames[after][ViewOverview], "1 pods ●1") {
					t.Errorf("the Overview's pods before and after:\n%s\n---\n%s", frames[before][ViewOverview], frames[after][ViewOverview])
				}
			}

			// A player scrubbing back and forth draws the same frames.
			p, err := NewPlayer(c, s)
			if err != nil {
				t.Fatal(err)
			}
			p.Update(sizeMsg(100, 30))
			for _, at := range []time.Duration{after, before, 0, after, before} {
				p.Seek(at)
				for _, view := range []string{ViewOverview, ViewScheduler, ViewEvents} {
					p.Show(view)
					if got := p.View(); got != frames[at][view] && frames[at] != nil {
						t.Errorf("the player at %s draws %s unlike Frame:\n%s\n---\n%s", at, view, got, frames[at][view])
					}
				}
			}
		})
	}
}

func sizeMsg(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// TestReadVersion1 reads a recording of the first format, the Observer's
// stream alone, and refuses a view's line in it: version 1 had none.
func TestReadVersion1(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	head := `{"klab":"recording","v":1,"start":"2026-11-29T08:00:00Z","info":{"name":"old","members":[{"name":"master-1","id":"1001"}]}}` + "\n"
	status := `{"t":1000,"k":"s","n":1,"m":"master-1","s":{"id":"1001","name":"master-1","state":"StateLeader","term":4,"leader":"1001"}}` + "\n"
	sessions, err := Read(strings.NewReader(head+status), "old.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := sessions[0]
	if s.Version != 1 || len(s.Observations) != 1 || len(s.Tapes) != 0 {
		t.Fatalf("read version %d, %d observations, %d tapes", s.Version, len(s.Observations), len(s.Tapes))
	}
	f, err := Frame(c, s, ViewRaft, s.Duration(), 100, 20)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f, "leader master-1, term 4") {
		t.Errorf("the version 1 session's Raft view:\n%s", f)
	}
	tape := `{"t":2000,"k":"v","w":"overview","d":[]}` + "\n"
	_, err = Read(strings.NewReader(head+status+tape), "old.jsonl")
	if err == nil || !strings.Contains(err.Error(), "old.jsonl:3") {
		t.Errorf("a view's line in a version 1 recording: err = %v, want one naming old.jsonl:3", err)
	}
	// A tape a view cannot read is named by its line.
	bad := `{"klab":"recording","v":2,"start":"2026-11-29T08:00:00Z","info":{"name":"new","members":[{"name":"master-1","id":"1001"}]}}` + "\n" +
		`{"t":2000,"k":"v","w":"scheduler","d":[{"n":"master-1"}]}` + "\n"
	sessions, err = Read(strings.NewReader(bad), "new.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := sessions[0].Check(); err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "scheduler") {
		t.Errorf("Check of an unreadable tape: err = %v, want one naming line 2 and the scheduler view", err)
	}
}
