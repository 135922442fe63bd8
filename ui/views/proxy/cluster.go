package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	kubeproxy "github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/proxy/traffic"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Cluster is everything the view asks of the cluster. The view calls it
// only from tea.Cmds; tests give the view an in-memory twin.
type Cluster interface {
	// WatchServices starts watching Services and EndpointSlices and
	// returns once the first list is in: the channel then receives a value
	// after every change (several changes may share one). It stops with
	// ctx and is never closed.
	WatchServices(ctx context.Context) (<-chan struct{}, error)
	// Services returns what the watch holds now. The objects are shared
	// with the watch's cache and must not be changed.
	Services() ([]*corev1.Service, []*discoveryv1.EndpointSlice)
	// ProxyEvents follows the event stream of node's kube-proxy. It returns
	// once subscribed, so a fetch made after it returns misses no change.
	// The channel is closed when the stream ends (ctx, or the proxy went
	// away).
	ProxyEvents(ctx context.Context, node string) (<-chan kubeproxy.Event, error)
	// ProxyStatuses asks every node's kube-proxy for its status.
	ProxyStatuses(ctx context.Context) ([]lab.NodeProxy, error)
	// ProxyRules returns what node's kube-proxy programs, in the format of
	// its mode's tool.
	ProxyRules(ctx context.Context, node string) (string, error)
	// SwitchMode writes mode into the kube-proxy ConfigMap and waits until
	// every kube-proxy that answers runs it.
	SwitchMode(ctx context.Context, mode string) ([]lab.NodeProxy, error)
	// Traffic sends requests to a Service through a node's kube-proxy,
	// calling o.OnResult as each one finishes.
	Traffic(ctx context.Context, o lab.TrafficOptions) (*traffic.Report, error)
}

// switchTimeout bounds the wait for every kube-proxy to take a new mode.
const switchTimeout = 20 * time.Second

// labCluster is the Cluster of a running lab: client-go informers on the
// API server, and the lab package for kube-proxy and traffic.
type labCluster struct {
	info     *lab.Info
	client   kubernetes.Interface
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	// stream has no timeout: an event stream lasts as long as its ctx.
	stream *http.Client
}

// Connect returns the Cluster of the lab info describes, as its admin.
func Connect(info *lab.Info) (Cluster, error) {
	if info.Kubeconfig == "" {
		return nil, i18n.NewError("lab.err.no-kubeconfig", info.Name)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &labCluster{info: info, client: client, stream: &http.Client{}}, nil
}

func (c *labCluster) WatchServices(ctx context.Context) (<-chan struct{}, error) {
	factory := informers.NewSharedInformerFactory(c.client, 0)
	svcs := factory.Core().V1().Services()
	slices := factory.Discovery().V1().EndpointSlices()
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default: // a change is already waiting to be read
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	var synced []cache.InformerSynced
	for _, inf := range []cache.SharedIndexInformer{svcs.Informer(), slices.Informer()} {
		reg, err := inf.AddEventHandler(handler)
		if err != nil {
			return nil, err
		}
		synced = append(synced, reg.HasSynced)
	}
	c.services, c.slices = svcs.Lister(), slices.Lister()
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil, ctx.Err()
	}
	notify()
	return changed, nil
}

func (c *labCluster) Services() ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	if c.services == nil {
		return nil, nil
	}
	svcs, _ := c.services.List(labels.Everything())
	slices, _ := c.slices.List(labels.Everything())
	return svcs, slices
}

// noReplay asks the event stream for no past events: the view fetches the
// current rules itself once subscribed.
const noReplay = math.MaxUint64

func (c *labCluster) ProxyEvents(ctx context.Context, node string) (<-chan kubeproxy.Event, error) {
	i := slices.IndexFunc(c.info.Nodes, func(n runtime.Node) bool { return n.Name == node })
	if i < 0 {
		return nil, fmt.Errorf("no node %s", node)
	}
	addr := c.info.Nodes[i].HostAddr("proxy")
	if addr == "" {
		return nil, i18n.NewError("proxy.err.no-proxy", node, c.info.Name)
	}
	url := fmt.Sprintf("http://%s/debug/klab/events?since=%d", addr, uint64(noReplay))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.stream.Do(req)
	if err != nil {
		return nil, i18n.Wrap(err, "proxy.err.unreachable", node)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET /debug/klab/events: %s", resp.Status)
	}
	out := make(chan kubeproxy.Event, 64)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var e kubeproxy.Event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (c *labCluster) ProxyStatuses(ctx context.Context) ([]lab.NodeProxy, error) {
	return lab.ProxyStatuses(ctx, c.info.Name)
}

func (c *labCluster) ProxyRules(ctx context.Context, node string) (string, error) {
	rules, _, err := lab.ProxyRules(ctx, c.info.Name, node)
	return rules, err
}

func (c *labCluster) SwitchMode(ctx context.Context, mode string) ([]lab.NodeProxy, error) {
	if _, err := lab.SetProxyMode(ctx, c.info.Name, mode, ""); err != nil {
		return nil, err
	}
	return lab.WaitProxyMode(ctx, c.info.Name, mode, switchTimeout)
}

func (c *labCluster) Traffic(ctx context.Context, o lab.TrafficOptions) (*traffic.Report, error) {
	return lab.Traffic(ctx, c.info.Name, o)
}
