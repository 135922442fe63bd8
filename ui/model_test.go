package ui

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/workspace"
)

// testHome gives the test its own KLAB_HOME, short enough for the control
// socket's path.
func testHome(t *testing.T) {
	t.Helper()
	home, err := os.MkdirTemp("", "klab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("KLAB_HOME", home)
	t.Setenv("KLAB_CLUSTER", "")
	// The home screen's runtime is auto: with no engine answering, it is
	// the local runtime, whatever this machine runs.
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(home, "no-docker.sock"))
}

func newModel(t *testing.T) *Model {
	t.Helper()
	c := uitest.Setup(t, i18n.English)
	spec := lab.DefaultSpec()
	spec.Name, spec.NoFsync = "demo", true
	m := NewModel(context.Background(), c, Options{Spec: spec}, slog.New(slog.DiscardHandler))
	m.savePrefs = false
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	return m
}

func TestLanguageSwitchKeepsState(t *testing.T) {
	m := newModel(t)
	info, st := uitest.Raft(3)
	m.Update(labio.ReadyMsg{Lab: uitest.NewLab(info, true)})
	// Replace the observed state with the fixture: Start's Observer has
	// nothing to observe here.
	m.ws.Stop()
	*m.ws.State() = *st
	m.Update(uitest.Key("1"))
	before := m.View()
	m.Update(uitest.Key("L"))
	after := m.View()
	if i18n.Current() != i18n.Korean {
		t.Fatalf("language = %s, want ko", i18n.Current())
	}
	if m.ws.ViewID() != workspace.ViewOverview {
		t.Errorf("the view changed with the language")
	}
	for _, want := range []string{"개요", "마스터 3대", "정상", "English"} {
		if !strings.Contains(after, want) {
			t.Errorf("after L the screen lacks %q:\n%s", want, after)
		}
	}
	if before == after || !strings.Contains(before, "Overview") {
		t.Errorf("before L the screen was not English:\n%s", before)
	}
	m.Update(uitest.Key("L"))
	if i18n.Current() != i18n.English {
		t.Errorf("second L: language = %s", i18n.Current())
	}
}

func TestFullHelp(t *testing.T) {
	m := newModel(t)
	m.Update(uitest.Key("?"))
	got := m.View()
	uitest.CheckFrame(t, got, 120, 40)
	for _, want := range []string{"Keys", "quit", "한국어"} {
		if !strings.Contains(got, want) {
			t.Errorf("help lacks %q:\n%s", want, got)
		}
	}
	m.Update(uitest.Key("esc"))
	if m.help {
		t.Errorf("esc did not close the help")
	}
	m.Update(uitest.Key("q"))
	// q closes help first; on the home screen, a second q quits.
	if _, cmd := m.Update(uitest.Key("q")); cmd == nil {
		t.Errorf("q on the home screen did not quit")
	}
}

// TestHomeStartWorkspace drives the real program as a user would: start a
// cluster from the home screen, watch its creation steps, land in the Raft
// view with a real leader, kill it, see a new one, and quit keeping the
// data.
func TestHomeStartWorkspace(t *testing.T) {
	testenv.EndToEnd(t)
	testHome(t)
	m := newModel(t)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	// Each wait reads the output that arrived since the previous one:
	// the renderer only repaints lines that changed.
	waitFor := func(what string, cond func(string) bool) {
		t.Helper()
		t.Logf("waiting for %s", what)
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return cond(string(b)) },
			teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	}
	contains := func(s string) func(string) bool { return func(out string) bool { return strings.Contains(out, s) } }

	waitFor("the home screen", contains("Start cluster demo with 3 masters"))
	tm.Send(uitest.Key("enter"))
	waitFor("a leader in the Raft view", contains("★ leader master-"))
	tm.Send(uitest.Key("k"))
	waitFor("the kill reported", contains("Killed master-"))
	// The first leader leads term 2 (the pre-vote does not raise the
	// term); the next one leads a later term.
	newLeader := regexp.MustCompile(`★ leader master-\d, term ([3-9]|\d\d)`)
	waitFor("a new leader in term 3 or later", newLeader.MatchString)
	tm.Send(uitest.Key("q"))
	waitFor("the quit dialog", contains("Quit klab?"))
	tm.Send(uitest.Key("k"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(30*time.Second))
	final := tm.FinalModel(t).(*Model)
	if closed, err := final.ws.Closed(); !closed || err != nil {
		t.Errorf("cluster closed = %v, err %v", closed, err)
	}
	if _, err := lab.LoadInfo("demo"); err != nil {
		t.Errorf("the kept cluster's cluster.json is gone: %v", err)
	}
	var out bytes.Buffer
	if err := final.cleanup(&out); err != nil || !strings.Contains(out.String(), "data is kept") {
		t.Errorf("cleanup = %v, printed %q", err, out.String())
	}
}
