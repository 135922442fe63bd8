// Package apiserver is klab's Kubernetes API server: the real object types
// of k8s.io/api, kept in etcd through clientv3, served over HTTPS so that
// the real kubectl and client-go work against it.
//
// A request takes upstream's path through the server:
//
//	authentication (client certificate, token file, ServiceAccount token)
//	→ authorization (RBAC, from the stored roles and bindings)
//	→ decoding → admission (defaults, namespace lifecycle, service
//	accounts, tolerations, IP and port allocation) → validation
//	→ storage in etcd (a transaction on the object's revision)
//	→ watchers are told through their etcd watches
//
// Some subresources are not stored but passed on (connect.go, proxy.go):
// pods/log, exec, attach and portforward go to the kubelet of the pod's
// node, which the server authenticates to with its kubelet client
// certificate; pods/proxy, services/proxy and nodes/proxy reach a pod, a
// service's endpoint or a kubelet.
//
// Each step has its own file. What a resource supports (verbs, short names,
// field selectors, where it is kept) is data in package registry; the
// generic storage is package storage.
package apiserver

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/apiserver/allocator"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/apiserver/openapi"
	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/apiserver/storage"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// Defaults as upstream's kube-apiserver flags.
const (
	DefaultServiceCIDR  = "10.96.0.0/12"
	DefaultNodePortBase = 30000
	DefaultNodePortSize = 2768 // 30000-32767
	DefaultSecurePort   = 6443
	maxRequestBodyBytes = 3 * 1024 * 1024 // --max-resource-write-bytes
	defaultWatchTimeout = 30 * time.Minute
	// defaultRequestTimeout bounds every request that is not
	// long-running (--request-timeout).
	defaultRequestTimeout = 60 * time.Second
)

// Config configures one API server.
type Config struct {
	// Name identifies this server in events and status ("master-1").
	Name string
	// Etcd is the client the server stores through.
	Etcd *clientv3.Client
	// Listen is the address to serve on ("127.0.0.1:6443").
	Listen string
	// TLS is the serving configuration; nil serves plain HTTP (tests of
	// single parts only: every cluster serves HTTPS).
	TLS *tls.Config
	// ClientCA, when set, verifies client certificates (kube-apiserver's
	// --client-ca-file): a request with one signed by it is the user its
	// common name names, in the groups of its organizations.
	ClientCA *x509.CertPool
	// Authenticator identifies a request's user. What the user may do is
	// decided by the RBAC roles and bindings stored in the cluster.
	Authenticator *auth.TokenAuthenticator
	// ServiceCIDR is the ClusterIP range; NodePortBase and NodePortSize
	// the NodePort range.
	ServiceCIDR  string
	NodePortBase int
	NodePortSize int
	// AdvertiseAddress is what discovery reports as the server address.
	AdvertiseAddress string
	// KubeletCA verifies kubelets when pods/log, exec, attach,
	// portforward and nodes/proxy reach them; KubeletClientCert
	// authenticates the API server to them (upstream's
	// --kubelet-client-certificate).
	KubeletCA         *x509.CertPool
	KubeletClientCert *tls.Certificate
	// BookmarkInterval overrides how often idle watches get a bookmark.
	BookmarkInterval time.Duration
	// Logger receives what the server reports: a panic serving a request,
	// what its background loops see (nil: nothing is logged).
	Logger *slog.Logger
	// ServiceAccountKey signs the ServiceAccount tokens of the
	// TokenRequest API and verifies the tokens requests carry
	// (kube-apiserver's --service-account-signing-key-file and
	// --service-account-key-file); nil serves neither.
	ServiceAccountKey crypto.Signer
	// ServiceAccountIssuer is the iss of those tokens; empty means
	// auth.DefaultServiceAccountIssuer, as kubeadm's.
	ServiceAccountIssuer string
	// APIAudiences are the audiences a token must name to be accepted
	// here, and a TokenRequest's default; empty means the issuer alone.
	APIAudiences []string
}

// Server is a running API server.
type Server struct {
	cfg   Config
	reg   *registry.Registry
	store *storage.Store
	// metrics keeps the last kubelet readings, for metrics.k8s.io rates.
	metrics  metricsCache
	ips      *allocator.IPAllocator
	ports    *allocator.PortAllocator
	openapi  http.Handler
	requests *eventstream.Hub[RequestEvent]
	// fieldManagers record managedFields and merge server-side applies.
	fieldManagers fieldManagers
	// authz is the authorizer chain, Node then RBAC, following the
	// stored policy and, for the Node authorizer, nodeGraph.
	authz     *auth.Authorizer
	nodeGraph *auth.NodeGraph
	// tokenIssuer signs ServiceAccount tokens and saAuthn verifies them;
	// both nil without a service-account key.
	tokenIssuer *auth.TokenIssuer
	saAuthn     *auth.ServiceAccountAuthenticator

	// paused is closed while the server runs and replaced by an open
	// channel while it is paused (docker pause freezes a process; here
	// requests wait at the door).
	pauseMu sync.Mutex
	running chan struct{}

	// kubeletTransport reaches kubelets (TLS with the kubelet client
	// certificate); podTransport reaches pods and services for the proxy
	// subresources.
	kubeletTransport *http.Transport
	podTransport     *http.Transport

	// endpoints keeps this server in the kubernetes Service's endpoints
	// (nil when its address is no IP to advertise); stopEndpoints ends
	// its loop.
	endpoints     *endpointReconciler
	stopEndpoints context.CancelFunc

	server *componentbase.Server
	life   *componentbase.Lifecycle
}

// New prepares a server; Start serves it.
func New(cfg Config) (*Server, error) {
	if cfg.Etcd == nil {
		return nil, errors.New("api server needs an etcd client")
	}
	if cfg.ServiceCIDR == "" {
		cfg.ServiceCIDR = DefaultServiceCIDR
	}
	if cfg.NodePortBase == 0 {
		cfg.NodePortBase, cfg.NodePortSize = DefaultNodePortBase, DefaultNodePortSize
	}
	if cfg.TLS != nil && cfg.ClientCA != nil {
		cfg.TLS = cfg.TLS.Clone()
		// A certificate is optional (tokens still work) but, when given,
		// must verify.
		cfg.TLS.ClientAuth, cfg.TLS.ClientCAs = tls.VerifyClientCertIfGiven, cfg.ClientCA
	}
	if cfg.BookmarkInterval == 0 {
		cfg.BookmarkInterval = storage.DefaultBookmarkInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:       cfg,
		reg:       registry.New(),
		store:     storage.New(cfg.Etcd),
		requests:  eventstream.NewHub[RequestEvent](requestLogSize, nil),
		authz:     auth.NewAuthorizer(),
		nodeGraph: auth.NewNodeGraph(),
		running:   make(chan struct{}),
	}
	s.authz.UseNodeAuthorizer(auth.NewNodeAuthorizer(s.nodeGraph))
	s.kubeletTransport, s.podTransport = kubeletTransport(cfg), podTransport()
	if err := s.setUpServiceAccountTokens(); err != nil {
		return nil, err
	}
	s.life = componentbase.NewLifecycle(s.shutdown)
	close(s.running)
	var err error
	if s.ips, err = allocator.NewIPAllocator(cfg.Etcd, cfg.ServiceCIDR); err != nil {
		return nil, fmt.Errorf("service CIDR: %w", err)
	}
	if s.ports, err = allocator.NewPortAllocator(cfg.Etcd, cfg.NodePortBase, cfg.NodePortSize); err != nil {
		return nil, fmt.Errorf("node port range: %w", err)
	}
	var resources []openapi.Resource
	for _, r := range s.reg.All() {
		var listType reflect.Type
		if r.HasVerb(registry.VerbList) { // reviews and bindings are answered, never listed
			listType = r.ListType()
		}
		resources = append(resources, openapi.Resource{
			Group: r.Group, Version: r.Version, Resource: r.Resource, Kind: r.Kind, ListKind: r.ListKind,
			Namespaced: r.Namespaced, Verbs: r.Verbs, Subresources: r.Subresources,
			Type: r.Type(), ListType: listType,
		})
	}
	if s.openapi, err = openapi.NewHandler(resources); err != nil {
		return nil, fmt.Errorf("build OpenAPI documents: %w", err)
	}
	return s, nil
}

// Start bootstraps the cluster's built-in objects and starts serving.
func (s *Server) Start(ctx context.Context) error {
	if err := s.life.Begin(); err != nil {
		return fmt.Errorf("start api server %s: %w", s.cfg.Name, err)
	}
	if err := s.bootstrap(ctx); err != nil {
		s.life.Kill()
		return err
	}
	if err := s.reconcilePolicy(ctx); err != nil {
		s.life.Kill()
		return err
	}
	if err := s.watchPolicy(ctx); err != nil {
		s.life.Kill()
		return err
	}
	if err := s.watchNodeGraph(ctx); err != nil {
		s.life.Kill()
		return err
	}
	server, err := componentbase.Listen(ctx, componentbase.ServerConfig{Addr: s.cfg.Listen, Handler: s, TLS: s.cfg.TLS})
	if err != nil {
		s.life.Kill()
		return fmt.Errorf("api server listen on %s: %w", s.cfg.Listen, err)
	}
	s.server = server
	s.life.Go(func() { server.Serve(s.life.Fail) })
	s.startEndpointReconciler()
	return nil
}

// startEndpointReconciler starts keeping this server in the kubernetes
// Service's endpoints, at its advertised address (else the one it is
// bound to). A server on no address a pod could reach (a wildcard) is
// left out, and says so in its log.
func (s *Server) startEndpointReconciler() {
	addr := s.cfg.AdvertiseAddress
	if addr == "" {
		addr = s.server.Addr()
	}
	r, err := newEndpointReconciler(s, addr)
	if err != nil {
		s.logf("the kubernetes service will not list this api server: %v", err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.endpoints, s.stopEndpoints = r, cancel
	s.life.Go(func() { r.run(ctx) })
}

// logf logs a background loop's trouble.
func (s *Server) logf(format string, args ...any) {
	s.cfg.Logger.Warn(fmt.Sprintf(format, args...), "apiserver", s.cfg.Name)
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.server.Addr() }

// Done is closed when the server has stopped serving.
func (s *Server) Done() <-chan struct{} { return s.life.Done() }

// Err returns why the server stopped serving by itself; nil while it
// serves, and after Stop or Kill.
func (s *Server) Err() error { return s.life.Err() }

// Stop stops serving; open watches are closed, and requests in flight
// have two seconds to finish.
func (s *Server) Stop() error { return s.life.Stop() }

// Kill stops serving at once, cutting open connections, as kill -9 would.
func (s *Server) Kill() { s.life.Kill() }

// shutdown stops serving, gracefully or not (its Lifecycle runs it once).
func (s *Server) shutdown(graceful bool) {
	if s.server == nil {
		return
	}
	if s.stopEndpoints != nil {
		s.stopEndpoints()
		<-s.endpoints.done
		if graceful {
			// Off the endpoints before going, so that no pod is sent to
			// a server that is gone (upstream's RemoveEndpoints).
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := s.endpoints.remove(ctx); err != nil {
				s.logf("remove this api server from the kubernetes service: %v", err)
			}
			cancel()
		}
	}
	// The watch cache goes first: its watches end, so their requests
	// finish and a graceful shutdown need not wait for them.
	s.store.Close()
	s.server.Shutdown(graceful, 2*time.Second)
	s.life.Wait()
}

// Registry returns the served resources.
func (s *Server) Registry() *registry.Registry { return s.reg }

// Pause holds every new request until Resume.
func (s *Server) Pause() {
	s.pauseMu.Lock()
	defer s.pauseMu.Unlock()
	select {
	case <-s.running:
		s.running = make(chan struct{})
	default:
	}
}

// Resume lets held requests through.
func (s *Server) Resume() {
	s.pauseMu.Lock()
	defer s.pauseMu.Unlock()
	select {
	case <-s.running:
	default:
		close(s.running)
	}
}

// waitRunning blocks while the server is paused.
func (s *Server) waitRunning(ctx context.Context) {
	s.pauseMu.Lock()
	ch := s.running
	s.pauseMu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}
