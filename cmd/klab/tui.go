package main

import (
	"os"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui"
	"github.com/klab-dev/klab/ui/cmdline"
)

// addTUIFlags gives bare `klab` the cluster flags of `klab up`: they are
// the home screen's defaults.
func addTUIFlags(cmd *cobra.Command, spec *lab.Spec, lesson *string, autoplay *bool, pack *string) {
	cmd.Flags().StringVar(lesson, "lesson", "", i18n.T("cli.flag.lesson"))
	cmd.Flags().StringVar(pack, "lessons", "", i18n.T("cli.flag.lessons"))
	cmd.Flags().BoolVar(autoplay, "autoplay", false, i18n.T("cli.flag.autoplay"))
	addNameFlag(cmd, &spec.Name)
	cmd.Flags().IntVar(&spec.Masters, "masters", spec.Masters, i18n.T("up.flag.masters"))
	cmd.Flags().IntVar(&spec.Workers, "workers", spec.Workers, i18n.T("up.flag.workers"))
	cmd.Flags().StringVar(&spec.Runtime, "runtime", spec.Runtime, i18n.T("up.flag.runtime"))
	cmd.Flags().Float64Var(&spec.Speed, "speed", spec.Speed, i18n.T("up.flag.speed"))
}

// runTUI opens the TUI when klab runs in a terminal, and reports whether
// it did: the TUI needs a terminal on both ends, and a pipe or a test gets
// the introduction instead.
func runTUI(cmd *cobra.Command, spec lab.Spec, lesson string, autoplay bool, pack string, in *os.File) (bool, error) {
	if !isTerminal(cmd.OutOrStdout()) || !isatty.IsTerminal(in.Fd()) {
		if lesson != "" {
			// Asked for a lesson: saying why it does not open beats the
			// introduction.
			return true, i18n.NewError("cli.err.no-terminal")
		}
		return false, nil
	}
	if err := spec.Validate(); err != nil {
		return true, err
	}
	if autoplay && lesson == "" {
		return true, i18n.NewError("cli.err.autoplay-needs-lesson")
	}
	return true, ui.Run(cmd.Context(), ui.Options{
		Spec:          spec,
		Out:           cmd.OutOrStdout(),
		Lesson:        lesson,
		Autoplay:      autoplay,
		Record:        true,
		StepSnapshots: true,
		Pack:          pack,
		Run:           cmdline.Runner(newRunner("")),
	})
}
