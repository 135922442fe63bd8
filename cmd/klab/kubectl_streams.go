package main

import (
	"bytes"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func kubectlConfigFlags() *genericclioptions.ConfigFlags {
	return genericclioptions.NewConfigFlags(true).WithDeprecatedPasswordFlag().WithDiscoveryBurst(300).WithDiscoveryQPS(50.0)
}

// kubectlStreams gives kubectl klab's command's streams: the process's
// own from a shell, a buffer when klab runs kubectl for a lesson.
func kubectlStreams(cmd *cobra.Command) genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr()}
}

// stderrTo points os.Stderr at w while kubectl runs in this process, and
// returns what puts it back. A few of kubectl's messages are written to
// os.Stderr rather than to its streams ("Found 2 pods, using pod/web-…"
// from kubectl logs deploy/web, "Defaulted container …"): in the TUI's
// command line or a lesson check they belong with the command's output,
// not on the terminal under the screen. When w is os.Stderr already (klab
// kubectl in a shell) nothing changes. The runner runs one command at a
// time, so no two runs swap it at once. What kubectl wrote there comes
// after what it wrote to its streams.
func stderrTo(w io.Writer) (restore func()) {
	if f, ok := w.(*os.File); ok && f == os.Stderr {
		return func() {}
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	saved := os.Stderr
	os.Stderr = pw
	// Gathered apart and handed to w at the end: kubectl writes to w
	// meanwhile, and a writer such as a bytes.Buffer takes no two writers
	// at once.
	var held bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&held, r)
	}()
	return func() {
		os.Stderr = saved
		pw.Close()
		<-copied
		r.Close()
		_, _ = w.Write(held.Bytes())
	}
}
