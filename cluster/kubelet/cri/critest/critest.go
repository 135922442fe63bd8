// Package critest is an in-memory cri.Runtime for tests: sandboxes and
// containers exist as state only, nothing runs. A test decides what the
// "processes" do (exit with a code, be OOM-killed, ignore SIGTERM, write
// log lines) and which images can be pulled, and reads back the calls the
// kubelet made. It is cheap enough that a benchmark can give each of many
// kubelets its own.
package critest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// DefaultName is the runtime name a Runtime reports without Options.Name.
const DefaultName = "critest"

// Behavior is what a started container does by itself.
type Behavior struct {
	// ExitAfter, when positive, makes the container exit that long after
	// it starts, with ExitCode (reason Completed for 0, Error otherwise).
	ExitAfter time.Duration
	ExitCode  int
	// IgnoreTerm makes StopContainer wait for its whole timeout before
	// killing the container (exit code 137), as a process that ignores
	// SIGTERM does.
	IgnoreTerm bool
	// TermExitCode is the exit code after a SIGTERM the process honours.
	TermExitCode int
	// Logs are written to the container's log when it starts.
	Logs []string
}

// Options shape a Runtime.
type Options struct {
	// Name is what Name returns (DefaultName when empty).
	Name string
	// Images are on the node from the start.
	Images []string
	// Pullable images can be pulled; any other pull fails as it does in an
	// offline lab.
	Pullable []string
	// Behave decides what each new container does; nil means containers
	// run until they are stopped.
	Behave func(cri.ContainerConfig) Behavior
	// RecordCalls keeps the list of calls Calls returns.
	RecordCalls bool
	// Exec runs a command for ExecInContainer: what it writes and returns
	// is the command's output and exit code. Nil makes every exec fail as
	// an image without the executable does.
	Exec func(cmd []string, streams cri.Streams) int
	// Now stamps creation, start and exit times (time.Now when nil), so a
	// test on a fake clock sees consistent times.
	Now func() time.Time
}

// Op names a Runtime method whose failure Fail can inject.
type Op string

// Operations Fail can make fail.
const (
	OpPullImage       Op = "PullImage"
	OpRunPodSandbox   Op = "RunPodSandbox"
	OpCreateContainer Op = "CreateContainer"
	OpStartContainer  Op = "StartContainer"
	OpStopContainer   Op = "StopContainer"
	OpListContainers  Op = "ListContainers"
	OpListImages      Op = "ListImages"
)

// Runtime is the in-memory runtime. Its methods are safe for concurrent
// use.
type Runtime struct {
	opts Options

	mu         sync.Mutex
	images     map[string]cri.Image // by name
	pullable   map[string]bool
	pullErrs   map[string]error
	fail       map[Op]error
	sandboxes  map[string]*sandbox
	containers map[string]*container
	nextID     int
	nextIP     int
	calls      []string
	closed     bool

	events chan cri.Event
}

type sandbox struct {
	status cri.SandboxStatus
	seq    int
}

type container struct {
	seq      int
	status   cri.ContainerStatus
	behavior Behavior
	logs     []logLine
	// changed is closed and replaced whenever the log grows or the
	// container exits, waking followers.
	changed chan struct{}
	exitTmr *time.Timer
	// usage is what ContainerStats reports (SetUsage).
	usage cri.Usage
}

type logLine struct {
	at   time.Time
	text string
}

var _ cri.Runtime = (*Runtime)(nil)

// eventBuffer bounds undelivered events; past it events are dropped, as
// a kubelet that is not reading relists anyway.
const eventBuffer = 1024

// New returns an empty runtime holding opts.Images.
func New(opts Options) *Runtime {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Runtime{
		opts:       opts,
		images:     map[string]cri.Image{},
		pullable:   map[string]bool{},
		pullErrs:   map[string]error{},
		fail:       map[Op]error{},
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		events:     make(chan cri.Event, eventBuffer),
	}
	for _, name := range opts.Images {
		r.images[name] = imageFor(name)
	}
	for _, name := range opts.Pullable {
		r.pullable[name] = true
	}
	return r
}

func imageFor(name string) cri.Image {
	sum := sha256.Sum256([]byte(name))
	return cri.Image{ID: "sha256:" + hex.EncodeToString(sum[:]), Names: []string{name}, Size: int64(len(name)) * 1 << 20}
}

// Name returns the runtime's name.
func (r *Runtime) Name() string { return r.opts.Name }

// record notes a call (under r.mu) and returns the injected failure for
// op, if any.
func (r *Runtime) record(op Op, args ...string) error {
	if r.opts.RecordCalls {
		call := string(op)
		if len(args) > 0 {
			call += " " + fmt.Sprint(args)
		}
		r.calls = append(r.calls, call)
	}
	if r.closed {
		return fmt.Errorf("%s: runtime closed", op)
	}
	return r.fail[op]
}

// Calls returns the calls made so far, as "Method [args]" (only with
// Options.RecordCalls).
func (r *Runtime) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Fail makes every later call of op fail with err; a nil err clears it.
func (r *Runtime) Fail(op Op, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.fail, op)
		return
	}
	r.fail[op] = err
}

// AddImage puts an image on the node.
func (r *Runtime) AddImage(name string) cri.Image {
	r.mu.Lock()
	defer r.mu.Unlock()
	img := imageFor(name)
	r.images[name] = img
	return img
}

// SetPullable decides whether PullImage can fetch name; err, when not
// nil, is what the pull fails with instead of the offline message.
func (r *Runtime) SetPullable(name string, ok bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pullable[name] = ok
	if err != nil {
		r.pullErrs[name] = err
	} else {
		delete(r.pullErrs, name)
	}
}

// ListImages lists the images on the node, by name.
func (r *Runtime) ListImages(ctx context.Context) ([]cri.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.record(OpListImages); err != nil {
		return nil, err
	}
	out := make([]cri.Image, 0, len(r.images))
	for _, name := range slices.Sorted(maps.Keys(r.images)) {
		out = append(out, r.images[name])
	}
	return out, nil
}

// ImageStatus returns the named image or ErrImageNotFound.
func (r *Runtime) ImageStatus(ctx context.Context, image string) (cri.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	img, ok := r.images[image]
	if !ok {
		return cri.Image{}, fmt.Errorf("image %q: %w", image, cri.ErrImageNotFound)
	}
	return img, nil
}

// PullImage "fetches" a pullable image; others fail as in an offline lab.
func (r *Runtime) PullImage(ctx context.Context, image string) (cri.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.record(OpPullImage, image); err != nil {
		return cri.Image{}, err
	}
	if err := r.pullErrs[image]; err != nil {
		return cri.Image{}, err
	}
	if !r.pullable[image] {
		if img, ok := r.images[image]; ok {
			return img, nil
		}
		return cri.Image{}, fmt.Errorf("pull image %q: klab runs offline and this node does not have it: %w", image, cri.ErrImageNotFound)
	}
	img := imageFor(image)
	r.images[image] = img
	return img, nil
}

func (r *Runtime) newID(prefix string) string {
	r.nextID++
	return prefix + strconv.Itoa(r.nextID)
}

// RunPodSandbox creates a ready sandbox with the next free IP.
func (r *Runtime) RunPodSandbox(ctx context.Context, cfg cri.SandboxConfig) (cri.Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.record(OpRunPodSandbox, cfg.Namespace+"/"+cfg.Name); err != nil {
		return cri.Sandbox{}, err
	}
	r.nextIP++
	sb := cri.Sandbox{
		ID: r.newID("sandbox-"),
		IP: fmt.Sprintf("10.88.%d.%d", r.nextIP/250, r.nextIP%250+2),
	}
	cfg.Labels = maps.Clone(cfg.Labels)
	r.sandboxes[sb.ID] = &sandbox{seq: r.nextID, status: cri.SandboxStatus{Sandbox: sb, Config: cfg, Ready: true, CreatedAt: r.opts.Now()}}
	return sb, nil
}

// StopPodSandbox kills its containers and marks it not ready.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record("StopPodSandbox", id)
	sb, ok := r.sandboxes[id]
	if !ok {
		return fmt.Errorf("stop sandbox %s: %w", id, cri.ErrNotFound)
	}
	for _, c := range r.containers {
		if c.status.SandboxID == id && c.status.State == cri.StateRunning {
			r.exitLocked(c, 137, cri.ReasonError, "")
		}
	}
	sb.status.Ready = false
	return nil
}

// RemovePodSandbox removes the sandbox and its containers.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record("RemovePodSandbox", id)
	if _, ok := r.sandboxes[id]; !ok {
		return fmt.Errorf("remove sandbox %s: %w", id, cri.ErrNotFound)
	}
	for cid, c := range r.containers {
		if c.status.SandboxID == id {
			if c.status.State == cri.StateRunning {
				r.exitLocked(c, 137, cri.ReasonError, "")
			}
			delete(r.containers, cid)
		}
	}
	delete(r.sandboxes, id)
	return nil
}

// ListPodSandboxes lists every sandbox, oldest first.
func (r *Runtime) ListPodSandboxes(ctx context.Context) ([]cri.SandboxStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := slices.Collect(maps.Values(r.sandboxes))
	sort.Slice(list, func(i, j int) bool { return list[i].seq < list[j].seq })
	out := make([]cri.SandboxStatus, 0, len(list))
	for _, sb := range list {
		st := sb.status
		st.Config.Labels = maps.Clone(st.Config.Labels)
		out = append(out, st)
	}
	return out, nil
}
