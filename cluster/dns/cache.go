package dns

import (
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// Indexes of the caches, which every query reads.
const (
	indexClusterIP = "clusterIP" // Service by each of its ClusterIPs
	indexService   = "service"   // EndpointSlice by "<ns>/<service>"
	indexAddress   = "address"   // EndpointSlice by each endpoint address
)

// cache is what the server knows of the cluster: the informers' stores of
// Services and EndpointSlices with the indexes the zone needs, and when
// they last changed (the SOA serial).
type cache struct {
	factory  informers.SharedInformerFactory
	services toolscache.SharedIndexInformer
	slices   toolscache.SharedIndexInformer
	changed  atomic.Int64 // unix seconds of the last change
}

func newCache(client kubernetes.Interface) (*cache, error) {
	// No resync: the zone is read from the stores at every query, so a
	// periodic replay of the same objects would change nothing.
	f := informers.NewSharedInformerFactory(client, 0)
	c := &cache{factory: f, services: f.Core().V1().Services().Informer(), slices: f.Discovery().V1().EndpointSlices().Informer()}
	c.changed.Store(time.Now().Unix())
	if err := c.services.AddIndexers(toolscache.Indexers{indexClusterIP: serviceClusterIPs}); err != nil {
		return nil, err
	}
	if err := c.slices.AddIndexers(toolscache.Indexers{indexService: sliceService, indexAddress: sliceAddresses}); err != nil {
		return nil, err
	}
	touch := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.changed.Store(time.Now().Unix()) },
		UpdateFunc: func(any, any) { c.changed.Store(time.Now().Unix()) },
		DeleteFunc: func(any) { c.changed.Store(time.Now().Unix()) },
	}
	for _, inf := range []toolscache.SharedIndexInformer{c.services, c.slices} {
		if _, err := inf.AddEventHandler(touch); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *cache) synced() []toolscache.InformerSynced {
	return []toolscache.InformerSynced{c.services.HasSynced, c.slices.HasSynced}
}

// serial is the SOA serial: the time of the last change, as CoreDNS uses.
func (c *cache) serial() uint32 { return uint32(c.changed.Load()) }

func serviceClusterIPs(obj any) ([]string, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, nil
	}
	var ips []string
	for _, ip := range clusterIPs(svc) {
		ips = append(ips, ip.String())
	}
	return ips, nil
}

func sliceService(obj any) ([]string, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	name := s.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return nil, nil
	}
	return []string{s.Namespace + "/" + strings.ToLower(name)}, nil
}

func sliceAddresses(obj any) ([]string, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, ep := range s.Endpoints {
		for _, a := range ep.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				out = append(out, ip.String())
			}
		}
	}
	return out, nil
}

// service returns the Service ns/name, or nil.
func (c *cache) service(ns, name string) *corev1.Service {
	obj, ok, err := c.services.GetStore().GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	svc, _ := obj.(*corev1.Service)
	return svc
}

// namespaceHasServices reports whether namespace ns holds a Service, which
// makes <ns>.svc.<zone> a name that exists.
func (c *cache) namespaceHasServices(ns string) bool {
	keys, err := c.services.GetIndexer().IndexKeys(toolscache.NamespaceIndex, ns)
	return err == nil && len(keys) > 0
}

// servicesByIP returns the Services that have ip as a ClusterIP.
func (c *cache) servicesByIP(ip netip.Addr) []*corev1.Service {
	objs, err := c.services.GetIndexer().ByIndex(indexClusterIP, ip.String())
	if err != nil {
		return nil
	}
	var out []*corev1.Service
	for _, o := range objs {
		if svc, ok := o.(*corev1.Service); ok {
			out = append(out, svc)
		}
	}
	return out
}

// endpoint is one ready endpoint of a Service, as DNS names it.
type endpoint struct {
	hostname string // its hostname, or its address with dashes
	addrs    []netip.Addr
	ports    []discoveryv1.EndpointPort
}

// readyEndpoints returns the ready endpoints of Service ns/name, from all
// its EndpointSlices. The EndpointSlice controller marks the endpoints of
// a Service that publishes not-ready addresses ready, so ready is all the
// specification asks.
func (c *cache) readyEndpoints(ns, name string) []endpoint {
	objs, err := c.slices.GetIndexer().ByIndex(indexService, ns+"/"+name)
	if err != nil {
		return nil
	}
	var out []endpoint
	seen := map[netip.Addr]bool{}
	for _, o := range objs {
		s, ok := o.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			e := endpoint{ports: s.Ports}
			for _, a := range ep.Addresses {
				ip, err := netip.ParseAddr(a)
				if err != nil || seen[ip] {
					continue
				}
				seen[ip] = true
				e.addrs = append(e.addrs, ip)
			}
			if len(e.addrs) == 0 {
				continue
			}
			if ep.Hostname != nil && *ep.Hostname != "" {
				e.hostname = strings.ToLower(*ep.Hostname)
			} else {
				e.hostname = dashed(e.addrs[0])
			}
			out = append(out, e)
		}
	}
	return out
}

// endpointOwners returns the headless Services (namespace and name) with a
// ready endpoint at ip, and that endpoint.
func (c *cache) endpointOwners(ip netip.Addr) []owned {
	objs, err := c.slices.GetIndexer().ByIndex(indexAddress, ip.String())
	if err != nil {
		return nil
	}
	var out []owned
	for _, o := range objs {
		s, ok := o.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		name := strings.ToLower(s.Labels[discoveryv1.LabelServiceName])
		svc := c.service(s.Namespace, name)
		if svc == nil || !headless(svc) {
			continue
		}
		for _, e := range c.readyEndpoints(s.Namespace, name) {
			for _, a := range e.addrs {
				if a == ip {
					out = append(out, owned{ns: s.Namespace, service: name, ep: e})
				}
			}
		}
	}
	return out
}

type owned struct {
	ns, service string
	ep          endpoint
}

// clusterIPs returns a Service's ClusterIPs (none for a headless or
// ExternalName Service).
func clusterIPs(svc *corev1.Service) []netip.Addr {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []netip.Addr
	for _, s := range ips {
		if ip, err := netip.ParseAddr(s); err == nil {
			out = append(out, ip)
		}
	}
	return out
}

func headless(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP == corev1.ClusterIPNone
}

// dashed writes an address as a DNS label: 10.244.1.5 is 10-244-1-5,
// 2001:db8::1 is 2001-db8--1.
func dashed(ip netip.Addr) string {
	return strings.ReplaceAll(strings.ReplaceAll(ip.String(), ".", "-"), ":", "-")
}

// undashed reads a label written by dashed; ok is false when it is not an
// address.
func undashed(label string) (netip.Addr, bool) {
	s := strings.ReplaceAll(label, "-", ".")
	if strings.Count(label, "-") != 3 {
		s = strings.ReplaceAll(label, "-", ":")
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, false
	}
	return ip, true
}
