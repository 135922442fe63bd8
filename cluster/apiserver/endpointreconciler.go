package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// The endpoints of the kubernetes Service are kept as upstream's default
// "lease" endpoint reconciler keeps them (pkg/controlplane/reconcilers):
// every API server holds a key /registry/masterleases/<its IP> in etcd,
// bound to an etcd lease of masterLeaseTTL and renewed every
// endpointReconcileInterval, and rewrites default/kubernetes (Endpoints
// and EndpointSlice, both named kubernetes) to list exactly the IPs that
// hold a key. A server that stops gracefully removes its key and itself;
// one that crashes drops out when its lease expires, at the next
// reconcile of a server still running. No controller manages this
// Service (it has no selector), so nothing else writes these objects.
const (
	// masterLeasesPrefix is where the API servers' keys live (upstream's
	// storage prefix for them).
	masterLeasesPrefix = "/registry/masterleases/"
	// endpointReconcileInterval and masterLeaseTTL are upstream's
	// DefaultEndpointReconcilerInterval and master-endpoint-reconcile-ttl.
	endpointReconcileInterval = 10 * time.Second
	masterLeaseTTL            = 15 * time.Second
	// kubernetesService is the API server's own Service in default.
	kubernetesService = "kubernetes"
)

var (
	endpointsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}
	endpointSlicesGVR = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
)

// endpointReconciler keeps this server's lease and the kubernetes
// Service's endpoints.
type endpointReconciler struct {
	s    *Server
	ip   string
	port int32
	// lease is the etcd lease holding this server's key (0: none yet);
	// only run touches it, and remove after run has returned.
	lease clientv3.LeaseID
	// done is closed when run returns.
	done chan struct{}
}

// newEndpointReconciler returns the reconciler for a server advertised at
// addr (host:port), or an error saying why it cannot advertise itself
// there: the endpoint must be an IP a pod can reach.
func newEndpointReconciler(s *Server, addr string) (*endpointReconciler, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("advertise address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsUnspecified() {
		return nil, fmt.Errorf("advertise address %q: %q is not an IP address a pod can reach", addr, host)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("advertise address %q: bad port %q", addr, portText)
	}
	return &endpointReconciler{s: s, ip: ip.String(), port: int32(port), done: make(chan struct{})}, nil
}

// run reconciles at once, then every interval until ctx ends. A paused
// server does nothing, as a frozen process would: its lease runs out.
func (r *endpointReconciler) run(ctx context.Context) {
	defer close(r.done)
	for {
		r.s.waitRunning(ctx)
		if ctx.Err() != nil {
			return
		}
		if err := r.reconcile(ctx); err != nil && ctx.Err() == nil {
			r.s.logf("reconcile the endpoints of the kubernetes service: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(endpointReconcileInterval):
		}
	}
}

// reconcile renews this server's lease, then makes the endpoints list
// every server holding one (upstream's ReconcileEndpoints).
func (r *endpointReconciler) reconcile(ctx context.Context) error {
	if err := r.renewLease(ctx); err != nil {
		return err
	}
	return r.sync(ctx)
}

// remove gives up this server's lease and takes it off the endpoints
// (upstream's RemoveEndpoints, on a graceful shutdown).
func (r *endpointReconciler) remove(ctx context.Context) error {
	cli := r.s.store.Client()
	if _, err := cli.Delete(ctx, masterLeasesPrefix+r.ip); err != nil {
		return fmt.Errorf("delete master lease %s: %w", r.ip, err)
	}
	if r.lease != 0 {
		_, _ = cli.Revoke(ctx, r.lease) // it expires anyway
	}
	return r.sync(ctx)
}

// renewLease keeps this server's key alive, granting a new etcd lease
// when the old one has expired (the server was paused or cut off longer
// than the TTL). The key holds an Endpoints naming the IP, as upstream's.
func (r *endpointReconciler) renewLease(ctx context.Context) error {
	cli := r.s.store.Client()
	if r.lease != 0 {
		if _, err := cli.KeepAliveOnce(ctx, r.lease); err != nil {
			r.lease = 0
		}
	}
	if r.lease == 0 {
		grant, err := cli.Grant(ctx, int64(masterLeaseTTL/time.Second))
		if err != nil {
			return fmt.Errorf("grant master lease for %s: %w", r.ip, err)
		}
		r.lease = grant.ID
	}
	data, err := json.Marshal(&corev1.Endpoints{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
		ObjectMeta: metav1.ObjectMeta{Name: r.ip},
		Subsets:    []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: r.ip}}}},
	})
	if err != nil {
		return err
	}
	if _, err := cli.Put(ctx, masterLeasesPrefix+r.ip, string(data), clientv3.WithLease(r.lease)); err != nil {
		return fmt.Errorf("write master lease %s: %w", r.ip, err)
	}
	return nil
}

// masterIPs lists the IPs holding a lease, sorted.
func (r *endpointReconciler) masterIPs(ctx context.Context) ([]string, error) {
	resp, err := r.s.store.Client().Get(ctx, masterLeasesPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("list master leases: %w", err)
	}
	var ips []string
	for _, kv := range resp.Kvs {
		ips = append(ips, strings.TrimPrefix(string(kv.Key), masterLeasesPrefix))
	}
	slices.Sort(ips)
	return ips, nil
}

// errNoMasters: upstream refuses to empty the endpoints, so that a
// storage hiccup never cuts every pod off the API.
var errNoMasters = errors.New("no API server IP addresses were listed in storage, refusing to erase all endpoints for the kubernetes Service")

// sync writes the Endpoints and the EndpointSlice of the kubernetes
// Service from the leases; objects already right are left alone.
func (r *endpointReconciler) sync(ctx context.Context) error {
	ips, err := r.masterIPs(ctx)
	if err != nil {
		return err
	}
	if len(ips) == 0 {
		return errNoMasters
	}
	ports := []corev1.EndpointPort{{Name: "https", Port: r.port, Protocol: corev1.ProtocolTCP}}
	ep := kubernetesEndpoints(ips, ports)
	if err := r.s.ensureObject(ctx, endpointsGVR, ep, func(current runtime.Object) (runtime.Object, error) {
		cur := current.(*corev1.Endpoints)
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		cur.Labels[discoveryv1.LabelSkipMirror] = "true"
		cur.Subsets = ep.Subsets
		return cur, nil
	}); err != nil {
		return err
	}
	slice := kubernetesEndpointSlice(ips, ports)
	return r.s.ensureObject(ctx, endpointSlicesGVR, slice, func(current runtime.Object) (runtime.Object, error) {
		cur := current.(*discoveryv1.EndpointSlice)
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		cur.Labels[discoveryv1.LabelServiceName] = kubernetesService
		cur.AddressType, cur.Endpoints, cur.Ports = slice.AddressType, slice.Endpoints, slice.Ports
		return cur, nil
	})
}

// kubernetesEndpoints is the Service's Endpoints: one subset of every
// API server on the secure port. The skip-mirror label keeps the
// EndpointSlice mirroring controller away, as upstream's reconciler
// writes the slice itself.
func kubernetesEndpoints(ips []string, ports []corev1.EndpointPort) *corev1.Endpoints {
	subset := corev1.EndpointSubset{Ports: ports}
	for _, ip := range ips {
		subset.Addresses = append(subset.Addresses, corev1.EndpointAddress{IP: ip})
	}
	return &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		Subsets: []corev1.EndpointSubset{subset},
	}
}

// kubernetesEndpointSlice is the same as an EndpointSlice, named after
// the Service and labelled with it (upstream's EndpointsAdapter).
func kubernetesEndpointSlice(ips []string, ports []corev1.EndpointPort) *discoveryv1.EndpointSlice {
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: kubernetesService}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	allV6 := len(ips) > 0
	for _, ip := range ips {
		if p := net.ParseIP(ip); p == nil || p.To4() != nil {
			allV6 = false
		}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		})
	}
	if allV6 {
		slice.AddressType = discoveryv1.AddressTypeIPv6
	}
	for _, p := range ports {
		slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(p.Port), Protocol: ptr.To(p.Protocol)})
	}
	return slice
}

// ensureObject creates obj, or, when it exists, updates it with update;
// an update that changes nothing writes nothing.
func (s *Server) ensureObject(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object, update func(current runtime.Object) (runtime.Object, error)) error {
	res, ok := s.reg.Lookup(gvr)
	if !ok {
		return fmt.Errorf("no resource %s", gvr)
	}
	m := obj.(metav1.Object)
	for attempt := 0; ; attempt++ {
		_, err := s.createObject(ctx, res, m.GetNamespace(), obj.DeepCopyObject(), writeParams{manager: kubeAPIServerManager})
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s/%s: %w", gvr.Resource, m.GetNamespace(), m.GetName(), err)
		}
		_, err = s.store.GuaranteedUpdate(ctx, res, m.GetNamespace(), m.GetName(), update)
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err) && attempt < 3:
			continue // deleted in between: create it again
		default:
			return fmt.Errorf("update %s %s/%s: %w", gvr.Resource, m.GetNamespace(), m.GetName(), err)
		}
	}
}
