// Package feed carries a live view's data from the goroutines that read it
// (newline-delimited JSON streams, Kubernetes watches) into Bubble Tea, as
// bubbletea's realtime example does: the readers send items into a Feed,
// and the view keeps one command waiting on it, armed again after every
// batch. Nothing ticks while nothing arrives.
//
// It lives under the Events view because the Scheduler view and the Events
// view both follow streams; it knows nothing of either.
package feed

import (
	"context"

	tea "github.com/charmbracelet/bubbletea"
)

// Feed is a queue of items from a view's readers to the view.
type Feed struct {
	ch   chan any
	done <-chan struct{}
}

// Batch is what Next delivers: the items that arrived since the last
// batch, oldest first. Feed says which feed they came from, so that a view
// ignores batches of a feed it has replaced.
type Batch struct {
	Feed  *Feed
	Items []any
}

// queueSize is how many items wait for a busy view before the readers
// block (and the servers they read drop events for them, as they do for
// any slow subscriber).
const queueSize = 1024

// maxBatch bounds one batch, so that a burst (a stream's replay of its
// recent past) is drawn once, not once per line, without one message
// growing without bound.
const maxBatch = 512

// New returns a feed that ends with ctx.
func New(ctx context.Context) *Feed {
	return &Feed{ch: make(chan any, queueSize), done: ctx.Done()}
}

// Send queues an item, waiting while the queue is full. It returns false
// once the feed's context has ended.
func (f *Feed) Send(item any) bool {
	select {
	case <-f.done:
		return false
	default:
	}
	select {
	case f.ch <- item:
		return true
	case <-f.done:
		return false
	}
}

// Next returns the command that waits for the next items and delivers
// Take returns msg as a batch of f, or false when it is something else
// (another feed's batch, or f is nil).
func (f *Feed) Take(msg tea.Msg) (Batch, bool) {
	b, ok := msg.(Batch)
	return b, ok && f != nil && b.Feed == f
}

// them as one Batch; it delivers nothing once the feed's context ends.
func (f *Feed) Next() tea.Cmd {
	return func() tea.Msg {
		var first any
		select {
		case first = <-f.ch:
		case <-f.done:
			return nil
		}
		items := []any{first}
		for len(items) < maxBatch {
			select {
			case it := <-f.ch:
				items = append(items, it)
			default:
				return Batch{Feed: f, Items: items}
			}
		}
		return Batch{Feed: f, Items: items}
	}
}
