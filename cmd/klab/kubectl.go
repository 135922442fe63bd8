package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/manifest"
)

// kubeconfigEnv is where kubectl looks for its kubeconfig when no
// --kubeconfig is given.
const kubeconfigEnv = "KUBECONFIG"

func newKubectlCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "kubectl [--name <cluster>] <kubectl arguments>",
		Short: i18n.T("kubectl.short"),
		Long:  i18n.T("kubectl.long"),
		// Everything after `kubectl` belongs to kubectl, --help included.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, args := takeLeadingNameFlag(args)
			if err := lab.ValidateName(name); err != nil {
				return err
			}
			if os.Getenv(kubeconfigEnv) == "" && !hasFlag(args, "--kubeconfig") {
				info, err := lab.LoadInfo(name)
				if err != nil {
					return err
				}
				if info.Kubeconfig == "" {
					return i18n.NewError("status.err.no-answer", name, nameHint(name))
				}
				restore, err := setenv(kubeconfigEnv, info.Kubeconfig)
				if err != nil {
					return err
				}
				defer restore()
			}
			if err := checkManifests(args); err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "error: "+err.Error())
				return exitError{code: 1}
			}
			return runKubectl(cmd, args)
		},
	}
}

// kubectlFatal carries a fatal error's exit code from kubectl's error
// handler back to runKubectl.
type kubectlFatal struct{ code int }

// runKubectl runs the real kubectl with args, as its own main does, on the
// command's streams. kubectl reports its errors itself and ends the
// process on them (cmdutil.CheckErr); here such an error ends only this
// run, with kubectl's message on stderr and its exit code, so that klab
// can run kubectl for a lesson or the TUI and go on. Whatever kubectl
// changes process-wide is put back afterwards.
func runKubectl(cmd *cobra.Command, args []string) (err error) {
	defer func(saved []string) { os.Args = saved }(os.Args)
	os.Args = append([]string{"kubectl"}, args...)
	// kubectl points client-go's warnings at its stderr for the run.
	defer rest.SetDefaultWarningHandlerWithContext(rest.WarningLogger{})
	stderr := cmd.ErrOrStderr()
	defer stderrTo(stderr)()
	self := goroutineID()
	cmdutil.BehaviorOnFatal(func(msg string, code int) {
		// As kubectl's own handler prints it.
		if msg != "" {
			if !strings.HasSuffix(msg, "\n") {
				msg += "\n"
			}
			fmt.Fprint(stderr, msg)
		}
		if goroutineID() != self {
			// A goroutine kubectl started itself (kubectl cp does)
			// cannot unwind to here: it ends the process, as kubectl
			// would.
			os.Exit(code)
		}
		panic(kubectlFatal{code: code})
	})
	defer cmdutil.DefaultBehaviorOnFatal()
	defer func() {
		if r := recover(); r != nil {
			fatal, ok := r.(kubectlFatal)
			if !ok {
				panic(r)
			}
			err = exitError{code: fatal.code}
		}
	}()
	command := kubectlcmd.NewDefaultKubectlCommandWithArgs(kubectlcmd.KubectlOptions{
		PluginHandler: nil,
		Arguments:     os.Args,
		ConfigFlags:   kubectlConfigFlags(),
		IOStreams:     kubectlStreams(cmd),
	})
	command.SetArgs(args)
	if err := command.Execute(); err != nil {
		cmdutil.CheckErr(err)
	}
	return nil
}

// goroutineID returns the number of the calling goroutine, as its stack
// trace names it.
func goroutineID() string {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	id, _, _ := strings.Cut(s, " ")
	return id
}

// setenv sets an environment variable and returns what puts it back as it
// was.
func setenv(key, value string) (restore func(), err error) {
	old, had := os.LookupEnv(key)
	if err := os.Setenv(key, value); err != nil {
		return nil, err
	}
	return func() {
		if had {
			os.Setenv(key, old)
		} else {
			os.Unsetenv(key)
		}
	}, nil
}

// checkManifests looks at the files `apply -f`, `create -f` and
// `replace -f` would read and reports the first YAML problem with the
// file's own line number (kubectl counts lines from the start of the
// failing document).
func checkManifests(args []string) error {
	verb := firstArg(args)
	if verb != "apply" && verb != "create" && verb != "replace" {
		return nil
	}
	var names []string
	recursive := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i = len(args)
		case (a == "-f" || a == "--filename") && i+1 < len(args):
			names = append(names, args[i+1])
			i++
		case strings.HasPrefix(a, "--filename="):
			names = append(names, strings.TrimPrefix(a, "--filename="))
		case strings.HasPrefix(a, "-f=") || (strings.HasPrefix(a, "-f") && len(a) > 2):
			names = append(names, strings.TrimPrefix(strings.TrimPrefix(a, "-f"), "="))
		case a == "-R" || a == "--recursive" || a == "--recursive=true":
			recursive = true
		}
	}
	files, err := manifest.Files(names, recursive)
	if err != nil {
		return nil // kubectl reports bad paths in its own words
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if err := manifest.Check(f, data); err != nil {
			return err
		}
	}
	return nil
}

// takeLeadingNameFlag takes klab's --name from before kubectl's command
// (`klab kubectl --name demo get pods`); a --name after it is kubectl's
// own (`kubectl expose ... --name web`).
func takeLeadingNameFlag(args []string) (string, []string) {
	name := lab.DefaultClusterName()
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--name" && i+1 < len(args):
			return args[i+1], append(append([]string{}, args[:i]...), args[i+2:]...)
		case strings.HasPrefix(a, "--name="):
			return strings.TrimPrefix(a, "--name="), append(append([]string{}, args[:i]...), args[i+1:]...)
		case !strings.HasPrefix(a, "-"):
			return name, args
		}
	}
	return name, args
}

// firstArg returns kubectl's command: the first argument that is not a
// flag (global flags with a separate value are skipped with their value).
func firstArg(args []string) string {
	valued := map[string]bool{"-n": true, "--namespace": true, "--kubeconfig": true, "--context": true, "--cluster": true, "--user": true, "-s": true, "--server": true, "--token": true, "-v": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if valued[a] {
			i++
			continue
		}
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}
