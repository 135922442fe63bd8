//go:build unix

package screen

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize reports the terminal's size changes (SIGWINCH).
func notifyResize() (<-chan os.Signal, func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGWINCH)
	return c, func() { signal.Stop(c) }
}
