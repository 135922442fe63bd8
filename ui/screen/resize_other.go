//go:build !unix

package screen

import "os"

// notifyResize reports nothing where there is no SIGWINCH: the size is
// read once.
func notifyResize() (<-chan os.Signal, func()) { return nil, func() {} }
