package proxy

import (
	"context"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/lab"
	kubeproxy "github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/proxy/traffic"
)

// The view's I/O, each piece a tea.Cmd whose message carries the epoch (one
// per Start) or the feed (one per followed kube-proxy) it belongs to, so
// that the answers of a feed the view has left are dropped.

type connectedMsg struct {
	epoch   int
	cluster Cluster
	err     error
}

type watchingMsg struct {
	epoch   int
	changes <-chan struct{}
	err     error
}

type servicesMsg struct {
	epoch    int
	services []service
}

type subscribedMsg struct {
	feed int
	ch   <-chan kubeproxy.Event
	err  error
}

type proxyEventsMsg struct {
	feed   int
	events []kubeproxy.Event
	ch     <-chan kubeproxy.Event
}

type streamEndedMsg struct{ feed int }

type rulesMsg struct {
	feed     int
	statuses []lab.NodeProxy
	rules    string
	err      error
}

type switchedMsg struct {
	epoch int
	mode  string
	nodes []lab.NodeProxy
	err   error
}

type trafficMsg struct {
	run     int
	results []traffic.Result
	done    bool
	err     error
	// ch brings the burst's next results.
	ch <-chan trafficItem
}

func connect(epoch int, fn func(*lab.Info) (Cluster, error), info *lab.Info) tea.Cmd {
	return func() tea.Msg {
		cl, err := fn(info)
		return connectedMsg{epoch: epoch, cluster: cl, err: err}
	}
}

func watchServices(ctx context.Context, epoch int, cl Cluster) tea.Cmd {
	return func() tea.Msg {
		ch, err := cl.WatchServices(ctx)
		return watchingMsg{epoch: epoch, changes: ch, err: err}
	}
}

// waitServices waits for the next change of Services or EndpointSlices and
// lists them.
func waitServices(ctx context.Context, epoch int, cl Cluster, changes <-chan struct{}) tea.Cmd {
	return func() tea.Msg {
		select {
		case <-changes:
		case <-ctx.Done():
			return nil
		}
		return servicesMsg{epoch: epoch, services: buildServices(cl.Services())}
	}
}

func subscribe(ctx context.Context, feed int, cl Cluster, node string) tea.Cmd {
	return func() tea.Msg {
		ch, err := cl.ProxyEvents(ctx, node)
		return subscribedMsg{feed: feed, ch: ch, err: err}
	}
}

// waitProxyEvents waits for the kube-proxy's next event and takes the ones
// already behind it too: a burst of syncs makes one message.
func waitProxyEvents(ctx context.Context, feed int, ch <-chan kubeproxy.Event) tea.Cmd {
	return func() tea.Msg {
		var msg proxyEventsMsg
		select {
		case e, ok := <-ch:
			if !ok {
				return streamEndedMsg{feed: feed}
			}
			msg = proxyEventsMsg{feed: feed, events: []kubeproxy.Event{e}, ch: ch}
		case <-ctx.Done():
			return nil
		}
		for {
			select {
			case e, ok := <-ch:
				if !ok {
					return msg // the end shows on the next wait
				}
				msg.events = append(msg.events, e)
			default:
				return msg
			}
		}
	}
}

func fetchRules(ctx context.Context, feed int, cl Cluster, node string) tea.Cmd {
	return func() tea.Msg {
		statuses, err := cl.ProxyStatuses(ctx)
		if err != nil {
			return rulesMsg{feed: feed, err: err}
		}
		rules, err := cl.ProxyRules(ctx, node)
		return rulesMsg{feed: feed, statuses: statuses, rules: rules, err: err}
	}
}

func switchMode(ctx context.Context, epoch int, cl Cluster, mode string) tea.Cmd {
	return func() tea.Msg {
		nodes, err := cl.SwitchMode(ctx, mode)
		return switchedMsg{epoch: epoch, mode: mode, nodes: nodes, err: err}
	}
}

// trafficItem is what a running burst reports: a result, or its end.
type trafficItem struct {
	result traffic.Result
	done   bool
	err    error
}

// sendTraffic starts a burst and streams its results: Traffic runs in its
// own goroutine and hands each result over as it finishes, so the chart
// fills while the burst runs.
func sendTraffic(ctx context.Context, run int, cl Cluster, o lab.TrafficOptions) tea.Cmd {
	return func() tea.Msg {
		// Room for every result and the end: Traffic never waits for the
		// view.
		ch := make(chan trafficItem, o.Count+1)
		o.OnResult = func(r traffic.Result) {
			select {
			case ch <- trafficItem{result: r}:
			case <-ctx.Done():
			}
		}
		go func() {
			_, err := cl.Traffic(ctx, o)
			select {
			case ch <- trafficItem{done: true, err: err}:
			case <-ctx.Done():
			}
		}()
		return waitTraffic(ctx, run, ch)()
	}
}

// waitTraffic waits for the burst's next result and takes the ones already
// behind it too.
func waitTraffic(ctx context.Context, run int, ch <-chan trafficItem) tea.Cmd {
	return func() tea.Msg {
		msg := trafficMsg{run: run, ch: ch}
		take := func(it trafficItem) {
			if it.done {
				msg.done, msg.err = true, it.err
				return
			}
			msg.results = append(msg.results, it.result)
		}
		select {
		case it := <-ch:
			take(it)
		case <-ctx.Done():
			return nil
		}
		for !msg.done {
			select {
			case it := <-ch:
				take(it)
			default:
				return msg
			}
		}
		return msg
	}
}
