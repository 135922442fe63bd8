// Package proxy is the Proxy view: one Service at a time as kube-proxy
// sees it. Its ClusterIP, ports and NodePorts; its endpoints; the mode the
// kube-proxy of a chosen node runs; and the rules that node programs for
// that Service, in the format of the real tool, with the lines a change
// added and removed. A burst of traffic (t) draws which pods answered, live
// as the answers come in, and m switches every kube-proxy to the next mode.
//
// Everything is event driven: Services and EndpointSlices come from
// client-go informers, and the rules are fetched again when the chosen
// kube-proxy says on its event stream that it synced or switched modes.
package proxy

import (
	"context"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	kubeproxy "github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/common"
)

// View is the Proxy view.
type View struct {
	c             *common.Common
	connect       func(*lab.Info) (Cluster, error)
	width, height int

	ctx     context.Context
	info    *lab.Info
	epoch   int
	cluster Cluster
	// err is why the view has no Services to show: connecting or
	// watching failed.
	err     error
	changes <-chan struct{}

	services []service
	listed   bool
	selected string // namespace/name

	// The kube-proxy followed: nodes[node]. Each subscription to its event
	// stream is a new feed; stopFeed ends the current one.
	nodes     []string
	node      int
	feed      int
	feedCtx   context.Context
	stopFeed  context.CancelFunc
	following bool
	streamErr error
	// fetching is set while a fetch of the rules runs; refetch asks for
	// another when it is done, so that fetches never pile up.
	fetching, refetch bool
	// dirty says Services or EndpointSlices changed since the last sync
	// the view fetched after: the kube-proxy's next sync may change the
	// rules. A kube-proxy also syncs every syncPeriod with nothing new;
	// those syncs fetch nothing, so an idle lab costs nothing.
	dirty bool

	statuses []lab.NodeProxy
	rules    string // everything the node programs
	rulesErr error
	fetched  bool

	// shown is the selected Service's part of rules, as last shown, and
	// shownFor says for which Service and node. After a change, diff
	// holds what changed (folded) until the selection moves.
	shown     []string
	shownFor  string
	diff      []diffLine
	changedAt time.Time
	whole     bool // show all rules rather than the diff
	scroll    int

	switching string // the mode being switched to
	outcome   *outcome

	burst *burst
	run   int
}

// errStreamEnded says the followed kube-proxy's event stream ended.
var errStreamEnded = i18n.NewError("ui.proxy.stream-ended")

// outcome is the result of the last action, rendered when drawn so that it
// follows a language switch.
type outcome struct {
	text   func() string
	failed bool
}

var _ common.View = (*View)(nil)

// New returns the Proxy view of a running lab.
func New(c *common.Common) *View { return NewWith(c, Connect) }

// NewWith returns the Proxy view that reaches the cluster through what
// connect returns; tests give it an in-memory cluster.
func NewWith(c *common.Common, connect func(*lab.Info) (Cluster, error)) *View {
	return &View{c: c, connect: connect}
}

// SetSize sets the cells the view draws in.
func (v *View) SetSize(width, height int) { v.width, v.height = width, height }

// Start begins following the cluster info describes: its Services and the
// kube-proxy of its first worker. ctx ends every feed.
func (v *View) Start(ctx context.Context, info *lab.Info) tea.Cmd {
	if v.stopFeed != nil {
		v.stopFeed()
	}
	*v = View{c: v.c, connect: v.connect, width: v.width, height: v.height, epoch: v.epoch + 1, feed: v.feed, run: v.run}
	v.ctx, v.info = ctx, info
	for _, n := range info.Nodes {
		v.nodes = append(v.nodes, n.Name)
	}
	// The first worker, as klab proxy and klab traffic choose.
	v.node = max(slices.IndexFunc(info.Nodes, func(n runtime.Node) bool { return n.Role == runtime.RoleWorker }), 0)
	return connect(v.epoch, v.connect, info)
}

// Show does nothing: the view follows its kube-proxy shown or not, so that
// the diff of a change made meanwhile is there when it is shown.
func (v *View) Show(bool) tea.Cmd { return nil }

// current returns the selected Service, or nil.
func (v *View) current() *service {
	for i := range v.services {
		if v.services[i].key() == v.selected {
			return &v.services[i]
		}
	}
	return nil
}

// nodeName is the node whose kube-proxy the view follows.
func (v *View) nodeName() string {
	if v.node < len(v.nodes) {
		return v.nodes[v.node]
	}
	return ""
}

// nodeStatus is the status of the followed kube-proxy, if it answered.
func (v *View) nodeStatus() *kubeproxy.Status {
	for _, np := range v.statuses {
		if np.Node == v.nodeName() {
			return np.Status
		}
	}
	return nil
}

// mode is the mode the followed kube-proxy runs, "" before it said.
func (v *View) mode() string {
	if st := v.nodeStatus(); st != nil {
		return st.Mode
	}
	return ""
}

// follow subscribes to the chosen node's kube-proxy, leaving the previous
// one.
func (v *View) follow() tea.Cmd {
	if v.stopFeed != nil {
		v.stopFeed()
	}
	v.feed++
	v.feedCtx, v.stopFeed = context.WithCancel(v.ctx)
	v.following, v.streamErr, v.fetching, v.refetch = false, nil, false, false
	return subscribe(v.feedCtx, v.feed, v.cluster, v.nodeName())
}

// fetch asks for the chosen kube-proxy's status and rules, or for one more
// fetch after the one under way.
func (v *View) fetch() tea.Cmd {
	if v.fetching {
		v.refetch = true
		return nil
	}
	v.fetching = true
	return fetchRules(v.feedCtx, v.feed, v.cluster, v.nodeName())
}

// updateShown cuts the selected Service's rules out of everything the node
// programs. When they differ from what was shown for the same Service and
// node, the difference becomes the diff on screen.
func (v *View) updateShown() {
	svc := v.current()
	if svc == nil || !v.fetched {
		v.shown, v.shownFor = nil, ""
		return
	}
	now := serviceRules(v.rules, svc)
	subject := svc.key() + "@" + v.nodeName()
	if v.shownFor == subject && !slices.Equal(stable(now), stable(v.shown)) {
		v.diff = fold(diffLines(v.shown, now), foldContext)
		v.changedAt = v.c.Now()
		v.whole, v.scroll = false, 0
	}
	v.shown, v.shownFor = now, subject
}

// selectService shows another Service: its rules from the start, no diff.
func (v *View) selectService(key string) {
	v.selected = key
	v.diff, v.whole, v.scroll, v.shownFor = nil, false, 0, ""
	v.updateShown()
}
