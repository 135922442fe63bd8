package scheduler

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestDecisionRingKeepsTheLatest(t *testing.T) {
	r := newDecisionRing(3)
	for i := range 5 {
		r.add(&Decision{Namespace: "default", Name: fmt.Sprintf("p%d", i%2), Attempt: i})
	}
	tests := []struct {
		namespace, name string
		want            []int
	}{
		{"", "", []int{2, 3, 4}},
		{"default", "p0", []int{2, 4}},
		{"default", "", []int{2, 3, 4}},
		{"other", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.namespace+"/"+tt.name, func(t *testing.T) {
			var got []int
			for _, d := range r.list(tt.namespace, tt.name) {
				got = append(got, d.Attempt)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("attempts %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var st stats
	for i := 1; i <= 100; i++ {
		st.observeCycle(time.Duration(i) * time.Millisecond)
	}
	st.count(ResultScheduled)
	st.count(ResultUnschedulable)
	st.count(ResultError)
	c, p50, p99 := st.snapshot()
	if p50 != 50*time.Millisecond || p99 != 99*time.Millisecond {
		t.Errorf("p50 %v p99 %v, want 50ms 99ms", p50, p99)
	}
	if c != (Counters{Scheduled: 1, Unschedulable: 1, Errors: 1}) {
		t.Errorf("counters %+v", c)
	}
	// The window holds the latest cycleSamples durations only.
	for range cycleSamples {
		st.observeCycle(time.Second)
	}
	if _, p50, _ := st.snapshot(); p50 != time.Second {
		t.Errorf("after a full window of 1s cycles p50 = %v", p50)
	}
}

func TestDecisionsEndpointFilters(t *testing.T) {
	s, err := New(Config{REST: &rest.Config{Host: "https://127.0.0.1:1"}, Identity: "master-1", Profile: testProfile(), DisableLeaderElection: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	s.record(&Decision{Namespace: "default", Name: "web", Result: ResultUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."})
	s.record(&Decision{Namespace: "default", Name: "db", Result: ResultScheduled, Node: "worker-1"})
	s.record(&Decision{Namespace: "prod", Name: "web", Result: ResultScheduled, Node: "worker-2"})
	srv := httptest.NewServer(s.debugMux())
	defer srv.Close()
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"default/web", "default/db", "prod/web"}},
		{"?namespace=default", []string{"default/web", "default/db"}},
		{"?namespace=default&name=web", []string{"default/web"}},
		{"?name=web", []string{"default/web", "prod/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var got []Decision
			getJSON(t, srv.URL+"/debug/klab/decisions"+tt.query, &got)
			var pods []string
			for _, d := range got {
				pods = append(pods, d.Pod())
			}
			if fmt.Sprint(pods) != fmt.Sprint(tt.want) {
				t.Errorf("pods %v, want %v", pods, tt.want)
			}
		})
	}
	var st Status
	getJSON(t, srv.URL+"/debug/klab/status", &st)
	if st.Counters.Unschedulable != 1 || st.Counters.Scheduled != 0 {
		// Scheduled pods count once bound, and none was.
		t.Errorf("counters %+v", st.Counters)
	}
}
