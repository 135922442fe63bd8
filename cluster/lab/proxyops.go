package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	kubeproxyconfig "k8s.io/kube-proxy/config/v1alpha1"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/proxy/traffic"
	"github.com/klab-dev/klab/cluster/runtime"
)

// NodeProxy is one node's kube-proxy as `klab proxy` sees it: its status,
// or why it did not answer.
type NodeProxy struct {
	Node   string        `json:"node"`
	Status *proxy.Status `json:"status,omitempty"`
	Error  string        `json:"error,omitempty"`
}

// adminClient returns a clientset for the named cluster's admin.
func adminClient(info *Info) (kubernetes.Interface, error) {
	if info.Kubeconfig == "" {
		return nil, i18n.NewError("lab.err.no-kubeconfig", info.Name)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// proxyNode returns the node called name, or for "" the first worker (the
// first node when there is none), and where its kube-proxy answers.
func proxyNode(info *Info, name string) (runtime.Node, string, error) {
	i := slices.IndexFunc(info.Nodes, func(n runtime.Node) bool {
		if name == "" {
			return n.Role == runtime.RoleWorker
		}
		return n.Name == name
	})
	if i < 0 && name == "" && len(info.Nodes) > 0 {
		i = 0
	}
	if i < 0 {
		var names []string
		for _, n := range info.Nodes {
			names = append(names, n.Name)
		}
		return runtime.Node{}, "", i18n.NewError("proxy.err.unknown-node", name, strings.Join(names, ", "))
	}
	node := info.Nodes[i]
	addr := node.HostAddr("proxy")
	if addr == "" {
		return runtime.Node{}, "", i18n.NewError("proxy.err.no-proxy", node.Name, info.Name)
	}
	return node, addr, nil
}

var proxyHTTP = &http.Client{Timeout: 3 * time.Second}

// fetchProxy GETs path from the kube-proxy at addr.
func fetchProxy(ctx context.Context, addr, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := proxyHTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return body, nil
}

// ProxyStatuses asks every node's kube-proxy for its status, at once.
func ProxyStatuses(ctx context.Context, name string) ([]NodeProxy, error) {
	info, err := LoadInfo(name)
	if err != nil {
		return nil, err
	}
	out := make([]NodeProxy, len(info.Nodes))
	done := make(chan struct{})
	for i, n := range info.Nodes {
		go func() {
			defer func() { done <- struct{}{} }()
			out[i].Node = n.Name
			addr := n.HostAddr("proxy")
			if addr == "" {
				out[i].Error = i18n.NewError("proxy.err.no-proxy", n.Name, info.Name).Error()
				return
			}
			body, err := fetchProxy(ctx, addr, "/debug/klab/status")
			if err != nil {
				out[i].Error = err.Error()
				return
			}
			var st proxy.Status
			if err := json.Unmarshal(body, &st); err != nil {
				out[i].Error = err.Error()
				return
			}
			out[i].Status = &st
		}()
	}
	for range info.Nodes {
		<-done
	}
	return out, nil
}

// ProxyRules returns what the kube-proxy of node ("" for the first worker)
// programs, in the format of its mode's tool, and the node it asked.
func ProxyRules(ctx context.Context, name, node string) (string, string, error) {
	info, err := LoadInfo(name)
	if err != nil {
		return "", "", err
	}
	n, addr, err := proxyNode(info, node)
	if err != nil {
		return "", "", err
	}
	body, err := fetchProxy(ctx, addr, "/debug/klab/rules")
	if err != nil {
		return "", n.Name, i18n.Wrap(err, "proxy.err.unreachable", n.Name)
	}
	return string(body), n.Name, nil
}

// ProxyMode reads the mode and ipvs scheduler from the kube-proxy
// ConfigMap; exists is false when there is none (kube-proxies then use
// their defaults).
func ProxyMode(ctx context.Context, name string) (mode, scheduler string, exists bool, err error) {
	info, err := LoadInfo(name)
	if err != nil {
		return "", "", false, err
	}
	client, err := adminClient(info)
	if err != nil {
		return "", "", false, err
	}
	cm, err := client.CoreV1().ConfigMaps(proxy.ConfigMapNamespace).Get(ctx, proxy.ConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return DefaultProxyMode, "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	cfg, err := decodeProxyConfig(cm)
	if err != nil {
		return "", "", true, err
	}
	mode = string(cfg.Mode)
	if mode == "" {
		mode = DefaultProxyMode
	}
	return mode, cfg.IPVS.Scheduler, true, nil
}

func decodeProxyConfig(cm *corev1.ConfigMap) (*kubeproxyconfig.KubeProxyConfiguration, error) {
	cfg, err := proxy.DecodeConfiguration(cm.Data[proxy.ConfigMapKey])
	if err != nil {
		return nil, i18n.Wrap(err, "proxy.err.bad-config", cm.Namespace+"/"+cm.Name, proxy.ConfigMapKey)
	}
	return cfg, nil
}

// SetProxyMode writes mode (and, when not empty, the ipvs scheduler) into
// the kube-proxy ConfigMap, keeping the rest of its configuration; every
// kube-proxy follows it. It returns the mode the ConfigMap held before.
func SetProxyMode(ctx context.Context, name, mode, scheduler string) (string, error) {
	info, err := LoadInfo(name)
	if err != nil {
		return "", err
	}
	client, err := adminClient(info)
	if err != nil {
		return "", err
	}
	cms := client.CoreV1().ConfigMaps(proxy.ConfigMapNamespace)
	var prev string
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, proxy.ConfigMapName, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		cfg := proxy.DefaultConfiguration()
		switch {
		case create:
		case err != nil:
			return err
		default:
			if cfg, err = decodeProxyConfig(cm); err != nil {
				return err
			}
		}
		prev = string(cfg.Mode)
		if prev == "" {
			prev = DefaultProxyMode
		}
		cfg.Mode = kubeproxyconfig.ProxyMode(mode)
		if scheduler != "" {
			cfg.IPVS.Scheduler = scheduler
		}
		if create {
			cm, err := proxy.NewConfigMap(cfg)
			if err != nil {
				return err
			}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
		data, err := proxy.EncodeConfiguration(cfg)
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[proxy.ConfigMapKey] = data
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	return prev, err
}

// WaitProxyMode waits until every kube-proxy that answers runs mode, and
// returns their statuses. Nodes whose kube-proxy does not answer are
// reported, not waited for.
func WaitProxyMode(ctx context.Context, name, mode string, timeout time.Duration) ([]NodeProxy, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		all, err := ProxyStatuses(ctx, name)
		if err != nil {
			return nil, err
		}
		done := true
		for _, np := range all {
			if np.Status != nil && np.Status.Mode != mode {
				done = false
			}
		}
		if done {
			return all, nil
		}
		select {
		case <-ctx.Done():
			return all, i18n.NewError("proxy.err.switch-timeout", mode, timeout)
		case <-tick.C:
		}
	}
}

// TrafficOptions say what `klab traffic` sends, and through which node.
type TrafficOptions struct {
	Namespace string
	Service   string
	// Port is the service port's name or number; "" means its first port.
	Port string
	// Node is the node whose kube-proxy the traffic enters; "" means the
	// first worker.
	Node        string
	Count       int
	Concurrency int
	Timeout     time.Duration
	// ClientIP makes the kube-proxy see the requests as coming from this
	// address (a pod's, another node's).
	ClientIP string
	OnResult func(traffic.Result)
}

// Traffic sends requests to a Service through one node's kube-proxy: to
// the node's IP and the NodePort when the Service has one (traffic from
// outside, as a load balancer would send it), else to its ClusterIP (as
// from a process on that node).
func Traffic(ctx context.Context, name string, o TrafficOptions) (*traffic.Report, error) {
	info, err := LoadInfo(name)
	if err != nil {
		return nil, err
	}
	node, addr, err := proxyNode(info, o.Node)
	if err != nil {
		return nil, err
	}
	client, err := adminClient(info)
	if err != nil {
		return nil, err
	}
	if o.Namespace == "" {
		o.Namespace = metav1.NamespaceDefault
	}
	svc, err := client.CoreV1().Services(o.Namespace).Get(ctx, o.Service, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, i18n.NewError("traffic.err.no-service", o.Service, o.Namespace)
	}
	if err != nil {
		return nil, err
	}
	target, err := trafficTarget(svc, node, o.Port)
	if err != nil {
		return nil, err
	}
	report, err := traffic.Run(ctx, traffic.Options{
		Proxy: addr, Target: target, Count: o.Count, Concurrency: o.Concurrency, Timeout: o.Timeout,
		ClientIP: o.ClientIP, OnResult: o.OnResult,
	})
	if err == nil {
		// The run is kept for lessons that check it; a state dir that
		// cannot take it costs them that, not the run its report.
		_ = recordTraffic(name, report)
	}
	return report, err
}

// trafficTarget picks the address traffic to svc is sent to through node.
func trafficTarget(svc *corev1.Service, node runtime.Node, port string) (string, error) {
	name := svc.Namespace + "/" + svc.Name
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return "", i18n.NewError("traffic.err.external-name", name)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return "", i18n.NewError("traffic.err.headless", name)
	}
	if len(svc.Spec.Ports) == 0 {
		return "", i18n.NewError("traffic.err.no-ports", name)
	}
	sp := svc.Spec.Ports[0]
	if port != "" {
		found := false
		for _, p := range svc.Spec.Ports {
			if p.Name == port || strconv.Itoa(int(p.Port)) == port {
				sp, found = p, true
				break
			}
		}
		if !found {
			return "", i18n.NewError("traffic.err.no-port", name, port)
		}
	}
	if sp.NodePort != 0 {
		return net.JoinHostPort(node.Host, strconv.Itoa(int(sp.NodePort))), nil
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(sp.Port))), nil
}
