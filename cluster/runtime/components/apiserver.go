package components

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
)

// etcdDialTimeout bounds the API server's first connection to etcd.
const etcdDialTimeout = 5 * time.Second

// apiServerProcess is an API server and its etcd client.
type apiServerProcess struct {
	srv  *apiserver.Server
	etcd *clientv3.Client
}

var _ Pausable = (*apiServerProcess)(nil)

// APIServer starts the kube-apiserver of ref.Node: it serves HTTPS on
// spec.Listen with the serving certificate of spec.PKIDir and stores in the
// etcd members at spec.EtcdEndpoints. ctx bounds the start only. It returns
// once the server listens; pausing it holds every request at the door.
func APIServer(ctx context.Context, ref runtime.Ref, spec runtime.APIServerSpec, logger *slog.Logger) (Pausable, error) {
	p, err := pki.Load(spec.PKIDir)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := p.ServerTLSConfig()
	if err != nil {
		return nil, err
	}
	authn, err := auth.LoadTokenFile(filepath.Join(spec.PKIDir, pki.TokenFile))
	if err != nil {
		return nil, err
	}
	var etcdTLS *tls.Config
	if spec.EtcdCertFile != "" {
		// kubeadm's apiserver-etcd-client: the API server's own identity
		// to etcd, trusted through the etcd CA alone.
		if etcdTLS, err = pki.EtcdClientTLS(spec.EtcdCAFile, spec.EtcdCertFile, spec.EtcdKeyFile); err != nil {
			return nil, err
		}
	}
	cli, err := clientv3.New(clientv3.Config{
		TLS:         etcdTLS,
		Endpoints:   spec.EtcdEndpoints,
		DialTimeout: etcdDialTimeout,
		Logger:      zap.NewNop(),
		// The members' request streams tell its requests from a person's.
		DialOptions: []grpc.DialOption{grpc.WithUserAgent(etcd.ComponentUserAgent + "/kube-apiserver")},
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	// The API server's client certificate to kubelets, in system:masters
	// as kubeadm's apiserver-kubelet-client.crt.
	kubeletCert, err := p.KubeletClientCertificate()
	if err != nil {
		return nil, err
	}
	// A PKI from before service-account tokens has no sa.key: the server
	// then serves neither TokenRequests nor their tokens.
	saKey, _ := p.ServiceAccountKey()
	srv, err := apiserver.New(apiserver.Config{
		Name:              ref.Node,
		Etcd:              cli,
		Listen:            spec.Listen,
		TLS:               tlsCfg,
		Authenticator:     authn,
		ClientCA:          p.CertPool(),
		AdvertiseAddress:  spec.AdvertiseAddress,
		KubeletCA:         p.CertPool(),
		KubeletClientCert: &kubeletCert,
		Logger:            logger,
		ServiceAccountKey: saKey,
	})
	if err == nil {
		err = srv.Start(ctx)
	}
	if err != nil {
		cli.Close()
		return nil, err
	}
	logger.Info("api server serving", "listen", spec.Listen, "etcd", spec.EtcdEndpoints)
	return &apiServerProcess{srv: srv, etcd: cli}, nil
}

// Stop stops the API server gracefully, then its etcd client; it reports
// why the server had failed, if it had, and the client's close error.
func (p *apiServerProcess) Stop() error {
	err := p.srv.Stop()
	return errors.Join(err, p.etcd.Close())
}

func (p *apiServerProcess) Kill()                 { p.srv.Kill(); p.etcd.Close() }
func (p *apiServerProcess) Pause() error          { p.srv.Pause(); return nil }
func (p *apiServerProcess) Resume() error         { p.srv.Resume(); return nil }
func (p *apiServerProcess) Done() <-chan struct{} { return p.srv.Done() }
func (p *apiServerProcess) Err() error            { return p.srv.Err() }
