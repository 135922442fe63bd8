package live

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"sync"
)

// Runner runs one klab command line: args[0] is "klab", args[1] the
// command (kubectl, etcdctl, chaos, ...). What the command prints goes to
// stdout and stderr; the error is nil when it succeeded. cmd/klab provides
// the real one, which runs the command as the klab binary would.
type Runner func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// clusterCommands are klab's commands that act on a named cluster and take
// --name.
var clusterCommands = []string{"chaos", "clock", "etcdctl", "kubectl", "proxy", "status", "traffic"}

// WithCluster returns a copy of a klab command line aimed at the named
// cluster: --name=<name> is added right after the command when the command
// acts on a cluster and does not name one already. Right after the command
// is where each of them takes it: kubectl only before its own command
// (kubectl expose --name is kubectl's), etcdctl anywhere before "--", and
// the others as a flag of their subcommand, which cobra finds anywhere.
func WithCluster(args []string, name string) []string {
	out := slices.Clone(args)
	if len(args) < 2 || args[0] != "klab" || !slices.Contains(clusterCommands, args[1]) || namesCluster(args[1], args[2:]) {
		return out
	}
	return slices.Insert(out, 2, "--name="+name)
}

// namesCluster reports whether a command's arguments give --name already.
func namesCluster(command string, args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--name" || strings.HasPrefix(a, "--name="):
			return true
		case command == "kubectl" && !strings.HasPrefix(a, "-"):
			// kubectl's own command: a --name after it is kubectl's.
			return false
		}
	}
	return false
}

// syncBuffer is a buffer two writers (a command's stdout and stderr) may
// share, so that its output reads in the order it was printed.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
