package lab

import "github.com/klab-dev/klab/assets/i18n"

// Sentinel errors. Errors returned by this package carry the cluster's name
// and other details in the user's language, and match these with errors.Is.
var (
	// ErrNotFound: the cluster has no cluster.json (never created, removed,
	// or never became ready).
	ErrNotFound = &i18n.Error{Key: "lab.err.not-found"}
	// ErrNotRunning: no `klab up` process answers on the control socket.
	ErrNotRunning = &i18n.Error{Key: "lab.err.not-running"}
	// ErrAlreadyRunning: another `klab up` process runs the cluster.
	ErrAlreadyRunning = &i18n.Error{Key: "lab.err.already-running"}
	// ErrStarting: the cluster is still starting and cannot take chaos
	// operations yet.
	ErrStarting = &i18n.Error{Key: "lab.err.starting"}
	// ErrDockerUnavailable: --runtime docker was asked for and the Docker
	// engine does not answer.
	ErrDockerUnavailable = &i18n.Error{Key: "lab.err.docker-unavailable"}
	// ErrExists: a Docker cluster of that name already has containers.
	ErrExists = &i18n.Error{Key: "lab.err.exists"}
	// ErrUnknownTarget: a chaos target names nothing in the cluster.
	ErrUnknownTarget = &i18n.Error{Key: "lab.err.unknown-target"}
	// ErrNoLeader: "leader" was asked for while no member reports itself
	// leader (an election is under way, or quorum is lost).
	ErrNoLeader = &i18n.Error{Key: "lab.err.no-leader"}
	// ErrStateMismatch: the state dir holds a cluster of another shape.
	ErrStateMismatch = &i18n.Error{Key: "lab.err.state-mismatch"}
)
