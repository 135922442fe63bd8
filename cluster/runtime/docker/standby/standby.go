// Package standby names the signals by which the Docker runtime restarts a
// component inside its container, without restarting the container: the
// component's process (`klab component <name>`) stops the component on
// StandDown, keeps running, and starts a new instance on StandUp.
//
// A container start costs the engine a second or more of CPU (namespaces,
// the overlay mount, runc), far more than most components' own start; a
// lab's restore restarts all 25 components of a 3+3 cluster, and on two
// cores their container restarts took longer than everything else the
// restore does together.
package standby

import "syscall"

// The signals, and their names as `docker kill --signal` takes them.
const (
	StandDown = syscall.SIGUSR1
	StandUp   = syscall.SIGUSR2

	StandDownName = "SIGUSR1"
	StandUpName   = "SIGUSR2"
)
