package main

import (
	"fmt"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/record"
)

// newReplayCmd is klab replay: a recording (a state dir's events.jsonl.gz)
// drawn as the views were, with no cluster and no Docker.
func newReplayCmd() *cobra.Command {
	var (
		session       int
		at            time.Duration
		frame         bool
		view          string
		width, height int
	)
	cmd := &cobra.Command{
		Use:   "replay <file>",
		Short: i18n.T("replay.short"),
		Long:  i18n.T("replay.long"),
		Args:  exactArgs(1, "<file>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sessions, err := record.Load(args[0])
			if err != nil {
				return err
			}
			if session == 0 {
				session = len(sessions)
			}
			if session < 1 || session > len(sessions) {
				return i18n.NewError("replay.err.session", session, args[0], len(sessions))
			}
			s := sessions[session-1]
			if at < 0 || at > s.Duration() {
				return i18n.NewError("replay.err.at", at, s.Duration())
			}
			if !slices.Contains(record.ViewNames, view) {
				return i18n.NewError("replay.err.view", view)
			}
			c := common.New()
			if frame || !isTerminal(cmd.OutOrStdout()) {
				out, err := record.Frame(c, s, view, at, width, height)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), out)
				return err
			}
			p, err := record.NewPlayer(c, s)
			if err != nil {
				return err
			}
			p.Show(view)
			p.Seek(at)
			_, err = tea.NewProgram(p, tea.WithAltScreen(), tea.WithContext(cmd.Context()),
				tea.WithOutput(cmd.OutOrStdout())).Run()
			return err
		},
	}
	cmd.Flags().IntVar(&session, "session", 0, i18n.T("replay.flag.session"))
	cmd.Flags().DurationVar(&at, "at", 0, i18n.T("replay.flag.at"))
	cmd.Flags().BoolVar(&frame, "frame", false, i18n.T("replay.flag.frame"))
	cmd.Flags().StringVar(&view, "view", record.ViewRaft, i18n.T("replay.flag.view"))
	cmd.Flags().IntVar(&width, "width", 120, i18n.T("replay.flag.width"))
	cmd.Flags().IntVar(&height, "height", 40, i18n.T("replay.flag.height"))
	return cmd
}
