package app

import (
	"io"
)

// Names of the environment variables the app reads its identity from; see
// the package documentation.
const (
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"
	EnvNodeName     = "NODE_NAME"
	EnvPodIP        = "POD_IP"
	EnvHostname     = "HOSTNAME"
	EnvImage        = "KLAB_IMAGE"
)

// DefaultPort is the port the app listens on unless told otherwise.
const DefaultPort = 8080

// Exit codes Run returns besides the ones the switches choose.
const (
	// ExitUsage is returned for bad flags or environment variables, as Go's
	// flag package does on its own.
	ExitUsage = 2
	// ExitKilled is 128 + SIGKILL: the app was killed, or its memory
	// accounter refused an allocation (an OOM kill).
	ExitKilled = 137
)

// MemoryAccounter is told of the memory the app allocates on purpose
// (--memory, --memory-grow), before it allocates it. A runtime that cannot
// put the app in a cgroup (the in-process one) uses it to enforce a
// container's memory limit.
type MemoryAccounter interface {
	// Allocate records n more bytes. A non-nil error means the container
	// would exceed its limit: the app then stops at once with ExitKilled, as
	// a process the kernel's OOM killer picked would, without allocating.
	Allocate(n int64) error
}

// Options is how the app is started: what a process gets from exec (its
// arguments and environment, stdout and stderr) plus what an in-process
// runtime adds.
type Options struct {
	// Args are the command-line arguments, without the program name.
	Args []string
	// Env is the environment, as KEY=VALUE; when a key repeats, the last
	// one wins, as with a container's env list.
	Env []string
	// Stdout receives the startup line and one line per request; Stderr the
	// errors. Nil discards.
	Stdout, Stderr io.Writer
	// ListenHost is the address to listen on; empty means every address.
	ListenHost string
	// Memory, when set, accounts every deliberate allocation.
	Memory MemoryAccounter
	// CPU, when set, is told of the CPU time --cpu-per-request spends.
	CPU CPUAccounter
	// Kill, when closed, stops the app at once with ExitKilled, as SIGKILL
	// does; cancelling Run's context is SIGTERM.
	Kill <-chan struct{}
}
