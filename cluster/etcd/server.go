package etcd

import (
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// supported is what klab's etcd implements, named in every Unimplemented
// error so that a user knows what does work.
const supported = "klab's etcd supports KV (Range, Put, DeleteRange, Txn, Compact), Watch, " +
	"Lease (Grant, Revoke, KeepAlive, TimeToLive, Leases), Cluster (MemberList, MemberAdd, MemberRemove, MemberUpdate, MemberPromote) " +
	"and Maintenance (Status, Snapshot, MoveLeader, Alarm, Defragment)"

func unimplemented(what string) error {
	return status.Errorf(codes.Unimplemented, "%s is not implemented; %s", what, supported)
}

// listen opens the client, peer and the optional debug and metrics
// listeners.
func (m *Member) listen() error {
	for _, a := range []struct {
		addr string
		l    *net.Listener
	}{{m.cfg.ClientListen, &m.clientL}, {m.cfg.PeerListen, &m.peerL}, {m.cfg.DebugListen, &m.debugL}, {m.cfg.MetricsListen, &m.metricsL}} {
		if a.addr == "" {
			continue
		}
		l, err := net.Listen("tcp", a.addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", a.addr, err)
		}
		*a.l = l
		m.listeners = append(m.listeners, l)
	}
	return nil
}

// serve starts the gRPC server, the peer HTTP server and the raft loops.
// With TLS configured, a client without a certificate from the etcd CA
// fails the handshake on every port, before any request is read.
func (m *Member) serve() {
	var creds []grpc.ServerOption
	if m.cfg.ClientTLS != nil {
		creds = append(creds, grpc.Creds(credentials.NewTLS(m.cfg.ClientTLS)))
	}
	m.grpcServer = grpc.NewServer(append(creds,
		grpc.MaxRecvMsgSize(m.cfg.MaxRequestBytes+512*1024),
		grpc.MaxSendMsgSize(math.MaxInt32),
		grpc.MaxConcurrentStreams(math.MaxUint32),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * time.Hour, Timeout: 20 * time.Second}),
		grpc.ChainUnaryInterceptor(m.recoverUnary, m.recordUnary, m.unaryInterceptor),
		grpc.ChainStreamInterceptor(m.recoverStream, m.recordStream, m.streamInterceptor),
		grpc.UnknownServiceHandler(func(srv any, stream grpc.ServerStream) error {
			method, _ := grpc.MethodFromServerStream(stream)
			return unimplemented(method)
		}),
	)...)
	pb.RegisterKVServer(m.grpcServer, &kvServer{m: m})
	pb.RegisterWatchServer(m.grpcServer, &watchServer{m: m})
	pb.RegisterLeaseServer(m.grpcServer, &leaseServer{m: m})
	pb.RegisterClusterServer(m.grpcServer, &clusterServer{m: m})
	pb.RegisterMaintenanceServer(m.grpcServer, &maintenanceServer{m: m})
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(m.grpcServer, hs)

	mux := http.NewServeMux()
	mux.Handle("/raft/", m.transport.Handler())
	mux.HandleFunc("GET /klab/cluster", func(w http.ResponseWriter, r *http.Request) {
		componentbase.WriteJSON(w, http.StatusOK, clusterInfo{ClusterID: hexID(m.clusterID), MemberID: hexID(m.id)})
	})
	mux.HandleFunc("POST /klab/lease/keepalive", m.serveLeaseForward(true))
	mux.HandleFunc("POST /klab/lease/ttl", m.serveLeaseForward(false))
	m.registerDebug(mux)
	m.peerServer = &http.Server{Handler: componentbase.Recover(m.lg, mux), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: componentbase.IdleTimeout}

	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.grpcServer.Serve(m.clientL)
	}()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.peerServer.Serve(m.peerListener(m.peerL))
	}()
	if m.debugL != nil {
		dmux := http.NewServeMux()
		m.registerDebug(dmux)
		m.dbgServer = &http.Server{Handler: componentbase.Recover(m.lg, dmux), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: componentbase.IdleTimeout}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.dbgServer.Serve(m.peerListener(m.debugL))
		}()
	}
	if m.metricsL != nil {
		// etcd's --listen-metrics-urls: plain HTTP and /health alone, for
		// the kubelet's probe, which holds no etcd certificate.
		hmux := http.NewServeMux()
		hmux.HandleFunc("GET /health", m.serveHealth)
		m.metricsServer = &http.Server{Handler: componentbase.Recover(m.lg, hmux), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: componentbase.IdleTimeout}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.metricsServer.Serve(m.metricsL)
		}()
	}
	m.wg.Add(5)
	go m.run()
	go m.adjustTicks()
	go func() {
		defer m.wg.Done()
		m.clock.run(m.stopc)
	}()
	go m.readLoop()
	go m.leaseLoop()
}

// peerListener wraps l in the peer TLS configuration, if any: the raft
// streams stay HTTP/1.1 (the dialing side offers nothing else), and the
// debug endpoints share the peer port's client-certificate check, so
// that only klab's own tooling and the members read them.
func (m *Member) peerListener(l net.Listener) net.Listener {
	if m.cfg.PeerTLS == nil {
		return l
	}
	return tls.NewListener(l, m.cfg.PeerTLS)
}

// recoverUnary and recoverStream turn a panic in a gRPC handler into a
// logged error and an Internal status for that one call, where grpc-go
// would let it take the whole member down.
func (m *Member) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			componentbase.LogPanic(m.lg, info.FullMethod, p)
			resp, err = nil, status.Errorf(codes.Internal, "klab: panic serving %s: %v", info.FullMethod, p)
		}
	}()
	return handler(ctx, req)
}

func (m *Member) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			componentbase.LogPanic(m.lg, info.FullMethod, p)
			err = status.Errorf(codes.Internal, "klab: panic serving %s: %v", info.FullMethod, p)
		}
	}()
	return handler(srv, ss)
}

// unaryInterceptor holds requests while the member is paused and makes
// Unimplemented errors say what klab supports.
func (m *Member) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := m.gate.pass(ctx); err != nil {
		return nil, contextError(err)
	}
	resp, err := handler(ctx, req)
	if s, ok := status.FromError(err); ok && s.Code() == codes.Unimplemented && !strings.Contains(s.Message(), "klab") {
		return nil, unimplemented(info.FullMethod)
	}
	return resp, err
}

func (m *Member) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := m.gate.pass(ss.Context()); err != nil {
		return contextError(err)
	}
	err := handler(srv, ss)
	if s, ok := status.FromError(err); ok && s.Code() == codes.Unimplemented && !strings.Contains(s.Message(), "klab") {
		return unimplemented(info.FullMethod)
	}
	return err
}
