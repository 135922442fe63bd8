package feed

import (
	"bufio"
	"context"
	"errors"
	"io"
	"time"
)

// Reconnection waits: the first retry comes soon (a restarting component
// is back within a second), later ones back off so that a component that
// stays down costs one attempt every few seconds.
const (
	RetryMin = 250 * time.Millisecond
	RetryMax = 5 * time.Second
)

// maxLine bounds one line of a stream: a scheduling decision in a large
// cluster lists every node's verdicts and runs to hundreds of kilobytes.
const maxLine = 16 << 20

// ErrEnded is the error a stream reports when the server closed it.
var ErrEnded = errors.New("stream ended")

// Retry runs attempt until ctx ends: when an attempt returns, the next
// one starts after a wait that doubles from RetryMin up to RetryMax while
// attempts bring nothing, and starts again from RetryMin once one brings
// something (progressed). state hears the error of every failed attempt.
func Retry(ctx context.Context, attempt func(context.Context) (progressed bool, err error), state func(error)) {
	wait := RetryMin
	for {
		progressed, err := attempt(ctx)
		if ctx.Err() != nil {
			return
		}
		state(err)
		if progressed {
			wait = RetryMin
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, RetryMax)
	}
}

// Follow reads the newline-delimited stream that open returns, giving
// each line to line, until ctx ends, opening it again through Retry when
// it fails or ends. state hears of every change: nil when a stream opens,
// the error when it fails. The callbacks run on Follow's goroutine.
func Follow(ctx context.Context, open func(context.Context) (io.ReadCloser, error), line func([]byte), state func(error)) {
	Retry(ctx, func(ctx context.Context) (bool, error) {
		return followOnce(ctx, open, line, state)
	}, state)
}

// followOnce reads one stream to its end; delivered says whether it
// brought at least one line.
func followOnce(ctx context.Context, open func(context.Context) (io.ReadCloser, error), line func([]byte), state func(error)) (delivered bool, err error) {
	body, err := open(ctx)
	if err != nil {
		return false, err
	}
	defer body.Close()
	// Closing the body is what unblocks a read when ctx ends.
	stop := context.AfterFunc(ctx, func() { body.Close() })
	defer stop()
	state(nil)
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		delivered = true
		line(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return delivered, err
	}
	return delivered, ErrEnded
}
