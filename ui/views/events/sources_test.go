package events

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/views/events/feed/feedtest"
)

// fakeAPIServer answers the three requests the view makes: the list and
// the watch of events.k8s.io/v1 Events, and the request log, whose first
// stream ends early (as when the API server restarts) and whose second
// replays the past before a new request.
type fakeAPIServer struct {
	mu      sync.Mutex
	streams int
	watches int
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	enc := json.NewEncoder(w)
	old := apiserver.RequestEvent{Time: uitest.Now, Verb: "get", Resource: "pods", Namespace: "default", Name: "web", User: "kubernetes-admin", Code: 200, LatencyMS: 1}
	switch {
	case r.URL.Path == "/debug/klab/events":
		f.mu.Lock()
		f.streams++
		n := f.streams
		f.mu.Unlock()
		enc.Encode(old)
		if n == 1 {
			return
		}
		next := old
		next.Time, next.Verb, next.Code = uitest.Now.Add(time.Second), "delete", 200
		enc.Encode(next)
		if n >= 3 {
			newer := old
			newer.Time, newer.Verb, newer.Code = uitest.Now.Add(2*time.Second), "create", 201
			enc.Encode(newer)
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case r.URL.Path == "/apis/events.k8s.io/v1/events" && r.URL.Query().Get("watch") != "true":
		w.Header().Set("Content-Type", "application/json")
		enc.Encode(eventsv1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []eventsv1.Event{
			fakeEvent("a", "Scheduled", uitest.Now),
		}})
	case r.URL.Path == "/apis/events.k8s.io/v1/events":
		f.mu.Lock()
		f.watches++
		f.mu.Unlock()
		if got := r.URL.Query().Get("resourceVersion"); got != "7" {
			http.Error(w, "watch from "+got, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		e := fakeEvent("b", "Pulled", uitest.Now.Add(time.Second))
		enc.Encode(metav1.WatchEvent{Type: "ADDED", Object: runtimeRaw(e)})
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	default:
		http.NotFound(w, r)
	}
}

func runtimeRaw(e eventsv1.Event) runtime.RawExtension {
	b, _ := json.Marshal(e)
	return runtime.RawExtension{Raw: b}
}

func fakeEvent(uid, reason string, at time.Time) eventsv1.Event {
	return eventsv1.Event{
		TypeMeta:   metav1.TypeMeta{Kind: "Event", APIVersion: "events.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "web." + uid, Namespace: "default", UID: types.UID("uid-" + uid)},
		EventTime:  metav1.NewMicroTime(at), Reason: reason, Type: corev1.EventTypeNormal, Note: reason + " note",
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		ReportingController: "kubelet", ReportingInstance: "worker-1", Action: "Test",
	}
}

// kubeconfig writes a kubeconfig for a plain-HTTP server.
func kubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFeedsFollowAndReconnect: the Events are listed, then watched from
// the list's resourceVersion; the request log is read again after its
// stream ends, without repeating what it replays.
func TestFeedsFollowAndReconnect(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	fake := &fakeAPIServer{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	info := &lab.Info{Name: "t", Kubeconfig: kubeconfig(t, srv.URL), APIServers: []string{srv.URL}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v := New(c)
	v.SetSize(120, 40)
	// Once the log is followed, the view is hidden: it stops reading
	// the log; shown again, it reads it anew and takes nothing twice
	// from what the server replays.
	start := v.Start(ctx, info)
	reshown := false
	feedtest.Drive(t, tea.Batch(start, v.Show(true)), v.Update, func() bool {
		if reshown {
			return len(v.requests.rows) >= 3
		}
		if !(len(v.events.rows) == 2 && len(v.requests.rows) == 2 && v.watching && v.servers[0].Connected) {
			return false
		}
		if v.events.rows[1].Reason != "Pulled" || v.events.rows[1].Controller != "kubelet" || v.events.rows[1].object() != "pod/web" {
			t.Errorf("watched event %+v", v.events.rows[1])
		}
		if v.requests.rows[0].Verb != "get" || v.requests.rows[1].Verb != "delete" || v.requests.rows[0].Server != "apiserver-1" {
			t.Errorf("requests %+v, want the get once, then the delete", v.requests.rows)
		}
		fake.mu.Lock()
		if fake.streams != 2 || fake.watches != 1 {
			t.Errorf("%d request-log streams and %d watches, want 2 and 1", fake.streams, fake.watches)
		}
		fake.mu.Unlock()
		if v.Show(false) != nil || v.Show(false) != nil {
			t.Error("hiding the view has nothing to run")
		}
		v.Show(true)() // starts the followers and returns no message
		reshown = true
		return false
	}, 10*time.Second)
	if len(v.requests.rows) != 3 || v.requests.rows[2].Verb != "create" {
		t.Errorf("requests after showing the view again: %+v; want the get, the delete, and the new create", v.requests.rows)
	}
}
