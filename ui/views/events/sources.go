package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/views/events/feed"
)

// The view has two feeds: the cluster's Events, through a list and a
// watch of events.k8s.io/v1 Events in every namespace (the admin
// kubeconfig, through the load balancer like kubectl); and every API
// server's request log, /debug/klab/events on each master's own API
// server, since each logs only the requests it served.

// Items of the feed.
type (
	// eventsListed carries the Events a (re)list found.
	eventsListed struct{ Rows []eventRow }
	// eventChanged carries an Event the watch reported added or updated.
	eventChanged struct{ Row eventRow }
	// eventsState says the watch is running (Err nil) or failed.
	eventsState struct{ Err error }
	// requestItem is one request from one API server's log.
	requestItem struct{ Row requestRow }
	// requestState says an API server's log is open (Err nil) or failed.
	requestState struct {
		Server string
		Err    error
	}
)

// listTimeout bounds a list of the Events; a watch has no bound.
const listTimeout = 10 * time.Second

// apiServer is one master's API server.
type apiServer struct {
	Node, URL string
}

// apiServers lists the masters' API servers and where this machine
// reaches each (cluster.json lists their URLs in the masters' order).
func apiServers(info *lab.Info) []apiServer {
	var masters []runtime.Node
	for _, n := range info.Nodes {
		if n.Role == runtime.RoleMaster {
			masters = append(masters, n)
		}
	}
	var out []apiServer
	for i, u := range info.APIServers {
		name := fmt.Sprintf("apiserver-%d", i+1)
		for _, m := range masters {
			if "https://"+m.HostAddr("apiserver") == u {
				name = m.Name
			}
		}
		out = append(out, apiServer{Node: name, URL: u})
	}
	return out
}

// restConfig reads the admin kubeconfig.
func restConfig(info *lab.Info) (*rest.Config, error) {
	if info.Kubeconfig == "" {
		return nil, errors.New("cluster.json names no kubeconfig")
	}
	return clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
}

// watchEvents follows the cluster's Events into f until ctx ends: list,
// then watch from the list's resourceVersion; when the watch ends or
// fails, list again after a backoff (a relist also covers a
// resourceVersion too old to watch from).
func watchEvents(ctx context.Context, f *feed.Feed, info *lab.Info) {
	var client kubernetes.Interface
	attempt := func(ctx context.Context) (bool, error) {
		if client == nil {
			cfg, err := restConfig(info)
			if err != nil {
				return false, err
			}
			if client, err = kubernetes.NewForConfig(cfg); err != nil {
				return false, err
			}
		}
		lctx, cancel := context.WithTimeout(ctx, listTimeout)
		list, err := client.EventsV1().Events(metav1.NamespaceAll).List(lctx, metav1.ListOptions{})
		cancel()
		if err != nil {
			return false, err
		}
		rows := make([]eventRow, len(list.Items))
		for i := range list.Items {
			rows[i] = rowOf(&list.Items[i])
		}
		f.Send(eventsListed{Rows: rows})
		w, err := client.EventsV1().Events(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{
			ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true,
		})
		if err != nil {
			return true, err
		}
		defer w.Stop()
		f.Send(eventsState{})
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified:
				if e, ok := ev.Object.(*eventsv1.Event); ok {
					f.Send(eventChanged{Row: rowOf(e)})
				}
			case watch.Error:
				return true, fmt.Errorf("watch: %v", ev.Object)
			}
			// Deleted Events (their TTL ran out) stay on screen, as in a
			// log; bookmarks carry nothing to show.
		}
		return true, feed.ErrEnded
	}
	feed.Retry(ctx, attempt, func(err error) { f.Send(eventsState{Err: cause(err)}) })
}

// cause drops the method and URL client-go puts before a connection's
// error: the view knows which server it asked, the reader wants why it
// failed.
func cause(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

// followRequests follows one API server's request log into f until ctx
// ends. A reconnected stream replays the server's recent requests; the
// view drops those it already has.
func followRequests(ctx context.Context, f *feed.Feed, info *lab.Info, srv apiServer) {
	var client rest.Interface
	open := func(ctx context.Context) (io.ReadCloser, error) {
		if client == nil {
			cfg, err := restConfig(info)
			if err != nil {
				return nil, err
			}
			cfg = rest.CopyConfig(cfg)
			cfg.Host = srv.URL
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return nil, err
			}
			client = cs.CoreV1().RESTClient()
		}
		// Requests come in on the Observer's beat, with the raft
		// traffic they cause, not one wake-up each.
		body, err := client.Get().AbsPath("/debug/klab/events").Param("quiet", lab.RoutineBeat.String()).Stream(ctx)
		return body, cause(err)
	}
	line := func(b []byte) {
		var ev apiserver.RequestEvent
		if json.Unmarshal(b, &ev) != nil {
			return
		}
		f.Send(requestItem{Row: requestRow{Server: srv.Node, RequestEvent: ev}})
	}
	feed.Follow(ctx, open, line, func(err error) { f.Send(requestState{Server: srv.Node, Err: err}) })
}
