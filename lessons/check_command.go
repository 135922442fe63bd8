package lessons

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

// CommandSucceededCheck passes when a command matching Command succeeded
// since the step began. A command matches when, leaving out a leading
// "klab", its first word is the pattern's and the pattern's other words
// appear in it in the same order, with anything between them: the pattern
// "klab etcdctl get --prefix" matches "klab etcdctl get / --prefix
// --keys-only" and "etcdctl --name lab get /registry --prefix".
//
//	command-succeeded: {command: klab kubectl get nodes}
type CommandSucceededCheck struct {
	Command Command
	words   []string
}

func (CommandSucceededCheck) Kind() CheckKind { return KindCommandSucceeded }
func (CommandSucceededCheck) Needs() Needs    { return Needs{Commands: true} }

func (c CommandSucceededCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.command", string(c.Command))}
}

func (c CommandSucceededCheck) evaluate(_, now *world) Verdict {
	var failed *CommandObserved
	for i := range now.commands {
		cmd := &now.commands[i]
		if !matchCommand(c.words, cmd.Args) {
			continue
		}
		if cmd.Err == nil {
			return pass(i18n.M("lessons.check.ran", commandLine(cmd.Args)))
		}
		failed = cmd
	}
	if failed != nil {
		return wait(i18n.M("lessons.check.ran-failed", commandLine(failed.Args), errorLine(failure(failed))))
	}
	return wait(i18n.M("lessons.check.not-run", string(c.Command)))
}

// withoutKlab drops a leading "klab": the TUI's command line takes
// "kubectl ..." and "klab kubectl ..." alike.
func withoutKlab(words []string) []string {
	if len(words) > 0 && words[0] == "klab" {
		return words[1:]
	}
	return words
}

// matchCommand reports whether args match the pattern (see
// CommandSucceededCheck).
func matchCommand(pattern, args []string) bool {
	pattern, args = withoutKlab(pattern), withoutKlab(args)
	if len(pattern) == 0 || len(args) == 0 || pattern[0] != args[0] {
		return false
	}
	rest := args[1:]
	for _, want := range pattern[1:] {
		i := 0
		for i < len(rest) && rest[i] != want {
			i++
		}
		if i == len(rest) {
			return false
		}
		rest = rest[i+1:]
	}
	return true
}

// commandLine renders args as one line, quoting words that need it.
func commandLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\|&;<>$`") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// failure returns what a failed command said: its output, else its error.
func failure(cmd *CommandObserved) string {
	if s := strings.TrimSpace(cmd.Output); s != "" {
		return s
	}
	if cmd.Err != nil {
		return cmd.Err.Error()
	}
	return ""
}

// errorLine picks the line of a failed command's output that says what
// went wrong: etcdctl and kubectl end with a line starting "Error:" or
// "error:" after any log lines, so the last such line, else the last line.
func errorLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if line := strings.TrimSpace(lines[i]); strings.HasPrefix(strings.ToLower(line), "error") {
			return line
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

func (d *decoder) commandSucceeded(n *yaml.Node, path string) Check {
	f := d.params(n, path, "command")
	if f == nil {
		return nil
	}
	s, cn := f.str("command", true)
	if cn == nil || s == "" {
		return CommandSucceededCheck{}
	}
	if err := checkCommand(s, false); err != nil {
		d.failErr(cn, field(path, "command"), err)
		return CommandSucceededCheck{}
	}
	words, _ := SplitCommand(s)
	return CommandSucceededCheck{Command: Command(strings.TrimSpace(s)), words: words}
}
