package main

import (
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui"
	"github.com/klab-dev/klab/ui/cmdline"
	"github.com/klab-dev/klab/ui/styles"
)

// tuiFlags are bare `klab`'s own flags.
type tuiFlags struct {
	lesson, pack, theme, cast string
	autoplay                  bool
}

// addTUIFlags gives bare `klab` its own flags and the cluster flags of
// `klab up`, which are the home screen's defaults.
func addTUIFlags(cmd *cobra.Command, spec *lab.Spec, f *tuiFlags) {
	cmd.Flags().StringVar(&f.lesson, "lesson", "", i18n.T("cli.flag.lesson"))
	cmd.Flags().StringVar(&f.pack, "lessons", "", i18n.T("cli.flag.lessons"))
	cmd.Flags().BoolVar(&f.autoplay, "autoplay", false, i18n.T("cli.flag.autoplay"))
	cmd.Flags().StringVar(&f.theme, "theme", string(styles.Standard), i18n.T("cli.flag.theme", themeNames()))
	cmd.Flags().StringVar(&f.cast, "cast", "", i18n.T("cli.flag.cast"))
	addNameFlag(cmd, &spec.Name)
	cmd.Flags().IntVar(&spec.Masters, "masters", spec.Masters, i18n.T("up.flag.masters"))
	cmd.Flags().IntVar(&spec.Workers, "workers", spec.Workers, i18n.T("up.flag.workers"))
	cmd.Flags().StringVar(&spec.Runtime, "runtime", spec.Runtime, i18n.T("up.flag.runtime"))
	cmd.Flags().Float64Var(&spec.Speed, "speed", spec.Speed, i18n.T("up.flag.speed"))
}

// runTUI opens the TUI when klab runs in a terminal, and reports whether
// it did: the TUI needs a terminal on both ends, and a pipe or a test gets
// the introduction instead.
func runTUI(cmd *cobra.Command, spec lab.Spec, f tuiFlags, in *os.File) (bool, error) {
	theme, ok := styles.ParseTheme(f.theme)
	if !ok {
		return true, i18n.NewError("cli.err.theme", f.theme, themeNames())
	}
	if !isTerminal(cmd.OutOrStdout()) || !isatty.IsTerminal(in.Fd()) {
		if f.lesson != "" || f.cast != "" {
			flag := "--lesson"
			if f.lesson == "" {
				flag = "--cast"
			}
			// Asked for a lesson: saying why it does not open beats the
			// introduction.
			return true, i18n.NewError("cli.err.no-terminal", flag)
		}
		return false, nil
	}
	if err := spec.Validate(); err != nil {
		return true, err
	}
	if f.autoplay && f.lesson == "" {
		return true, i18n.NewError("cli.err.autoplay-needs-lesson")
	}
	return true, ui.Run(cmd.Context(), ui.Options{
		Spec:          spec,
		Out:           cmd.OutOrStdout(),
		Lesson:        f.lesson,
		Autoplay:      f.autoplay,
		Record:        true,
		StepSnapshots: true,
		Pack:          f.pack,
		Theme:         theme,
		Cast:          f.cast,
		Run:           cmdline.Runner(newRunner("")),
	})
}

// themeNames lists the themes for --theme's help and errors.
func themeNames() string {
	names := make([]string, len(styles.Themes))
	for i, t := range styles.Themes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}
