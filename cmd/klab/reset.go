package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

func newResetCmd() *cobra.Command {
	var (
		name, step, lesson, dir string
	)
	cmd := &cobra.Command{
		Use:   "reset --step <id|n>",
		Short: i18n.T("reset.short"),
		Long:  i18n.T("reset.long"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lab.ValidateName(name); err != nil {
				return err
			}
			if step == "" {
				return i18n.NewError("reset.err.no-step")
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
			l, err := resetLesson(name, lesson, all)
			if err != nil {
				return err
			}
			st, i := l.FindStep(step)
			if i < 0 {
				return i18n.NewError("reset.err.unknown-step", l.ID, step, l.StepList())
			}
			step = st.ID
			ctx, cancel := context.WithTimeout(cmd.Context(), snapshotTimeout)
			defer cancel()
			res, err := lab.ResetToStep(ctx, name, l.ID, step, stepIDs(l.Steps[i+1:]))
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), " ✓ "+i18n.T("reset.done", l.ID, step, i+1, len(l.Steps), res.Elapsed.Round(10*time.Millisecond), res.ClusterID, res.OldClusterID, res.Leader, res.Term))
			if pos, err := lab.ReadLessonPosition(name); err == nil && pos != nil && pos.Lesson == l.ID {
				fmt.Fprintln(cmd.OutOrStdout(), i18n.T("reset.workspace", name))
			}
			return nil
		},
	}
	addNameFlag(cmd, &name)
	cmd.Flags().StringVar(&step, "step", "", i18n.T("reset.flag.step"))
	cmd.Flags().StringVar(&lesson, "lesson", "", i18n.T("reset.flag.lesson"))
	cmd.Flags().StringVar(&dir, "lessons", "", i18n.T("notes.flag.lessons"))
	return cmd
}

// resetLesson is the lesson klab reset acts on: the one named, or the one
// the cluster's workspace shows.
func resetLesson(name, id string, all []*lessons.Lesson) (*lessons.Lesson, error) {
	if id == "" {
		pos, err := lab.ReadLessonPosition(name)
		if err != nil {
			return nil, err
		}
		if pos == nil {
			return nil, i18n.NewError("reset.err.no-lesson", name)
		}
		id = pos.Lesson
	}
	for _, l := range all {
		if l.ID == id {
			return l, nil
		}
	}
	return nil, i18n.NewError("notes.err.unknown-lesson", id)
}

// stepIDs lists the steps' ids.
func stepIDs(steps []*lessons.Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.ID
	}
	return out
}
