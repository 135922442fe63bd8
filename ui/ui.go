// Package ui is klab's terminal user interface, built on Bubble Tea: a
// home screen to start a cluster or attach to a running one, then a
// workspace with live views (Overview, Raft) drawn from the cluster's
// Observer stream. It depends on cluster/lab; nothing in cluster/ imports
// it.
//
// The layout follows soft-serve's and glow's: one root model (model.go)
// holding the screens, one Styles (styles/) and one KeyMap (keys/) shared
// through common.Common, one folder per pane or view, and every I/O in a
// tea.Cmd (labio/). Views are pure functions of labstate.State, which the
// workspace folds from the Observer's stream; nothing ticks while nothing
// happens.
package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"google.golang.org/grpc/grpclog"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/prefs"
)

// LogFile is the TUI's log under klab's state dir: the terminal belongs to
// the screen, so nothing may be printed on it while the TUI runs.
const LogFile = "ui.log"

// Options configures Run.
type Options struct {
	// Spec is the home screen's default cluster shape (klab's flags).
	Spec lab.Spec
	// Out receives what is printed after the TUI ends (where the
	// cluster's data went).
	Out io.Writer
}

// closeTimeout bounds the clean stop of a cluster left running when the
// TUI ends without the quit dialog (a signal, a crash of the terminal).
const closeTimeout = 30 * time.Second

// Run runs the TUI until the user quits. A cluster started from it runs in
// this process and is stopped (its data kept, unless the user chose to
// remove it) before Run returns.
func Run(ctx context.Context, opts Options) error {
	i18n.SetLang(prefs.Language(prefs.Load()))
	logger, closeLog := openLog()
	defer closeLog()
	// gRPC logs to stderr by default; inside the TUI it would tear the
	// screen.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	// Ask the terminal for its background before Bubble Tea owns the
	// input: asking later would swallow the answer as key presses.
	lipgloss.HasDarkBackground()

	m := NewModel(ctx, common.New(), opts.Spec, logger)
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx))
	_, runErr := p.Run()
	if errors.Is(runErr, tea.ErrProgramKilled) && ctx.Err() != nil {
		runErr = nil // the context ended: a normal way out
	}
	return errors.Join(runErr, m.cleanup(opts.Out))
}

// cleanup stops what the TUI started and did not stop: a start in
// progress, or a cluster running in this process.
func (m *Model) cleanup(out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if st := m.home.InProgress(); st != nil {
		if l := st.Abort(); l != nil {
			return l.Close(ctx, false)
		}
		return nil
	}
	if m.ws == nil {
		return nil
	}
	m.ws.Stop()
	l := m.ws.Lab()
	if !l.Owned() {
		return nil
	}
	info := l.Info()
	closed, err := m.ws.Closed()
	if !closed {
		err = l.Close(ctx, false)
	}
	if out != nil {
		dir := stateDirOf(info.Name)
		if _, statErr := os.Stat(dir); statErr == nil {
			fmt.Fprintln(out, i18n.T("ui.bye.kept", info.Name, dir))
		} else {
			fmt.Fprintln(out, i18n.T("ui.bye.removed", info.Name))
		}
	}
	return err
}

// openLog opens the TUI's log file; without one, the log is discarded.
func openLog() (*slog.Logger, func()) {
	home, err := lab.Home()
	if err == nil {
		err = os.MkdirAll(home, 0o700)
	}
	if err != nil {
		return slog.New(slog.DiscardHandler), func() {}
	}
	f, err := os.OpenFile(filepath.Join(home, LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return slog.New(slog.DiscardHandler), func() {}
	}
	return slog.New(slog.NewTextHandler(f, nil)), func() { f.Close() }
}

func stateDirOf(name string) string {
	dir, err := lab.StateDir(name)
	if err != nil {
		return ""
	}
	return dir
}
