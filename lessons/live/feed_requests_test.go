package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

// TestFeedReportsRequests serves a request stream as an API server does:
// it replays recent requests to each new reader, writes status lines, and
// breaks once. Only the requests served after Follow are reported, each
// once, the reconnection's replay included.
func TestFeedReportsRequests(t *testing.T) {
	start := time.Now()
	old := apiserver.RequestEvent{Time: start.Add(-time.Minute), Verb: "list", Resource: "pods", Namespace: "kube-system", User: "before", Code: 200}
	first := apiserver.RequestEvent{Time: start.Add(time.Second), Verb: "list", Resource: "pods", Namespace: "kube-system", User: "admin", Code: 200}
	second := apiserver.RequestEvent{Time: start.Add(2 * time.Second), Verb: "create", Resource: "deployments", Namespace: "default", User: "admin", Code: 201}
	var connections atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/v1/nodes" || r.URL.Path == "/api/v1/pods":
			// The Feed's node and pod informers: an empty cluster.
			if r.URL.Query().Get("watch") == "true" {
				<-r.Context().Done()
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":"1"},"items":[]}`)
			return
		case r.URL.Path != "/debug/klab/events":
			http.NotFound(w, r)
			return
		}
		enc := json.NewEncoder(w)
		switch connections.Add(1) {
		case 1:
			// The replay, a status line, a new request; then the
			// stream breaks.
			enc.Encode(old)
			enc.Encode(map[string]any{"kind": "status", "time": time.Now(), "status": map[string]any{"ready": true}})
			enc.Encode(first)
		default:
			// A new reader is replayed all three, then the stream
			// goes on.
			enc.Encode(old)
			enc.Encode(first)
			enc.Encode(second)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: t, cluster: {server: %q}}]
users: [{name: t, user: {token: t}}]
contexts: [{name: t, context: {cluster: t, user: t}}]
current-context: t
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := StartFeed(ctx, &lab.Info{Name: "t-requests", APIServers: []string{srv.URL}, Kubeconfig: kubeconfig}, FeedOptions{NoMembers: true})
	defer f.Close()
	f.Follow(lessons.Needs{Requests: true})
	var got []lessons.RequestObserved
	for len(got) < 2 {
		select {
		case batch, ok := <-f.Observations():
			if !ok {
				t.Fatal("feed closed")
			}
			for _, o := range batch {
				if r, ok := o.(lessons.RequestObserved); ok {
					got = append(got, r)
				}
			}
		case <-ctx.Done():
			t.Fatalf("got %+v; want the two requests served after Follow", got)
		}
	}
	// Anything more would be a repeat; give it a moment to show.
	select {
	case batch := <-f.Observations():
		for _, o := range batch {
			if r, ok := o.(lessons.RequestObserved); ok {
				t.Errorf("reported again: %+v", r)
			}
		}
	case <-time.After(3 * retryMin):
	}
	if got[0].User != "admin" || got[0].Verb != "list" || got[1].Verb != "create" || got[1].Code != 201 {
		t.Errorf("requests %+v", got)
	}
	if got[0].Server != "apiserver-1" {
		t.Errorf("server %q; want apiserver-1 for an API server no node is known for", got[0].Server)
	}
}

// TestObserverRequestsAreNotActs: the requests of klab's own readers (the
// TUI's views, the lesson feed) are told from a student's kubectl by
// their user agent.
func TestObserverRequestsAreNotActs(t *testing.T) {
	for ua, want := range map[string]bool{
		"klab-tui":     true,
		"klab-lessons": true,
		"klab-tui/1.0": true,
		"kubectl/v1.37.2 (linux/amd64) kubernetes/abcdef": false,
		"klab-tuition":    false,
		"second-terminal": false,
		"":                false,
	} {
		if got := observer(ua); got != want {
			t.Errorf("observer(%q) = %v, want %v", ua, got, want)
		}
	}
}
