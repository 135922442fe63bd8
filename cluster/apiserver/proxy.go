package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/apiserver/storage"
)

// kubeletTransport trusts kubelets' serving certificates (the cluster CA)
// and presents the API server's kubelet client certificate.
func kubeletTransport(cfg Config) *http.Transport {
	tlsCfg := &tls.Config{RootCAs: cfg.KubeletCA, MinVersion: tls.VersionTLS12}
	if cfg.KubeletClientCert != nil {
		tlsCfg.Certificates = []tls.Certificate{*cfg.KubeletClientCert}
	}
	return &http.Transport{TLSClientConfig: tlsCfg, IdleConnTimeout: 90 * time.Second}
}

// podTransport reaches pods for pods/proxy and services/proxy. Upstream's
// does not verify a pod's https certificate either: it is the pod's own.
func podTransport() *http.Transport {
	return &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as upstream's proxy transport
		IdleConnTimeout: 90 * time.Second,
	}
}

// serveProxy serves pods/proxy, services/proxy and nodes/proxy: the
// request, with the path after .../proxy, goes on to the pod's IP, one of
// the service's endpoints or the node's kubelet, and the answer comes
// back, as upstream's ProxyREST does. The name may say the scheme and
// port: [https:]web[:8080].
func (s *Server) serveProxy(w http.ResponseWriter, req *request) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(req.info.name)
	if !ok {
		writeError(w, req.Request, apierrors.NewBadRequest(fmt.Sprintf("invalid request %q", req.info.name)))
		return
	}
	var (
		location  *url.URL
		transport = s.podTransport
		err       error
	)
	switch req.res.Resource {
	case "pods":
		location, err = s.podProxyLocation(req.Context(), req, scheme, name, port)
	case "services":
		location, err = s.serviceProxyLocation(req.Context(), req, scheme, name, port)
	case "nodes":
		location, err = s.nodeProxyLocation(req.Context(), scheme, name, port)
		transport = s.kubeletTransport
	default:
		err = notFoundResource()
	}
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	location.Path = joinPreservingTrailingSlash(location.Path, proxyPath(req))
	handler := utilproxy.NewUpgradeAwareHandler(location, transport, true, false, errorResponder{})
	handler.ServeHTTP(w, forwardedRequest(req.Request))
}

// proxyPath is what follows {name}/proxy in the request's path.
func proxyPath(req *request) string {
	marker := "/" + req.info.name + "/" + registry.SubProxy
	i := strings.Index(req.URL.Path, marker)
	if i < 0 {
		return ""
	}
	return req.URL.Path[i+len(marker):]
}

func joinPreservingTrailingSlash(base, rest string) string {
	if rest == "" {
		return base
	}
	joined := strings.TrimSuffix(base, "/") + "/" + strings.TrimPrefix(rest, "/")
	return joined
}

func (s *Server) podProxyLocation(ctx context.Context, req *request, scheme, name, port string) (*url.URL, error) {
	obj, err := s.getObject(ctx, req.res, req.info.namespace, name)
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	if port == "" { // upstream: the first declared container port
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	// Upstream also refuses loopback pod IPs (IsProxyableIP); the local
	// runtime gives every pod a loopback address, so klab cannot.
	if pod.Status.PodIP == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("address not allowed: pod %s has no IP", pod.Name))
	}
	return hostLocation(scheme, pod.Status.PodIP, port), nil
}

func hostLocation(scheme, host, port string) *url.URL {
	if scheme == "" {
		scheme = "http"
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	}
	return &url.URL{Scheme: scheme, Host: host}
}

// serviceProxyLocation picks a ready endpoint of the service's port at
// random, as upstream's ResourceLocation does.
func (s *Server) serviceProxyLocation(ctx context.Context, req *request, scheme, name, port string) (*url.URL, error) {
	obj, err := s.getObject(ctx, req.res, req.info.namespace, name)
	if err != nil {
		return nil, err
	}
	svc := obj.(*corev1.Service)
	var svcPort *corev1.ServicePort
	for i, p := range svc.Spec.Ports {
		if port == "" || p.Name == port || strconv.Itoa(int(p.Port)) == port {
			svcPort = &svc.Spec.Ports[i]
			break
		}
	}
	if svcPort == nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %q found for service %q", port, name))
	}
	slicesRes, _ := s.reg.Lookup(schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"})
	selector := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})
	obj, err = s.store.List(ctx, slicesRes, req.info.namespace, storage.ListOptions{Labels: selector})
	if err != nil {
		return nil, err
	}
	var hosts []string
	for i := range obj.(*discoveryv1.EndpointSliceList).Items {
		slice := &obj.(*discoveryv1.EndpointSliceList).Items[i]
		for _, p := range slice.Ports {
			if p.Port == nil || (p.Name != nil && *p.Name != svcPort.Name) {
				continue
			}
			for _, ep := range slice.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
					continue
				}
				for _, addr := range ep.Addresses {
					hosts = append(hosts, net.JoinHostPort(addr, strconv.Itoa(int(*p.Port))))
				}
			}
		}
	}
	if len(hosts) == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	if scheme == "" {
		scheme = "http"
	}
	return &url.URL{Scheme: scheme, Host: hosts[rand.IntN(len(hosts))]}, nil
}

// nodeProxyLocation is the node's kubelet (or another port of the node
// when the name says one).
func (s *Server) nodeProxyLocation(ctx context.Context, scheme, name, port string) (*url.URL, error) {
	loc, err := s.nodeKubeletURL(ctx, name)
	if err != nil {
		return nil, err
	}
	if port != "" {
		host, _, _ := net.SplitHostPort(loc.Host)
		loc.Host = net.JoinHostPort(host, port)
	}
	if scheme != "" {
		loc.Scheme = scheme
	}
	return loc, nil
}
