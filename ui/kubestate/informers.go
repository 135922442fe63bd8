package kubestate

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/proxy"
)

// Start begins the feed of the cluster described by info: informers on
// nodes, pods, the kube-system leases and the kube-proxy ConfigMap, and
// each node's kube-proxy event stream. The command returns the first
// UpdateMsg; ctx ends the feed, whose last message then says so.
func Start(ctx context.Context, info *lab.Info) tea.Cmd {
	return func() tea.Msg {
		f := newFeed(ctx)
		var client kubernetes.Interface
		cfg, err := restConfig(info)
		if err == nil {
			// Every request's failure is a hint that the API server is
			// gone: the reflectors retry a refused watch on their own
			// without telling their error handlers.
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &watchfulTransport{next: rt, f: f} })
			client, err = kubernetes.NewForConfig(cfg)
		}
		if err != nil {
			return UpdateMsg{changes: []change{{key: keyConn, value: Connection{Stopped: true, Err: err.Error()}}}, last: true}
		}
		f.run(client, proxyAddrs(info))
		return f.wait()
	}
}

// watchfulTransport tells the feed when a request to the API server fails.
type watchfulTransport struct {
	next http.RoundTripper
	f    *feed
}

func (t *watchfulTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil && req.Context().Err() == nil {
		t.f.requestFailed(err)
	}
	return resp, err
}

func restConfig(info *lab.Info) (*rest.Config, error) {
	if info == nil || info.Kubeconfig == "" {
		name := ""
		if info != nil {
			name = info.Name
		}
		return nil, i18n.NewError("lab.err.no-kubeconfig", name)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "klab-tui"
	return cfg, nil
}

// proxyAddrs maps each node with a kube-proxy to where its HTTP endpoint
// answers.
func proxyAddrs(info *lab.Info) map[string]string {
	out := map[string]string{}
	for _, n := range info.Nodes {
		if a := n.HostAddr("proxy"); a != "" {
			out[n.Name] = a
		}
	}
	return out
}

// run starts the informers and the kube-proxy followers.
func (f *feed) run(client kubernetes.Interface, proxies map[string]string) {
	f.client = client
	all := informers.NewSharedInformerFactory(client, 0)
	system := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(metav1.NamespaceSystem))
	proxyCM := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(proxy.ConfigMapNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", proxy.ConfigMapName).String()
		}))

	watch := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandlerFuncs) {
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			f.requestFailed(err)
		})
		_, _ = inf.AddEventHandler(h)
	}
	watch(all.Core().V1().Nodes().Informer(), handlers(f, func(n *corev1.Node) (string, any) {
		return "node/" + n.Name, nodeOf(n)
	}))
	watch(all.Core().V1().Pods().Informer(), handlers(f, func(p *corev1.Pod) (string, any) {
		return "pod/" + p.Namespace + "/" + p.Name, podOf(p)
	}))
	watch(system.Coordination().V1().Leases().Informer(), handlers(f, func(l *coordinationv1.Lease) (string, any) {
		if l.Name != LeaseScheduler && l.Name != LeaseControllerManager {
			return "", nil
		}
		return "lease/" + l.Name, leaseOf(l)
	}))
	configH := handlers(f, func(cm *corev1.ConfigMap) (string, any) {
		if cm.Name != proxy.ConfigMapName {
			return "", nil
		}
		return keyConfig, proxyConfigOf(cm)
	})
	onConfig := configH.UpdateFunc
	configH.UpdateFunc = func(old, cur any) {
		onConfig(old, cur)
		f.pokeProxies()
	}
	watch(proxyCM.Core().V1().ConfigMaps().Informer(), configH)

	for node, addr := range proxies {
		poke := make(chan struct{}, 1)
		f.pokes = append(f.pokes, poke)
		go f.followProxy(node, addr, poke)
	}

	all.Start(f.ctx.Done())
	system.Start(f.ctx.Done())
	proxyCM.Start(f.ctx.Done())
	go func() {
		synced := cache.WaitForCacheSync(f.ctx.Done(),
			all.Core().V1().Nodes().Informer().HasSynced,
			all.Core().V1().Pods().Informer().HasSynced,
			system.Coordination().V1().Leases().Informer().HasSynced,
			proxyCM.Core().V1().ConfigMaps().Informer().HasSynced)
		if synced {
			f.setConn(func(c *Connection) { c.Connected, c.Synced, c.Err = true, true, "" })
		}
	}()
	go func() {
		<-f.ctx.Done()
		all.Shutdown()
		system.Shutdown()
		proxyCM.Shutdown()
	}()
}

// handlers turns an informer's callbacks into puts of the object's
// projection; project returns "" for objects the TUI does not show.
func handlers[T any](f *feed, project func(*T) (string, any)) cache.ResourceEventHandlerFuncs {
	set := func(obj any) {
		if o, ok := obj.(*T); ok {
			if key, v := project(o); key != "" {
				f.put(key, v, false)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, cur any) { set(cur) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(*T); ok {
				if key, v := project(o); key != "" {
					f.put(key, v, true)
				}
			}
		},
	}
}

// requestFailed is told why a request to the API server failed, by the
// transport and by every informer's reflector. Expiry and end of stream
// are routine; anything else may mean the API server is gone, which a
// probe confirms before the UI is told.
func (f *feed) requestFailed(err error) {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return
	}
	f.mu.Lock()
	if f.probing || f.ctx.Err() != nil {
		f.mu.Unlock()
		return
	}
	f.probing = true
	f.mu.Unlock()
	go f.probe(err)
}

// probe asks the API server whether it is ready until it is: the
// reflectors retry on their own, this only tells the UI whether they can
// succeed. It runs only while the API server does not answer.
func (f *feed) probe(cause error) {
	defer func() {
		f.mu.Lock()
		f.probing = false
		f.mu.Unlock()
	}()
	delay := retryInitial
	down := false
	for {
		ctx, cancel := context.WithTimeout(f.ctx, probeTimeout)
		err := f.client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
		cancel()
		if f.ctx.Err() != nil {
			return
		}
		if err == nil {
			if down {
				f.setConn(func(c *Connection) { c.Connected, c.Err = true, "" })
			}
			return
		}
		if !down {
			down = true
			if cause == nil {
				cause = err
			}
			f.setConn(func(c *Connection) { c.Connected, c.Err, c.Since = false, cause.Error(), time.Now() })
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-f.ctx.Done():
			t.Stop()
			return
		}
		delay = min(delay*2, retryMax)
	}
}

func (f *feed) pokeProxies() {
	for _, p := range f.pokes {
		select {
		case p <- struct{}{}:
		default:
		}
	}
}
