package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
)

// BaseTick is etcd's default tick (its heartbeat interval): the raft clock
// at 1×.
const BaseTick = etcd.DefaultTickInterval

// Slowdowns are the speeds the raft clock can run at, as divisors of real
// time: 1×, ½×, ... down to 1/100×. At 1/100× one tick lasts ten seconds,
// slow enough to read every vote of an election.
var Slowdowns = []int{1, 2, 5, 10, 20, 50, 100}

// SlowdownOf returns the index in Slowdowns closest to a tick interval.
func SlowdownOf(tick time.Duration) int {
	best := 0
	dist := func(s int) time.Duration {
		d := tick - BaseTick*time.Duration(s)
		if d < 0 {
			return -d
		}
		return d
	}
	for i, s := range Slowdowns {
		if dist(s) < dist(Slowdowns[best]) {
			best = i
		}
	}
	return best
}

// ClockAnswer is one member's answer to a clock request.
type ClockAnswer struct {
	Member string           `json:"member"`
	Clock  etcd.ClockStatus `json:"clock"`
	Err    error            `json:"-"`
}

// SetClock sends one clock request (pause, resume, step, tick interval) to
// every member of a cluster at once, as the TUI's clock keys and klab clock
// do. Members that do not answer (stopped, killed) are reported but do not
// fail the call: they start again on the default clock. It fails only when
// no member took the request. An empty request only reads the clocks.
func SetClock(ctx context.Context, members []MemberInfo, req etcd.ClockRequest) ([]ClockAnswer, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode clock request: %w", err)
	}
	answers := make([]ClockAnswer, len(members))
	// An empty request changes nothing: read the clocks instead, so that
	// looking does not leave a clock event in every member's stream.
	method := http.MethodPost
	if req == (etcd.ClockRequest{}) {
		method, body = http.MethodGet, nil
	}
	eachMember(members, func(i int, m MemberInfo) {
		answers[i].Member = m.Name
		answers[i].Clock, answers[i].Err = clockCall(ctx, m.HTTPClient(statusTimeout), method, m.DebugURL+"/clock", body)
	})
	var errs []error
	for _, a := range answers {
		if a.Err == nil {
			return answers, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", a.Member, a.Err))
	}
	return answers, i18n.Wrap(errors.Join(errs...), "lab.err.clock")
}

func clockCall(ctx context.Context, hc *http.Client, method, url string, body []byte) (etcd.ClockStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return etcd.ClockStatus{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return etcd.ClockStatus{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return etcd.ClockStatus{}, fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	var st etcd.ClockStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return etcd.ClockStatus{}, fmt.Errorf("%s %s: decode: %w", method, url, err)
	}
	return st, nil
}

// eachMember runs f for every member at once and waits for all of them.
func eachMember(members []MemberInfo, f func(i int, m MemberInfo)) {
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i, m)
		}()
	}
	wg.Wait()
}
