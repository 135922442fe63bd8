// Package cri is the kubelet's container runtime interface: how a kubelet
// asks a runtime to give a pod a network identity (a sandbox) and run its
// containers. It follows the shape of Kubernetes' CRI (RunPodSandbox,
// CreateContainer, StartContainer, ...), cut down to what klab's kubelet
// uses. Two runtimes implement it: the in-process one of the local runtime
// (containers run the app workload inside the klab process, each pod on its
// own loopback address) and the Docker one (a container per pod container).
package cri

import (
	"context"
	"errors"
	"io"
	"time"
)

// Errors a Runtime returns, wrapped with context.
var (
	// ErrImageNotFound: the image is not on the node.
	ErrImageNotFound = errors.New("image not found")
	// ErrNotFound: no sandbox or container with that ID.
	ErrNotFound = errors.New("not found")
)

// Image is an image present on the node.
type Image struct {
	// ID is the image's ID; Names its repository:tag names.
	ID    string
	Names []string
	Size  int64
}

// KeyValue is an environment variable.
type KeyValue struct {
	Key, Value string
}

// SandboxConfig describes a pod's sandbox.
type SandboxConfig struct {
	PodUID    string
	Name      string
	Namespace string
	// Hostname is the pod's hostname (its name, unless spec.hostname says
	// otherwise).
	Hostname string
	// Labels mark the sandbox; the kubelet finds its pods by them after a
	// restart.
	Labels map[string]string
}

// Sandbox is a pod's network identity.
type Sandbox struct {
	ID string
	// IP is the pod's IP, at which its containers listen.
	IP string
}

// ContainerConfig describes a container to create in a sandbox.
type ContainerConfig struct {
	// Name is the pod's container name; Attempt counts restarts (0 first).
	Name    string
	Attempt int
	Image   string
	// StandIn, when set, names the tutorial image (package
	// cluster/app/standin) whose klab stand-in runs in place of Image,
	// which the node could not pull. Image stays what the pod asked for.
	StandIn string
	// Command and Args are the pod spec's (entrypoint override and
	// arguments), with $(VAR) references already expanded.
	Command []string
	Args    []string
	Env     []KeyValue
	// MemoryLimit in bytes (0: none); a container that exceeds it is
	// killed and reported with reason OOMKilled and exit code 137.
	MemoryLimit int64
	// MilliCPULimit (0: none).
	MilliCPULimit int64
	Labels        map[string]string
	// Mounts are the node's directories the container sees (its volumes:
	// the service-account token, ConfigMaps, Secrets, emptyDirs).
	Mounts []Mount
}

// Mount makes a directory of the node visible in a container at
// ContainerPath, as the CRI's Mount does. HostPath is a path the kubelet
// wrote (under its root directory, upstream's /var/lib/kubelet).
type Mount struct {
	ContainerPath string
	HostPath      string
	ReadOnly      bool
}

// State is a container's state.
type State string

// Container states.
const (
	StateCreated State = "created"
	StateRunning State = "running"
	StateExited  State = "exited"
	StateUnknown State = "unknown"
)

// Reasons an exited container reports, as upstream's container statuses.
const (
	ReasonCompleted = "Completed"
	ReasonError     = "Error"
	ReasonOOMKilled = "OOMKilled"
)

// ContainerStatus is a container's state.
type ContainerStatus struct {
	ID        string
	SandboxID string
	Name      string
	Attempt   int
	Image     string
	ImageID   string
	State     State
	CreatedAt time.Time
	// StartedAt and FinishedAt are zero until the container starts and
	// exits.
	StartedAt  time.Time
	FinishedAt time.Time
	// ExitCode, Reason and Message describe how it exited.
	ExitCode int
	Reason   string
	Message  string
	Labels   map[string]string
}

// LogOptions selects a container's log, as `kubectl logs` asks for it.
type LogOptions struct {
	Follow     bool
	Timestamps bool
	// TailLines, when set, keeps the last lines only.
	TailLines *int64
	// LimitBytes, when set, stops after that many bytes.
	LimitBytes *int64
	// SinceTime, when set, keeps lines written at or after it.
	SinceTime *time.Time
}

// TerminalSize is a terminal's size in characters, as a client's
// resize event gives it.
type TerminalSize struct {
	Width, Height uint16
}

// Streams connect a command in a container with a client (kubectl exec
// and attach). A nil Stdin means the client sends no input; with TTY,
// stdout and stderr are one terminal and Stderr is nil.
type Streams struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	TTY    bool
	// Resize delivers the client's terminal size when TTY is set; it is
	// closed when the client goes away.
	Resize <-chan TerminalSize
}

// EventType is a container lifecycle event.
type EventType string

// Event types.
const (
	ContainerStarted EventType = "started"
	ContainerExited  EventType = "exited"
)

// Event reports a container's state change, so the kubelet reacts at once
// instead of waiting for its next relist (upstream's evented PLEG).
type Event struct {
	Type        EventType
	ContainerID string
	SandboxID   string
	// Labels are the container's labels (pod UID, name, namespace).
	Labels map[string]string
}

// Runtime runs pods for one kubelet. Methods are safe for concurrent use.
type Runtime interface {
	// Name is "local" or "docker".
	Name() string

	// ListImages lists the images on the node (for node status).
	ListImages(ctx context.Context) ([]Image, error)
	// ImageStatus returns the image, or an error wrapping
	// ErrImageNotFound.
	ImageStatus(ctx context.Context, image string) (Image, error)
	// PullImage fetches an image: the Docker runtime through the engine,
	// the in-process one never (it has klab's images only); the error says
	// why a pull failed.
	PullImage(ctx context.Context, image string) (Image, error)

	// RunPodSandbox creates and starts a pod's sandbox.
	RunPodSandbox(ctx context.Context, cfg SandboxConfig) (Sandbox, error)
	// StopPodSandbox stops every container in it and releases its IP.
	StopPodSandbox(ctx context.Context, id string) error
	// RemovePodSandbox removes it and its containers.
	RemovePodSandbox(ctx context.Context, id string) error
	// ListPodSandboxes lists the sandboxes with their labels.
	ListPodSandboxes(ctx context.Context) ([]SandboxStatus, error)

	// CreateContainer creates a container in a sandbox; StartContainer
	// starts it.
	CreateContainer(ctx context.Context, sandboxID string, cfg ContainerConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	// StopContainer asks the container to stop (SIGTERM), and kills it
	// after timeout.
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
	// RemoveContainer deletes an exited container and its log.
	RemoveContainer(ctx context.Context, id string) error
	// ContainerStatus reports one container; ListContainers every
	// container (of every sandbox, running or exited, not yet removed).
	ContainerStatus(ctx context.Context, id string) (ContainerStatus, error)
	ListContainers(ctx context.Context) ([]ContainerStatus, error)
	// ContainerLogs writes the container's log (stdout and stderr
	// interleaved) to w; with Follow it returns when the container exits
	// or ctx is done.
	ContainerLogs(ctx context.Context, id string, opts LogOptions, w io.Writer) error

	// ExecInContainer runs cmd in a running container, copying between
	// the streams and the command's stdin, stdout and stderr, and returns
	// its exit code. An error means the command could not be run at all
	// (the container is not running, the executable does not exist), as
	// the CRI's Exec fails before any output.
	ExecInContainer(ctx context.Context, id string, cmd []string, streams Streams) (exitCode int, err error)
	// AttachContainer connects the streams to a running container's main
	// process: its output from now on, and its stdin when the container
	// keeps one open. It returns when the container exits or ctx is done.
	AttachContainer(ctx context.Context, id string, streams Streams) error

	// ContainerStats reports a running container's resource usage, as
	// the CRI's ContainerStats: the Docker runtime from the container's
	// cgroup, the in-process one from what its app accounted.
	ContainerStats(ctx context.Context, id string) (ContainerStats, error)
	// NodeStats reports the node's resource usage as a whole.
	NodeStats(ctx context.Context) (Usage, error)

	// Events delivers container lifecycle events. The channel is closed by
	// Close.
	Events() <-chan Event
	// Close stops every container (abruptly) and releases the runtime.
	Close() error
}

// SandboxStatus reports a sandbox.
type SandboxStatus struct {
	Sandbox
	Config    SandboxConfig
	Ready     bool
	CreatedAt time.Time
}

// Usage is a resource usage sample, as the CRI's CpuUsage and
// MemoryUsage: cumulative CPU time, so that two samples give a rate, and
// the memory working set at the sample's time.
type Usage struct {
	Timestamp time.Time
	// CPU is the CPU time used since the container (or node) started.
	CPU time.Duration
	// MemoryWorkingSet is the memory in use that cannot be reclaimed
	// under pressure, in bytes: what the kubelet evicts by and what
	// `kubectl top` shows.
	MemoryWorkingSet int64
}

// ContainerStats is a container's usage sample.
type ContainerStats struct {
	ID string
	Usage
}
