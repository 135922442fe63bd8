package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/lessons/live"
)

// newLessonsCmd builds klab lessons: the lessons built into klab (or those
// in a folder, for a lesson's author), what they teach, and a check that
// their solutions still work against a real cluster.
func newLessonsCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "lessons",
		Short: i18n.T("lessons.cmd.short"),
		Long:  i18n.T("lessons.cmd.long"),
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return i18n.NewError("cli.err.unknown-command", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", "", i18n.T("lessons.cmd.flag.dir"))
	cmd.AddCommand(newLessonsListCmd(&dir), newLessonsShowCmd(&dir), newLessonsCheckCmd(&dir), newLessonsNewCmd(&dir))
	return cmd
}

// openProgress opens the student's progress file in klab's state dir.
func openProgress() (*lessons.Progress, error) {
	home, err := lab.Home()
	if err != nil {
		return nil, err
	}
	return lessons.OpenProgress(filepath.Join(home, lessons.ProgressFile))
}

// checkOutput refuses an --output other than human (the default's name)
// and json.
func checkOutput(output, human string) error {
	if output != human && output != "json" {
		return i18n.NewError("lessons.cmd.err.output", human, output)
	}
	return nil
}

func newLessonsListCmd(dir *string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: i18n.T("lessons.cmd.list.short"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "table"); err != nil {
				return err
			}
			all, err := loadLessons(cmd, *dir)
			if err != nil {
				return err
			}
			progress, err := openProgress()
			if err != nil {
				return err
			}
			if output == "json" {
				out := make([]lessonSummaryJSON, len(all))
				for i, l := range all {
					out[i] = summaryOf(l, progress)
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			var t table
			t.add(i18n.T("lessons.cmd.col.id"), i18n.T("lessons.cmd.col.title"), i18n.T("lessons.cmd.col.steps"), i18n.T("lessons.cmd.col.progress"))
			for _, l := range all {
				done, total := progress.Completed(l)
				t.add(l.ID, l.Title.String(), strconv.Itoa(total), i18n.T("lessons.cmd.progress", done, total))
			}
			t.write(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", i18n.T("lessons.cmd.flag.output"))
	return cmd
}

func newLessonsShowCmd(dir *string) *cobra.Command {
	var (
		output string
		notes  bool
	)
	cmd := &cobra.Command{
		Use:   "show <id>",
		Short: i18n.T("lessons.cmd.show.short"),
		Args:  exactArgs(1, "<id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "text"); err != nil {
				return err
			}
			all, err := loadLessons(cmd, *dir)
			if err != nil {
				return err
			}
			picked, err := pickLessons(all, args)
			if err != nil {
				return err
			}
			if output == "json" {
				progress, err := openProgress()
				if err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), lessonOf(picked[0], progress))
			}
			showLesson(cmd.OutOrStdout(), picked[0], notes)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", i18n.T("lessons.cmd.flag.output-show"))
	cmd.Flags().BoolVar(&notes, "notes", false, i18n.T("lessons.cmd.flag.notes"))
	return cmd
}

// showFrame prints what a lesson says of itself before its steps: what it
// teaches, what it assumes and how long it takes.
func showFrame(w io.Writer, f lessons.Frame) {
	if f.Minutes > 0 || f.Level != "" {
		var parts []string
		if f.Minutes > 0 {
			parts = append(parts, i18n.T("lessons.frame.minutes", f.Minutes))
		}
		if f.Level != "" {
			parts = append(parts, i18n.T("lessons.level."+string(f.Level)))
		}
		fmt.Fprintln(w, strings.Join(parts, " · "))
	}
	if len(f.Prerequisites) > 0 {
		fmt.Fprintln(w, i18n.T("lessons.frame.prerequisites", strings.Join(f.Prerequisites, ", ")))
	}
	if len(f.Objectives) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, i18n.T("lessons.frame.objectives"))
		for _, o := range f.Objectives {
			fmt.Fprintln(w, indent("- "+hangingIndent(strings.TrimSpace(o.String()), 2), 2))
		}
	}
}

// showRecap prints what a lesson says at its end: the recap and what to
// read next.
func showRecap(w io.Writer, f lessons.Frame) {
	if f.Recap == (lessons.Bilingual{}) && len(f.ReadNext) == 0 {
		return
	}
	fmt.Fprintln(w)
	if f.Recap != (lessons.Bilingual{}) {
		fmt.Fprintln(w, i18n.T("lessons.frame.recap"))
		fmt.Fprintln(w, indent(plainText(strings.TrimSpace(f.Recap.String())), 3))
	}
	if len(f.ReadNext) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, i18n.T("lessons.frame.read-next"))
		for _, r := range f.ReadNext {
			fmt.Fprintln(w, indent("- "+r.Title.String()+": "+r.URL, 3))
		}
	}
}

// showLesson prints a lesson as a student would read it, Markdown as
// plain text; with notes, each step's instructor notes too.
func showLesson(w io.Writer, l *lessons.Lesson, notes bool) {
	fmt.Fprintf(w, "%s (%s)\n", l.Title, l.ID)
	fmt.Fprintln(w, l.Summary.String())
	fmt.Fprintln(w, i18n.T("lessons.cmd.show.cluster", shapeText(l.Cluster)))
	showFrame(w, l.Frame)
	defer showRecap(w, l.Frame)
	for i, s := range l.Steps {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%d. %s\n", i+1, s.Title)
		if s.Cluster != nil {
			fmt.Fprintln(w, indent(i18n.T("lessons.cmd.show.step-cluster", shapeText(*s.Cluster)), 3))
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, indent(plainText(s.Body.String()), 3))
		if p := s.Predict; p != nil {
			// The question as the student meets it; the answers and
			// why only with the instructor's notes.
			fmt.Fprintln(w)
			fmt.Fprintln(w, indent(i18n.T("lessons.cmd.show.predict", strings.Join(strings.Fields(p.Question.String()), " ")), 3))
			for j, c := range p.Choices {
				line := fmt.Sprintf("%c) %s", 'a'+j, c.Text)
				if notes {
					mark := "✗"
					if c.Right {
						mark = "✓"
					}
					line += " " + mark + " " + strings.Join(strings.Fields(c.Why.String()), " ")
				}
				fmt.Fprintln(w, indent(line, 5))
			}
		}
		if len(s.Try) > 0 {
			fmt.Fprintln(w)
			fmt.Fprintln(w, indent(i18n.T("lessons.cmd.show.try"), 3))
			for _, c := range s.Try {
				fmt.Fprintln(w, indent(c.String(), 5))
			}
		}
		if len(s.Hints) > 0 {
			fmt.Fprintln(w)
			fmt.Fprintln(w, indent(i18n.T("lessons.cmd.show.hints"), 3))
			for _, h := range s.Hints {
				fmt.Fprintln(w, indent("- "+hangingIndent(strings.TrimSpace(h.String()), 2), 5))
			}
		}
		if s.Check != nil {
			fmt.Fprintln(w)
			fmt.Fprintln(w, indent(i18n.T("lessons.cmd.show.check"), 3))
			for _, m := range s.Check.Describe() {
				fmt.Fprintln(w, indent("- "+m.String(), 5))
			}
		}
		if notes && s.Notes != (lessons.Bilingual{}) {
			fmt.Fprintln(w)
			fmt.Fprintln(w, indent(i18n.T("lessons.cmd.show.notes"), 3))
			fmt.Fprintln(w, indent(plainText(strings.TrimSpace(s.Notes.String())), 5))
		}
	}
}

// shapeText describes a cluster shape.
func shapeText(s lessons.Shape) string {
	speed := s.Speed
	if speed == 0 {
		speed = 1
	}
	return i18n.T("lessons.cmd.shape", s.Masters, s.Workers, strconv.FormatFloat(speed, 'g', -1, 64))
}

// plainText turns a step's Markdown into text for a terminal: code blocks
// lose their fences and are indented, as Markdown itself would have them,
// and bold text loses its asterisks. Everything else reads well as it is.
func plainText(md string) string {
	var out []string
	inCode := false
	for _, line := range strings.Split(strings.TrimRight(md, "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			out = append(out, "    "+line)
			continue
		}
		out = append(out, strings.ReplaceAll(line, "**", ""))
	}
	return strings.Join(out, "\n")
}

// indent indents every non-empty line of s by n spaces.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}

// hangingIndent indents every line of s but the first by n spaces.
func hangingIndent(s string, n int) string {
	first, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return s
	}
	return first + "\n" + indent(rest, n)
}

func newLessonsCheckCmd(dir *string) *cobra.Command {
	var (
		runtimeName string
		timeout     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "check [id...]",
		Short: i18n.T("lessons.cmd.check.short"),
		Long:  i18n.T("lessons.cmd.check.long"),
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch runtimeName {
			case lab.RuntimeAuto, lab.RuntimeLocal, lab.RuntimeDocker:
			default:
				return i18n.NewError("spec.err.runtime", runtimeName)
			}
			if timeout <= 0 {
				return i18n.NewError("lessons.cmd.err.timeout", timeout.String())
			}
			all, err := loadLessons(cmd, *dir)
			if err != nil {
				return err
			}
			picked, err := pickLessons(all, args)
			if err != nil {
				return err
			}
			return checkLessons(cmd, picked, runtimeName, timeout)
		},
	}
	cmd.Flags().StringVar(&runtimeName, "runtime", lab.RuntimeAuto, i18n.T("lessons.cmd.flag.runtime"))
	cmd.Flags().DurationVar(&timeout, "timeout", live.DefaultStepTimeout, i18n.T("lessons.cmd.flag.timeout"))
	return cmd
}

// checkLessons checks each lesson on a cluster of its own, one after the
// other, printing each step as it ends.
func checkLessons(cmd *cobra.Command, picked []*lessons.Lesson, runtimeName string, timeout time.Duration) error {
	out := cmd.OutOrStdout()
	// Ctrl-C stops the check; the cluster is removed all the same.
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rt, _, err := lab.ResolveRuntime(ctx, runtimeName)
	if err != nil {
		return err
	}
	home, err := lab.Home()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return i18n.Wrap(err, "lab.err.state-dir", home)
	}
	// Solutions may write files (etcdctl snapshot save): they go to a
	// folder of klab's state dir, removed at the end. Its name is not a
	// cluster name, so klab down --all leaves it alone.
	work, err := os.MkdirTemp(home, ".lessons-check-")
	if err != nil {
		return i18n.Wrap(err, "lab.err.state-dir", home)
	}
	defer os.RemoveAll(work)
	r := &runner{dir: work}

	steps := 0
	for _, l := range picked {
		steps += len(l.Steps)
	}
	fmt.Fprintln(out, i18n.T("lessons.cmd.check.start", nLessons(len(picked)), nSteps(steps), rt))
	start := time.Now()
	failed, broken := 0, 0
	for _, l := range picked {
		fmt.Fprintln(out)
		fmt.Fprintf(out, "%s (%s)\n", l.Title, l.ID)
		rep, err := live.CheckLesson(ctx, l, live.CheckOptions{
			Runtime:     rt,
			Runner:      r.run,
			StepTimeout: timeout,
			BuildID:     dockerBuildID(),
			Progress:    func(res live.StepResult) { printStepResult(out, res) },
		})
		failed += len(l.Steps) - rep.Count(live.StepPassed)
		if err != nil {
			broken++
			fmt.Fprintln(out, " ✗ "+i18n.T("lessons.cmd.check.broken", l.ID, err))
			if ctx.Err() != nil {
				return i18n.NewError("lessons.cmd.err.interrupted")
			}
			continue
		}
		if rep.Passed() {
			fmt.Fprintln(out, " ✓ "+i18n.T("lessons.cmd.check.lesson-passed", nSteps(len(l.Steps)), formatDuration(rep.Duration)))
		} else {
			fmt.Fprintln(out, " ✗ "+i18n.T("lessons.cmd.check.lesson-failed", rep.Count(live.StepFailed)+rep.Count(live.StepNoAct), rep.Count(live.StepSkipped), nSteps(len(l.Steps)), formatDuration(rep.Duration)))
		}
	}
	fmt.Fprintln(out)
	if failed > 0 || broken > 0 {
		return i18n.NewError("lessons.cmd.err.failed", failed, nSteps(steps), formatDuration(time.Since(start)))
	}
	fmt.Fprintln(out, i18n.T("lessons.cmd.check.all-passed", nLessons(len(picked)), nSteps(steps), formatDuration(time.Since(start))))
	return nil
}

// nLessons and nSteps count lessons and steps in the current language
// ("1 lesson", "2 lessons").
func nLessons(n int) string { return i18n.N("lessons.cmd.n-lessons", n, n) }
func nSteps(n int) string   { return i18n.N("lessons.cmd.n-steps", n, n) }

// printStepResult prints one step's outcome: a line, and for a step that
// failed what the check last saw and what each command printed.
func printStepResult(w io.Writer, res live.StepResult) {
	title := fmt.Sprintf("%d. %s", res.Index+1, res.Step.Title)
	took := formatDuration(res.Duration)
	if res.Setup >= time.Second {
		took = i18n.T("lessons.cmd.check.took-setup", took, formatDuration(res.Setup))
	}
	switch res.Outcome {
	case live.StepPassed:
		fmt.Fprintf(w, " ✓ %s (%s)\n", title, took)
		return
	case live.StepSkipped:
		fmt.Fprintf(w, " - %s (%s)\n", title, i18n.T("lessons.cmd.check.skipped"))
		return
	case live.StepNoAct:
		fmt.Fprintf(w, " ✗ %s (%s)\n", title, took)
		fmt.Fprintln(w, indent(i18n.T("lessons.cmd.check.no-act"), 5))
		fmt.Fprintln(w, indent(res.Verdict.Text(i18n.Current()), 7))
		return
	}
	fmt.Fprintf(w, " ✗ %s (%s)\n", title, took)
	fmt.Fprintln(w, indent(i18n.T("lessons.cmd.check.verdict"), 5))
	fmt.Fprintln(w, indent(res.Verdict.Text(i18n.Current()), 7))
	for _, c := range res.Commands {
		status := i18n.T("lessons.cmd.check.cmd-ok")
		var exit exitError
		switch {
		case errors.As(c.Err, &exit):
			status = i18n.T("lessons.cmd.check.cmd-exit", exit.code)
		case c.Err != nil:
			status = i18n.Localize(c.Err, i18n.Current())
		}
		fmt.Fprintln(w, indent("$ "+c.Command.String()+"  # "+status, 5))
		if o := strings.TrimRight(c.Output, "\n"); o != "" {
			fmt.Fprintln(w, indent(o, 7))
		}
	}
}

// loadLessons loads the built-in lessons, or those under dir. Every problem
// in dir's files is printed, at its file, line and column, and the load
// fails: a lesson with a problem is not half-used.
func loadLessons(cmd *cobra.Command, dir string) ([]*lessons.Lesson, error) {
	var (
		all []*lessons.Lesson
		err error
	)
	if dir == "" {
		all, err = lessons.Embedded()
		dir = "lessons/content"
	} else {
		all, err = lessons.LoadDir(dir)
	}
	if err == nil {
		return all, nil
	}
	problems := lessons.LoadErrors(err)
	if len(problems) == 0 {
		return nil, i18n.Wrap(err, "lessons.cmd.err.load", dir)
	}
	for _, p := range problems {
		fmt.Fprintln(cmd.ErrOrStderr(), p.In(i18n.Current()))
	}
	if len(problems) == 1 {
		return nil, i18n.NewError("lessons.cmd.err.problem", dir)
	}
	return nil, i18n.NewError("lessons.cmd.err.problems", len(problems), dir)
}

// pickLessons returns the lessons named by ids, in that order, or all of
// them when there are none.
func pickLessons(all []*lessons.Lesson, ids []string) ([]*lessons.Lesson, error) {
	if len(ids) == 0 {
		return all, nil
	}
	byID := map[string]*lessons.Lesson{}
	known := make([]string, len(all))
	for i, l := range all {
		byID[l.ID] = l
		known[i] = l.ID
	}
	var out []*lessons.Lesson
	for _, id := range ids {
		l, ok := byID[id]
		if !ok {
			return nil, i18n.NewError("lessons.cmd.err.unknown", id, strings.Join(known, ", "))
		}
		out = append(out, l)
	}
	return out, nil
}
