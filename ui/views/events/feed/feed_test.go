package feed

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNextDeliversBatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := New(ctx)
	for i := 0; i < 3; i++ {
		f.Send(i)
	}
	b, ok := f.Next()().(Batch)
	if !ok || b.Feed != f || len(b.Items) != 3 || b.Items[2] != 2 {
		t.Fatalf("first batch %+v, want the three items in order", b)
	}
	cancel()
	if msg := f.Next()(); msg != nil {
		t.Errorf("after the context ended Next delivered %v, want nothing", msg)
	}
	if f.Send(4) {
		t.Errorf("Send succeeded after the context ended")
	}
}

func TestBatchesAreBounded(t *testing.T) {
	f := New(context.Background())
	go func() {
		for i := 0; i < maxBatch+10; i++ {
			f.Send(i)
		}
	}()
	total := 0
	for total < maxBatch+10 {
		b := f.Next()().(Batch)
		if len(b.Items) > maxBatch {
			t.Fatalf("a batch of %d items, more than %d", len(b.Items), maxBatch)
		}
		total += len(b.Items)
	}
}

// TestFollowReconnects: a stream that ends is opened again; state hears
// each opening and each end; lines arrive in order.
func TestFollowReconnects(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var lines []string
	var states []string
	opens := 0
	open := func(context.Context) (io.ReadCloser, error) {
		opens++
		switch opens {
		case 1:
			return io.NopCloser(strings.NewReader("a\n\nb\n")), nil
		case 2:
			return nil, errors.New("connection refused")
		}
		return io.NopCloser(strings.NewReader("c\n")), nil
	}
	done := make(chan struct{})
	line := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, string(b))
		if len(lines) == 3 {
			close(done)
		}
	}
	state := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			states = append(states, "open")
		} else {
			states = append(states, err.Error())
		}
	}
	go Follow(ctx, open, line, state)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the third line never came")
	}
	cancel()
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(lines, ",") != "a,b,c" {
		t.Errorf("lines %q, want a, b, c", lines)
	}
	want := "open,stream ended,connection refused,open"
	if got := strings.Join(states, ","); !strings.HasPrefix(got, want) {
		t.Errorf("states %q, want %q first", got, want)
	}
}

// TestRetryBacksOff: failed attempts wait longer each time, up to
// RetryMax; an attempt that brought something starts the waits over.
func TestRetryBacksOff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var starts []time.Time
	done := make(chan struct{})
	attempt := func(context.Context) (bool, error) {
		starts = append(starts, time.Now())
		if len(starts) == 4 {
			close(done)
			<-ctx.Done()
		}
		return len(starts) == 3, errors.New("down")
	}
	go Retry(ctx, attempt, func(error) {})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no fourth attempt")
	}
	gap := func(i int) time.Duration { return starts[i].Sub(starts[i-1]) }
	if gap(1) < RetryMin || gap(2) < 2*RetryMin {
		t.Errorf("waits %v, %v; want at least %v then %v", gap(1), gap(2), RetryMin, 2*RetryMin)
	}
	if gap(3) >= 2*RetryMin {
		t.Errorf("after an attempt that progressed the wait was %v, want it back near %v", gap(3), RetryMin)
	}
}

func TestTakeKnowsItsOwnBatches(t *testing.T) {
	f, g := New(context.Background()), New(context.Background())
	var none *Feed
	if _, ok := f.Take(Batch{Feed: f}); !ok {
		t.Error("a feed does not take its own batch")
	}
	if _, ok := f.Take(Batch{Feed: g}); ok {
		t.Error("a feed takes another's batch")
	}
	if _, ok := f.Take("x"); ok {
		t.Error("a feed takes a message that is no batch")
	}
	if _, ok := none.Take(Batch{Feed: f}); ok {
		t.Error("a nil feed takes a batch")
	}
}
