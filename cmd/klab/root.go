package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
)

func init() {
	// Help templates render their fixed words ("Usage:", "Flags:") through
	// the catalogue like everything else.
	cobra.AddTemplateFunc("T", i18n.T)
	cobra.AddTemplateFunc("flagUsages", flagUsages)
}

// flagUsages is pflag's flag listing with its one fixed word, "default",
// translated.
func flagUsages(fs *pflag.FlagSet) string {
	return strings.ReplaceAll(fs.FlagUsages(), " (default ", " ("+i18n.T("cli.usage.default")+" ")
}

// newRootCmd builds the whole command tree. It is rebuilt for every run so
// that help texts are rendered in the language current at that moment.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	spec := lab.DefaultSpec()
	var tf tuiFlags
	root := &cobra.Command{
		Use:           "klab",
		Short:         i18n.T("cli.root.short"),
		Long:          i18n.T("cli.root.long"),
		Version:       version + " (" + buildID + ")",
		Args:          noArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// In a terminal, a bare `klab` opens the TUI; elsewhere (a
			// pipe, a test) it introduces itself.
			if ran, err := runTUI(cmd, spec, tf, os.Stdin); ran {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), i18n.T("cli.intro"))
			fmt.Fprintln(cmd.OutOrStdout())
			return cmd.Help()
		},
	}
	addTUIFlags(root, &spec, &tf)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetUsageTemplate(usageTemplate)
	root.SetVersionTemplate(`{{T "cli.version" .Version}}` + "\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return i18n.Wrap(err, "cli.err.flags", cmd.CommandPath())
	})
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: i18n.T("cli.help.short"),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, _, err := cmd.Root().Find(args)
			if err != nil || target == nil {
				return i18n.NewError("cli.err.unknown-command", strings.Join(args, " "), "klab")
			}
			return target.Help()
		},
	})

	root.AddCommand(
		newNotesCmd(),
		newReplayCmd(),
		newUpCmd(),
		newDownCmd(),
		newStartCmd(),
		newStopCmd(),
		newImageCmd(),
		newStatusCmd(),
		newChaosCmd(),
		newClockCmd(),
		newProxyCmd(),
		newTrafficCmd(),
		newEtcdctlCmd(),
		newSnapshotCmd(),
		newResetCmd(),
		newKubectlCmd(),
		newLessonsCmd(),
		newComponentCmd(),
	)
	localizeBuiltinFlags(root)
	return root
}

// localizeBuiltinFlags gives every command its own --help (and the root its
// --version) with a translated description; cobra would otherwise add
// English ones.
func localizeBuiltinFlags(cmd *cobra.Command) {
	if cmd.Flags().Lookup("help") == nil {
		cmd.Flags().BoolP("help", "h", false, i18n.T("cli.flag.help", cmd.Name()))
	}
	if !cmd.HasParent() && cmd.Flags().Lookup("version") == nil {
		cmd.Flags().BoolP("version", "v", false, i18n.T("cli.flag.version"))
	}
	for _, sub := range cmd.Commands() {
		localizeBuiltinFlags(sub)
	}
}

// addNameFlag adds --name, defaulting to KLAB_CLUSTER or "klab", to a
// command that acts on a cluster.
func addNameFlag(cmd *cobra.Command, name *string) {
	cmd.Flags().StringVar(name, "name", lab.DefaultClusterName(), i18n.T("cli.flag.name"))
}

// noArgs rejects arguments, naming the first one: on the root it is a
// mistyped command.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if !cmd.HasParent() {
		return i18n.NewError("cli.err.unknown-command", args[0], cmd.CommandPath())
	}
	return i18n.NewError("cli.err.no-args", cmd.CommandPath(), args[0])
}

// exactArgs requires n arguments, described by what ("<target>").
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return i18n.NewError("cli.err.args", cmd.CommandPath(), n, what, len(args))
		}
		return nil
	}
}

// nameHint returns " --name <name>" when name is not the one commands pick
// by default, for the commands klab suggests to the user.
func nameHint(name string) string {
	if name == lab.DefaultClusterName() {
		return ""
	}
	return " --name " + name
}

// usageTemplate is cobra's default usage template with its fixed words
// translated.
const usageTemplate = `{{T "cli.usage.usage"}}{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

{{T "cli.usage.aliases"}}
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

{{T "cli.usage.examples"}}
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

{{T "cli.usage.commands"}}{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

{{T "cli.usage.flags"}}
{{flagUsages .LocalFlags | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

{{T "cli.usage.global-flags"}}
{{flagUsages .InheritedFlags | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

{{T "cli.usage.more" .CommandPath}}{{end}}
`
