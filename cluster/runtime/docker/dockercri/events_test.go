package dockercri

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/client"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

func TestEvents(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sb := fx.sandbox("job")
	cfg := containerConfig("main", "exit", "0")
	id := fx.start(sb, cfg)

	// The sandbox's pause container sends none: the first events are the
	// container's start, then its exit.
	for _, want := range []cri.EventType{cri.ContainerStarted, cri.ContainerExited} {
		select {
		case ev := <-fx.rt.Events():
			if ev.Type != want || ev.ContainerID != id || ev.SandboxID != sb.ID || !maps.Equal(ev.Labels, cfg.Labels) {
				t.Fatalf("event = %+v, want %s of %s in %s with labels %v", ev, want, id, sb.ID, cfg.Labels)
			}
		case <-time.After(testTimeout):
			t.Fatalf("no %s event", want)
		}
	}
}

// TestEventsReconnect: when the engine's event stream breaks, the runtime
// follows it again from the last event it saw. The engine here is a fake
// that serves /events only: the first stream sends one event and ends, the
// second sends one more and stays open.
func TestEventsReconnect(t *testing.T) {
	first := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	attrs := map[string]string{
		labels.Cluster: "lab", labels.Node: "n1", labels.Role: labels.RolePod,
		labels.SandboxID: "sb1", labels.PodLabels: `{"io.kubernetes.pod.uid":"u1"}`,
	}
	streams := make(chan string, 2) // each stream's since and filters
	var calls atomic.Int32
	engineAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/events") {
			http.NotFound(w, r)
			return
		}
		n := calls.Add(1)
		streams <- r.URL.Query().Get("since") + " " + r.URL.Query().Get("filters")
		send := func(action events.Action, at time.Time) {
			json.NewEncoder(w).Encode(events.Message{
				Type: events.ContainerEventType, Action: action, TimeNano: at.UnixNano(),
				Actor: events.Actor{ID: "c1", Attributes: attrs},
			})
			w.(http.Flusher).Flush()
		}
		if n == 1 {
			send(events.ActionStart, first)
			return // the stream breaks
		}
		send(events.ActionDie, first.Add(time.Second))
		<-r.Context().Done()
	}))
	defer engineAPI.Close()

	docker, err := client.NewClientWithOpts(client.WithHost("tcp://"+strings.TrimPrefix(engineAPI.URL, "http://")), client.WithVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	defer docker.Close()
	r := &Runtime{
		cfg: Config{Cluster: "lab", Node: "n1"}, docker: docker,
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		events: make(chan cri.Event, eventBuffer), eventsDone: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	go r.watchEvents(ctx)
	defer func() {
		cancel()
		<-r.eventsDone
	}()

	for _, want := range []cri.EventType{cri.ContainerStarted, cri.ContainerExited} {
		select {
		case ev := <-r.events:
			if ev.Type != want || ev.ContainerID != "c1" || ev.SandboxID != "sb1" || ev.Labels[labels.PodUID] != "u1" {
				t.Fatalf("event = %+v, want %s of c1 in sb1 for pod u1", ev, want)
			}
		case <-time.After(testTimeout):
			t.Fatalf("no %s event", want)
		}
	}
	<-streams // the first stream's since is the time of New
	second := <-streams
	since, filters, _ := strings.Cut(second, " ")
	if want := "1704164645.000000006"; since != want {
		t.Errorf("the second stream follows from %q, want %q (the last event's time)", since, want)
	}
	for _, want := range []string{"io.klab.node=n1", "io.klab.role=pod", `"die"`, `"start"`, `"oom"`, `"container"`} {
		if !strings.Contains(filters, want) {
			t.Errorf("filters %s do not ask for %s", filters, want)
		}
	}
}
