package lessons

import (
	"slices"
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
)

// Command is one klab command line from a lesson, such as
// "klab etcdctl put greeting hello". The loader has checked that it splits
// into words and starts with klab and one of its commands.
type Command string

// Args splits the command into its words, as a shell would (see
// SplitCommand). The loader has checked it, so the error is for commands
// built elsewhere.
func (c Command) Args() ([]string, error) { return SplitCommand(string(c)) }

// String returns the command line as written.
func (c Command) String() string { return string(c) }

// klabCommands are klab's top-level commands a lesson may use; it mirrors
// cmd/klab (which lessons cannot import) and catches a misspelt command
// when the lesson loads rather than when a student runs it.
var klabCommands = []string{"chaos", "clock", "down", "etcdctl", "kubectl", "lessons", "proxy", "status", "traffic", "up"}

// shapeCommands change the cluster's shape or existence. The engine does
// that itself from a step's cluster, and klab up runs until it is stopped,
// so a solution must not hold them.
var shapeCommands = []string{"up", "down"}

// SplitCommand splits a command line into words the way a POSIX shell
// does, without expanding anything: blanks separate words, single quotes
// keep everything literally, double quotes keep everything but a backslash
// before ", \, $ or `, and a backslash outside quotes keeps the next
// character. A pipe, redirection, ; or & outside quotes is refused: lesson
// commands are run one at a time without a shell.
func SplitCommand(line string) ([]string, error) {
	var (
		words   []string
		word    strings.Builder
		inWord  bool
		quote   rune // 0, '\'' or '"'
		escaped bool
	)
	for _, r := range line {
		switch {
		case escaped:
			word.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				word.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case strings.ContainsRune("|&;<>", r):
			return nil, i18n.NewError("lessons.err.cmd-operator", string(r))
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, i18n.NewError("lessons.err.cmd-quote")
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// checkCommand checks one lesson command line: it must split, start with
// klab and name one of klab's commands; with solution set, it must not be
// one of the commands that change the cluster's shape.
func checkCommand(line string, solution bool) error {
	words, err := SplitCommand(line)
	if err != nil {
		return err
	}
	if len(words) == 0 {
		return i18n.NewError("lessons.err.cmd-empty")
	}
	if words[0] != "klab" || len(words) < 2 || !slices.Contains(klabCommands, words[1]) {
		return i18n.NewError("lessons.err.cmd-klab", line, strings.Join(klabCommands, ", "))
	}
	if solution && slices.Contains(shapeCommands, words[1]) {
		return i18n.NewError("lessons.err.cmd-shape", "klab "+words[1])
	}
	return nil
}
