package workspace

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/record"
)

// TestTimelineKeys: T pauses the views on what was recorded, the arrows
// move the moment (the Raft view drawn as it was then, the live one left
// as it is), and esc brings the live views back; with nothing recorded, T
// says so.
func TestTimelineKeys(t *testing.T) {
	for _, lang := range []i18n.Lang{i18n.English, i18n.Korean} {
		t.Run(string(lang), func(t *testing.T) {
			c := uitest.Setup(t, lang)
			info := uitest.Info("tl", 3)
			st := labstate.New(info.Name, info.Members)
			live := record.NewLive(nil, info, time.Now().Add(-3*time.Second))
			m := New(c, uitest.NewLab(info, false), st, Options{Recording: live})
			m.SetSize(120, 40)

			press(m, "T")
			if m.Rewound() || m.status.text() != i18n.T("record.nothing") {
				t.Fatalf("T with nothing recorded: rewound %v, status %q", m.Rewound(), m.status.text())
			}

			// Term 4 is observed and taken now, two seconds after a term 3.
			status := func(term uint64, at time.Time) lab.Observation {
				return &lab.StatusObservation{Observed: lab.Observed{Member: "master-1", At: at},
					Status: etcd.Status{ID: info.Members[0].ID, Name: "master-1", State: "StateLeader", Term: term, Leader: info.Members[0].ID}}
			}
			m.Update(labio.ObservationsMsg{Batch: []lab.Observation{status(3, time.Now())}})
			time.Sleep(1500 * time.Millisecond)
			m.Update(labio.ObservationsMsg{Batch: []lab.Observation{status(4, time.Now())}})
			term := func(n int) string { return i18n.T("ui.raft.sum.leader", "master-1", n) }
			if !strings.Contains(m.View(), term(4)) {
				t.Fatalf("live view lacks %q:\n%s", term(4), m.View())
			}

			press(m, "T")
			if !m.Rewound() || !strings.Contains(m.View(), i18n.T("record.rewound")) {
				t.Fatalf("T did not rewind:\n%s", m.View())
			}
			press(m, "left")
			if v := m.View(); !strings.Contains(v, term(3)) || strings.Contains(v, term(4)) {
				t.Errorf("a second back, the Raft view is not term 3's:\n%s", v)
			}
			press(m, "esc")
			if v := m.View(); m.Rewound() || !strings.Contains(v, term(4)) {
				t.Errorf("esc did not bring back the live view:\n%s", v)
			}
		})
	}
}

// TestTimelineWindow: a workspace keeps only the latest moments of its
// session; its timeline says from when, and home and the arrows go no
// further back than that.
func TestTimelineWindow(t *testing.T) {
	for _, lang := range []i18n.Lang{i18n.English, i18n.Korean} {
		t.Run(string(lang), func(t *testing.T) {
			c := uitest.Setup(t, lang)
			info := uitest.Info("tlw", 3)
			st := labstate.New(info.Name, info.Members)
			start := time.Now().Add(-10 * time.Minute)
			live := record.NewLive(nil, info, start)
			live.SetWindow(record.Window{Span: 3 * time.Minute})
			m := New(c, uitest.NewLab(info, false), st, Options{Recording: live})
			m.SetSize(120, 40)
			// Ten minutes of the runtime's reports, then a status now.
			for at := time.Duration(0); at < 10*time.Minute; at += 20 * time.Second {
				state := []string{"running", "stopped"}[int(at/(20*time.Second))%2]
				live.Tape(record.Components, start.Add(at), []byte(`[{"ref":{"node":"master-1","component":"etcd"},"state":"`+state+`"}]`))
			}
			m.Update(labio.ObservationsMsg{Batch: []lab.Observation{&lab.StatusObservation{
				Observed: lab.Observed{Member: "master-1", At: time.Now()},
				Status:   etcd.Status{ID: info.Members[0].ID, Name: "master-1", State: "StateLeader", Term: 3, Leader: info.Members[0].ID}}}})
			s := live.Session()
			from := s.From()
			if from < 7*time.Minute || s.Duration()-from > 3*time.Minute {
				t.Fatalf("the session keeps %s to %s, want the last 3 minutes of 10", from, s.Duration())
			}

			press(m, "T")
			label := i18n.T("record.window", fmt.Sprintf("%d:%04.1f", int(from.Minutes()), (from%time.Minute).Seconds()))
			if !m.Rewound() || !strings.Contains(m.View(), label) {
				t.Fatalf("the rewound timeline does not say %q:\n%s", label, m.View())
			}
			// At the session's end the line fits, its moment drawn
			// last.
			for _, l := range strings.Split(m.View(), "\n") {
				if strings.Contains(l, label) && !strings.HasSuffix(strings.TrimRight(ansi.Strip(l), " │"), "●") {
					t.Errorf("the timeline's line is cut short:\n%s", l)
				}
			}
			press(m, "home")
			if m.rewind.at != from {
				t.Errorf("home went to %s, want the window's start %s", m.rewind.at, from)
			}
			press(m, "left", "[")
			if m.rewind.at != from {
				t.Errorf("before the window's start the timeline went to %s", m.rewind.at)
			}
		})
	}
}
