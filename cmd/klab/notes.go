package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

// notesPoll is how often klab notes looks for the workspace's step.
const notesPoll = 300 * time.Millisecond

func newNotesCmd() *cobra.Command {
	var (
		name string
		dir  string
		once bool
	)
	cmd := &cobra.Command{
		Use:   "notes",
		Short: i18n.T("notes.short"),
		Long:  i18n.T("notes.long"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := lab.StateDir(name); err != nil {
				return err
			}
			all, err := lessons.Embedded()
			if err != nil {
				return err
			}
			if dir != "" {
				pack, err := loadLessons(cmd, dir)
				if err != nil {
					return err
				}
				all = append(all, pack...)
			}
			return followNotes(cmd.Context(), cmd.OutOrStdout(), name, all, once, isTerminal(cmd.OutOrStdout()))
		},
	}
	addNameFlag(cmd, &name)
	cmd.Flags().StringVar(&dir, "lessons", "", i18n.T("notes.flag.lessons"))
	cmd.Flags().BoolVar(&once, "once", false, i18n.T("notes.flag.once"))
	return cmd
}

// followNotes prints the notes of the step the named cluster's workspace
// shows, again each time it moves, until ctx ends (or at once, once). On
// a terminal each print replaces the last, and the clocks move every
// second.
func followNotes(ctx context.Context, w io.Writer, name string, all []*lessons.Lesson, once, terminal bool) error {
	var (
		last    *lab.LessonPosition
		drawn   time.Time
		waiting bool
	)
	tick := time.NewTicker(notesPoll)
	defer tick.Stop()
	for {
		pos, err := lab.ReadLessonPosition(name)
		if err != nil {
			return err
		}
		switch {
		case pos == nil && once:
			return i18n.NewError("notes.err.none", name)
		case pos == nil:
			if !waiting {
				fmt.Fprintln(w, i18n.T("notes.waiting", name, name))
				waiting = true
			}
		case last == nil || *pos != *last || terminal && time.Since(drawn) >= time.Second:
			if terminal {
				fmt.Fprint(w, "\x1b[H\x1b[2J")
			}
			if err := writeNotes(w, *pos, all, time.Now()); err != nil {
				return err
			}
			if once {
				return nil
			}
			last, drawn = pos, time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// writeNotes prints the step at pos: where the lesson is and for how
// long, the step's instructor notes, and the step that follows.
func writeNotes(w io.Writer, pos lab.LessonPosition, all []*lessons.Lesson, now time.Time) error {
	var l *lessons.Lesson
	for _, c := range all {
		if c.ID == pos.Lesson {
			l = c
		}
	}
	if l == nil {
		return i18n.NewError("notes.err.unknown-lesson", pos.Lesson)
	}
	st, i := l.Step(pos.Step)
	if st == nil {
		return i18n.NewError("notes.err.unknown-step", pos.Lesson, pos.Step)
	}
	fmt.Fprintf(w, "%s\n", l.Title)
	fmt.Fprintf(w, "%s  %s\n", i18n.T("ui.lesson.step", i+1, len(l.Steps)), st.Title)
	fmt.Fprintln(w, i18n.T("notes.elapsed", clock(now.Sub(pos.Started)), clock(now.Sub(pos.StepStarted))))
	fmt.Fprintln(w)
	fmt.Fprintln(w, i18n.T("notes.notes"))
	if st.Notes == (lessons.Bilingual{}) {
		fmt.Fprintln(w, indent(i18n.T("notes.no-notes"), 2))
	} else {
		fmt.Fprintln(w, indent(plainText(strings.TrimSpace(st.Notes.String())), 2))
	}
	fmt.Fprintln(w)
	if i+1 < len(l.Steps) {
		next := l.Steps[i+1]
		fmt.Fprintln(w, i18n.T("notes.next", i18n.T("ui.lesson.step", i+2, len(l.Steps)), next.Title))
	} else {
		fmt.Fprintln(w, i18n.T("notes.last"))
	}
	return nil
}

// clock writes d as minutes and seconds.
func clock(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}
