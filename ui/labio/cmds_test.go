package labio

import (
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
)

func heartbeat() lab.Observation {
	return &lab.EventObservation{Event: etcd.Event{Kind: etcd.EventSend, Msg: &etcd.MessageInfo{Type: "MsgHeartbeat"}}}
}

func vote() lab.Observation {
	return &lab.EventObservation{Event: etcd.Event{Kind: etcd.EventSend, Msg: &etcd.MessageInfo{Type: "MsgVote"}}}
}

// nextBeat returns the first multiple of lab.RoutineBeat after t.
func nextBeat(t time.Time) time.Time { return t.Truncate(lab.RoutineBeat).Add(lab.RoutineBeat) }

// waitOffBeat sleeps until 60 ms after a RoutineBeat, so that routine
// traffic arriving now waits for the next beat, about 190 ms away.
func waitOffBeat() {
	time.Sleep(time.Until(nextBeat(time.Now()).Add(60 * time.Millisecond)))
}

// Routine traffic is gathered until just after the next beat.
func TestWaitObservationsHoldsRoutineUntilTheBeat(t *testing.T) {
	ch, news := make(chan lab.Observation, 8), make(chan struct{}, 1)
	waitOffBeat()
	sent := time.Now()
	ch <- heartbeat()
	go func() {
		time.Sleep(100 * time.Millisecond)
		ch <- heartbeat()
	}()
	msg := WaitObservations(ch, news, lab.RoutineBeat)().(ObservationsMsg)
	due := nextBeat(sent.Add(-observeCoalesce)).Add(observeCoalesce)
	if now := time.Now(); now.Before(due) {
		t.Errorf("routine traffic delivered %v before the beat's gathering ended", due.Sub(now))
	}
	if len(msg.Batch) != 2 {
		t.Errorf("batch of %d; want both heartbeats, the second sent 100 ms after the first", len(msg.Batch))
	}
}

// News cuts the gathering of routine traffic short, and news first is
// delivered within observeCoalesce.
func TestWaitObservationsDeliversNewsSoon(t *testing.T) {
	ch, news := make(chan lab.Observation, 8), make(chan struct{}, 1)
	waitOffBeat()
	ch <- heartbeat()
	go func() {
		time.Sleep(20 * time.Millisecond)
		ch <- vote()
		news <- struct{}{}
	}()
	start := time.Now()
	msg := WaitObservations(ch, news, lab.RoutineBeat)().(ObservationsMsg)
	if took := time.Since(start); took >= 180*time.Millisecond {
		t.Errorf("a vote behind a heartbeat took %v; news is drawn within about %v", took, 20*time.Millisecond+observeCoalesce)
	}
	if len(msg.Batch) != 2 {
		t.Errorf("batch of %d; want the heartbeat and the vote", len(msg.Batch))
	}
	select {
	case <-news:
		t.Error("the news signal of a delivered vote was left for the next call")
	default:
	}

	ch <- vote()
	start = time.Now()
	msg = WaitObservations(ch, news, lab.RoutineBeat)().(ObservationsMsg)
	if took := time.Since(start); took < observeCoalesce || took > 180*time.Millisecond {
		t.Errorf("a vote took %v; want about %v", took, observeCoalesce)
	}
	if len(msg.Batch) != 1 {
		t.Errorf("batch of %d; want the vote", len(msg.Batch))
	}
}

func TestWaitObservationsClosed(t *testing.T) {
	ch := make(chan lab.Observation)
	close(ch)
	if _, ok := WaitObservations(ch, nil, lab.RoutineBeat)().(ObserverClosedMsg); !ok {
		t.Error("a closed Observer must say so")
	}
}

// Calm, routine traffic waits for the next whole second, not the next
// beat.
func TestWaitObservationsCalm(t *testing.T) {
	ch, news := make(chan lab.Observation, 8), make(chan struct{}, 1)
	time.Sleep(time.Until(time.Now().Truncate(lab.CalmBeat).Add(lab.CalmBeat + 60*time.Millisecond)))
	sent := time.Now()
	ch <- heartbeat()
	WaitObservations(ch, news, lab.CalmBeat)()
	due := sent.Truncate(lab.CalmBeat).Add(lab.CalmBeat + observeCoalesce)
	if now := time.Now(); now.Before(due) {
		t.Errorf("calm routine traffic delivered %v before the second's gathering ended", due.Sub(now))
	}
}
