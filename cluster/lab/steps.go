package lab

import (
	"context"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Phase is where a step is: started, then done or failed.
type Phase int

// Step phases.
const (
	StepStarted Phase = iota
	StepDone
	StepFailed
)

// StepEvent reports progress of a long operation (Up, Close) one step at a
// time, as kind's status lines do: the CLI prints them with ✓ and ✗, the
// TUI turns them into messages.
type StepEvent struct {
	// Title says what the step does. It is rendered when shown, so it
	// follows a language switch.
	Title i18n.Message
	Phase Phase
	// Elapsed is the step's duration, set when it is done or failed.
	Elapsed time.Duration
	// Err is why the step failed.
	Err error
}

// Progress receives step events. It is called from the goroutine running
// the operation and must not block for long.
type Progress func(StepEvent)

// step runs fn as one step, reporting its start and its end to p.
func (p Progress) step(title i18n.Message, fn func() error) error {
	if p == nil {
		return fn()
	}
	start := time.Now()
	p(StepEvent{Title: title, Phase: StepStarted})
	err := fn()
	ev := StepEvent{Title: title, Phase: StepDone, Elapsed: time.Since(start)}
	if err != nil {
		ev.Phase, ev.Err = StepFailed, err
	}
	p(ev)
	return err
}

// step is one row of a cluster's lifecycle (see lifecycle.go): what it is
// called, when it has nothing to do, the work it does itself, and the
// components it runs, which are what it adds to the cluster's topology.
type step struct {
	// title says what the step does, on its ✓/✗ line; a step without one
	// runs silently (it does nothing a user waits for).
	title func(*bringUp) i18n.Message
	// skip reports that the step has nothing to do for this cluster (no
	// image to build in the local runtime, no load balancer in front of a
	// single API server). It may only look at the cluster's spec and
	// runtime, so that the topology can be told before anything runs.
	skip func(*bringUp) bool
	// run does the step's own work, before its components start.
	run func(*bringUp, context.Context) error
	// on picks the nodes the step's components run on; each of components
	// runs on each of them, in that order.
	on         func(*bringUp) []runtime.Node
	components []stepComponent
}

// stepComponent is one component a step runs on each of its nodes.
type stepComponent struct {
	// name is the component's name in its Ref ("etcd").
	name string
	// spec describes the component on node n; its Ref is filled in.
	spec func(b *bringUp, n runtime.Node) (runtime.ComponentSpec, error)
}

// undo is one entry of a bring-up's cleanup stack: what a step made, and
// how to take it away again.
type undo struct {
	what string
	fn   func(context.Context) error
}

// run is the runner: it runs steps in order, reporting each titled one to
// the bring-up's Progress with its duration, and stops at the first that
// fails. It does not roll back; the caller decides (see rollback).
func (b *bringUp) run(ctx context.Context, steps []step) error {
	for _, s := range steps {
		if s.skip != nil && s.skip(b) {
			continue
		}
		do := func() error { return b.do(ctx, s) }
		var err error
		if s.title == nil {
			err = do()
		} else {
			err = b.opts.Progress.step(s.title(b), do)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// do runs one step: its own work, then its components, created unless they
// exist already (klab start) and started together.
func (b *bringUp) do(ctx context.Context, s step) error {
	if s.run != nil {
		if err := s.run(b, ctx); err != nil {
			return err
		}
	}
	if len(s.components) == 0 {
		return nil
	}
	var refs []runtime.Ref
	for _, n := range s.on(b) {
		for _, comp := range s.components {
			spec, err := comp.spec(b, n)
			if err != nil {
				return err
			}
			spec.Ref = runtime.Ref{Node: n.Name, Component: comp.name}
			if !b.existing {
				if err := b.c.rt.CreateComponent(ctx, spec); err != nil {
					return err
				}
			}
			refs = append(refs, spec.Ref)
		}
	}
	return b.c.startAll(ctx, refs, nil)
}

// topology lists, per node, the components steps run on it, in the order
// they start: masters first, then the load balancer, then workers. It
// needs only the nodes, so it tells the topology of a cluster that another
// process brought up from its cluster.json.
func (b *bringUp) topology(steps []step) []nodeComponents {
	var refs []runtime.Ref
	for _, s := range steps {
		if len(s.components) == 0 || s.skip != nil && s.skip(b) {
			continue
		}
		for _, n := range s.on(b) {
			for _, comp := range s.components {
				refs = append(refs, runtime.Ref{Node: n.Name, Component: comp.name})
			}
		}
	}
	return topologyOf(refs)
}

// onFailure pushes onto the cleanup stack how to undo what a step just
// made. If a later step fails, rollback undoes it, last made first.
func (b *bringUp) onFailure(what string, fn func(context.Context) error) {
	b.cleanup = append(b.cleanup, undo{what: what, fn: fn})
}

// rollbackTimeout bounds the undoing of a failed bring-up. Removing a Docker
// cluster's few dozen containers takes seconds; stopping goroutines, less.
const rollbackTimeout = 2 * time.Minute

// rollback undoes what the steps made, last made first, unless the options
// say to keep it (--retain) for debugging.
func (b *bringUp) rollback() {
	if len(b.cleanup) == 0 {
		return
	}
	logger := b.c.logger
	if b.opts.Retain {
		logger.Warn("rollback skipped (--retain): the failed cluster's objects are kept for debugging", "cluster", b.c.spec.Name)
		return
	}
	// The context of the failed bring-up may be what failed it.
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	for i := len(b.cleanup) - 1; i >= 0; i-- {
		u := b.cleanup[i]
		if err := u.fn(ctx); err != nil {
			logger.Warn("rollback: "+u.what, "cluster", b.c.spec.Name, "err", err)
		}
	}
	b.cleanup = nil
}
