package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/componentbase/apiclient"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
	"github.com/klab-dev/klab/cluster/proxy/internal/async"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
	"github.com/klab-dev/klab/cluster/timing"
)

// ComponentName is kube-proxy's name as the reporting controller of its
// Events and as its user agent.
const ComponentName = "kube-proxy"

// Labels upstream's kube-proxy excludes from its watches
// (cmd/kube-proxy/app/server.go): a Service another proxy implementation
// claims, and the EndpointSlices of headless Services.
const (
	labelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	labelHeadless         = corev1.IsHeadlessService
)

// burstSyncs is how many syncs may run back to back before minSyncPeriod
// spaces them, as every upstream proxier sets it.
const burstSyncs = 2

// defaultListen is used when Config.Listen is empty.
const defaultListen = "127.0.0.1:0"

// clientDefaults are upstream's user agent, with QPS and Burst that
// client-go's 5 would throttle Events during a burst of changes.
var clientDefaults = apiclient.Defaults{UserAgent: ComponentName, QPS: 50, Burst: 100}

// Config configures a kube-proxy.
type Config struct {
	// REST reaches the API server, authenticated as system:kube-proxy.
	REST *rest.Config
	// NodeName is the node this proxy runs on: its endpoints are local, and
	// its Events are about this Node.
	NodeName string
	// NodeIP is the node's IPv4 address (proxier.Config.NodeIP); NodePorts
	// listen on it unless NodePortAddress says otherwise.
	NodeIP netip.Addr
	// PodCIDR is the node's pod range; traffic from it counts as local
	// (upstream's --detect-local-mode=NodeCIDR). The zero value disables the
	// detector.
	PodCIDR netip.Prefix
	// Listen is host:port of the HTTP server: /healthz, /debug/klab/* and
	// the CONNECT entrance to the data path ("127.0.0.1:0" if empty; see
	// Addr).
	Listen string
	// NodePortAddress is the IP NodePort listeners bind; empty means NodeIP.
	NodePortAddress string
	// Speed divides the sync periods, as every Kubernetes timing.
	Speed timing.Speed
	// ServeClusterIPs makes the data path listen on every ClusterIP:port,
	// TCP and UDP, for the packets pods send to Services. The node must
	// hold the Service range as local addresses (a local route; see
	// package internal/netroute), as the Docker runtime's nodes do; the
	// local runtime's pods enter through CONNECT instead.
	ServeClusterIPs bool
	// Dial opens connections to endpoints ("tcp", and "udp" for UDP
	// flows); nil means a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives the proxy's logs (default: discarded).
	Logger *slog.Logger
}

// Proxy is klab's kube-proxy: informers on Services, EndpointSlices and
// the kube-proxy ConfigMap, a sync loop that rebuilds the active mode's
// state, and a user-space data path that asks the mode where each new
// connection goes.
type Proxy struct {
	cfg          Config
	log          *slog.Logger
	client       kubernetes.Interface
	nodeRef      *corev1.ObjectReference
	nodePortAddr netip.Addr // the address NodePorts listen on

	informerFactory       informers.SharedInformerFactory // Services, EndpointSlices
	configInformerFactory informers.SharedInformerFactory // the kube-proxy ConfigMap
	serviceLister         corelisters.ServiceLister
	sliceLister           discoverylisters.EndpointSliceLister
	configMapLister       corelisters.ConfigMapLister
	informersSynced       []toolscache.InformerSynced

	broadcaster events.EventBroadcaster
	recorder    events.EventRecorder
	hub         *eventstream.Hub[Event]

	runner        *async.BoundedFrequencyRunner
	configChanged chan struct{}

	// syncMu serializes syncs, configuration changes and mode switches.
	syncMu sync.Mutex

	// modeMu guards gen: the data path takes it shared to pick, a mode
	// switch exclusively to swap generations.
	modeMu sync.RWMutex
	gen    *generation

	routes    atomic.Pointer[routeTable]
	nodePorts *nodePortListeners
	// clusterIPs is nil unless Config.ServeClusterIPs.
	clusterIPs *clusterIPListeners
	conns      *connSet
	stats      connStats
	healthy    atomic.Bool

	statusMu sync.Mutex
	state    syncState

	// ctx lives as long as the proxy; Stop and Kill cancel it.
	ctx    context.Context
	cancel context.CancelFunc

	mux  http.Handler // the debug endpoints
	life *componentbase.Lifecycle

	mu     sync.Mutex
	server *componentbase.Server
}

// generation is one instance of a mode with the settings it was built
// from. The data path registers in selecting while it asks the mode for an
// endpoint, so a switch can wait for those picks before cleaning the mode
// up.
type generation struct {
	mode      proxier.Mode
	settings  settings
	since     time.Time
	selecting sync.WaitGroup
}

// syncState is what Status reports about configuration and syncs.
type syncState struct {
	configSource string
	configError  string
	syncs        uint64
	lastSync     SyncInfo
	servicePorts int
	endpoints    int
	settings     settings
	snapshot     *proxier.Snapshot // of the last sync
}

// New builds a kube-proxy: its client, informers and event recorder.
// Nothing runs until Start.
func New(cfg Config) (*Proxy, error) {
	if cfg.REST == nil {
		return nil, errors.New("new kube-proxy: no REST config")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("new kube-proxy: no node name")
	}
	if !cfg.NodeIP.IsValid() || !cfg.NodeIP.Is4() {
		return nil, fmt.Errorf("new kube-proxy %s: node IP %q is not an IPv4 address", cfg.NodeName, cfg.NodeIP)
	}
	if cfg.PodCIDR.IsValid() && !cfg.PodCIDR.Addr().Is4() {
		return nil, fmt.Errorf("new kube-proxy %s: pod CIDR %s is not an IPv4 network", cfg.NodeName, cfg.PodCIDR)
	}
	nodePortAddr := cfg.NodeIP
	if cfg.NodePortAddress != "" {
		a, err := netip.ParseAddr(cfg.NodePortAddress)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("new kube-proxy %s: NodePort address %q is not an IPv4 address", cfg.NodeName, cfg.NodePortAddress)
		}
		nodePortAddr = a
	}
	if cfg.Listen == "" {
		cfg.Listen = defaultListen
	}
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = d.DialContext
	}
	client, err := kubernetes.NewForConfig(apiclient.Config(cfg.REST, clientDefaults))
	if err != nil {
		return nil, fmt.Errorf("new kube-proxy %s: %w", cfg.NodeName, err)
	}

	p := &Proxy{
		cfg:          cfg,
		log:          componentbase.Logger(cfg.Logger).With("component", ComponentName, "node", cfg.NodeName),
		client:       client,
		nodePortAddr: nodePortAddr,
		// Upstream's node reference: the Node's UID is its name.
		nodeRef:       &corev1.ObjectReference{Kind: "Node", Name: cfg.NodeName, UID: types.UID(cfg.NodeName)},
		hub:           eventstream.NewHub(eventRingSize, (*Event).Stamp),
		configChanged: make(chan struct{}, 1),
		conns:         newConnSet(),
		state:         syncState{configSource: configSourceDefault},
	}
	p.life = componentbase.NewLifecycle(p.shutdown)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.nodePorts = newNodePortListeners(p)
	if cfg.ServeClusterIPs {
		p.clusterIPs = newClusterIPListeners(p)
	}
	p.mux = p.debugMux()
	p.routes.Store(&routeTable{})

	notProxied, err := labels.NewRequirement(labelServiceProxyName, selection.DoesNotExist, nil)
	if err != nil {
		return nil, fmt.Errorf("new kube-proxy %s: %w", cfg.NodeName, err)
	}
	notHeadless, err := labels.NewRequirement(labelHeadless, selection.DoesNotExist, nil)
	if err != nil {
		return nil, fmt.Errorf("new kube-proxy %s: %w", cfg.NodeName, err)
	}
	selector := labels.NewSelector().Add(*notProxied, *notHeadless).String()
	p.informerFactory = informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	p.configInformerFactory = informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(ConfigMapNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ConfigMapName).String()
		}))

	services := p.informerFactory.Core().V1().Services()
	slices := p.informerFactory.Discovery().V1().EndpointSlices()
	configMaps := p.configInformerFactory.Core().V1().ConfigMaps()
	p.serviceLister, p.sliceLister, p.configMapLister = services.Lister(), slices.Lister(), configMaps.Lister()
	requestSync := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.requestSync() },
		UpdateFunc: func(any, any) { p.requestSync() },
		DeleteFunc: func(any) { p.requestSync() },
	}
	configChanged := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.signalConfig() },
		UpdateFunc: func(any, any) { p.signalConfig() },
		DeleteFunc: func(any) { p.signalConfig() },
	}
	for _, h := range []struct {
		inf     toolscache.SharedIndexInformer
		handler toolscache.ResourceEventHandler
	}{
		{services.Informer(), requestSync},
		{slices.Informer(), requestSync},
		{configMaps.Informer(), configChanged},
	} {
		reg, err := h.inf.AddEventHandler(h.handler)
		if err != nil {
			return nil, fmt.Errorf("new kube-proxy %s: %w", cfg.NodeName, err)
		}
		p.informersSynced = append(p.informersSynced, reg.HasSynced)
	}

	// Events go through the events.k8s.io/v1 API with the Node as their
	// subject, as upstream's kube-proxy writes them.
	p.broadcaster = apiclient.NewEventBroadcaster(client.EventsV1(), ComponentName+"-"+cfg.NodeName)
	p.recorder = p.broadcaster.NewRecorder(scheme.Scheme, ComponentName)

	defaults := defaultSettings()
	p.runner = async.NewBoundedFrequencyRunner("sync-runner", p.syncProxyRules,
		cfg.Speed.Scale(defaults.minSyncPeriod), cfg.Speed.Scale(defaults.syncPeriod), burstSyncs)
	return p, nil
}

// requestSync asks the runner for a sync; informer handlers call it.
func (p *Proxy) requestSync() { p.runner.Run() }

// signalConfig tells the config loop the ConfigMap changed.
func (p *Proxy) signalConfig() {
	select {
	case p.configChanged <- struct{}{}:
	default:
	}
}

// Addr returns the HTTP server's address, once started.
func (p *Proxy) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.server == nil {
		return ""
	}
	return p.server.Addr()
}

// Ensure the proxy satisfies the HTTP handler contract its server uses.
var _ http.Handler = (*Proxy)(nil)
