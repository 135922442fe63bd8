package pki

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/atomicfile"
)

// Files in a PKI directory, named as kubeadm names them.
const (
	CACertFile     = "ca.crt"
	CAKeyFile      = "ca.key"
	ServerCertFile = "apiserver.crt"
	ServerKeyFile  = "apiserver.key"
	TokenFile      = "tokens.csv"
	// KubeletClientCertFile and KubeletClientKeyFile are the API
	// server's client certificate to kubelets.
	KubeletClientCertFile = "apiserver-kubelet-client.crt"
	KubeletClientKeyFile  = "apiserver-kubelet-client.key"
)

// PKI is a cluster's CA, API server certificate and bearer tokens.
type PKI struct {
	// Dir is the directory the files are in.
	Dir string
	// CACert is the cluster's CA and CAPEM its PEM encoding, which
	// clients need to trust the API server.
	CACert *x509.Certificate
	CAPEM  []byte
	// ServerCert is the API server's serving certificate and
	// ServerCertPEM its PEM encoding.
	ServerCert    *x509.Certificate
	ServerCertPEM []byte
	// Identities are the users of tokens.csv.
	Identities []Identity

	serverKeyPEM []byte
	// kubeletClientCertPEM and kubeletClientKeyPEM are nil when Load
	// found no such files (a PKI from before they existed).
	kubeletClientCertPEM, kubeletClientKeyPEM []byte
	caKey                                     crypto.Signer // nil when Load found no ca.key
	// saKey signs ServiceAccount tokens; nil when Load found no sa.key.
	saKey crypto.Signer
}

// Ensure loads the PKI in dir, creating what is missing; see the package
// comment for what it holds. hosts are the addresses clients use for the
// API servers (IPs or DNS names, no ports) and go into the serving
// certificate with the loopback and in-cluster names (localhost,
// 127.0.0.1, ::1, kubernetes, kubernetes.default, kubernetes.default.svc,
// kubernetes.default.svc.cluster.local, 10.96.0.1); nodes are the node
// names that get a kubelet identity.
// Calling it again returns the same CA and tokens; a token is added for a
// new node and dropped for a node no longer given.
func Ensure(dir string, hosts []string, nodes []string) (*PKI, error) {
	names, err := wantedSANs(hosts)
	if err != nil {
		return nil, fmt.Errorf("pki %s: %w", dir, err)
	}
	wanted, err := wantedIdentities(nodes)
	if err != nil {
		return nil, fmt.Errorf("pki %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	p := &PKI{Dir: dir}
	now := time.Now()
	if err := p.ensureCA(now); err != nil {
		return nil, err
	}
	if err := p.ensureServerCert(now, names); err != nil {
		return nil, err
	}
	if err := p.ensureKubeletClientCert(now); err != nil {
		return nil, err
	}
	if err := p.ensureServiceAccountKey(); err != nil {
		return nil, err
	}
	if err := p.ensureTokens(wanted); err != nil {
		return nil, err
	}
	return p, nil
}

// Load reads the PKI that Ensure wrote in dir, without changing anything:
// for processes that use a cluster rather than create it. ca.key is
// optional.
func Load(dir string) (*PKI, error) {
	p := &PKI{Dir: dir}
	var err error
	if p.CAPEM, err = os.ReadFile(p.path(CACertFile)); err != nil {
		return nil, fmt.Errorf("load pki: %w", err)
	}
	if p.CACert, err = parseCert(p.CAPEM); err != nil {
		return nil, fmt.Errorf("load pki: %s: %w", p.path(CACertFile), err)
	}
	if keyPEM, err := os.ReadFile(p.path(CAKeyFile)); err == nil {
		if p.caKey, err = p.checkCAKey(keyPEM); err != nil {
			return nil, fmt.Errorf("load pki: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load pki: %w", err)
	}
	if p.ServerCertPEM, err = os.ReadFile(p.path(ServerCertFile)); err != nil {
		return nil, fmt.Errorf("load pki: %w", err)
	}
	if p.serverKeyPEM, err = os.ReadFile(p.path(ServerKeyFile)); err != nil {
		return nil, fmt.Errorf("load pki: %w", err)
	}
	if p.ServerCert, err = p.checkServerCert(p.ServerCertPEM, p.serverKeyPEM); err != nil {
		return nil, fmt.Errorf("load pki: %w", err)
	}
	if p.Identities, err = readIdentities(p.path(TokenFile)); err != nil {
		return nil, fmt.Errorf("load pki: %w", err)
	}
	certPEM, certErr := os.ReadFile(p.path(KubeletClientCertFile))
	keyPEM, keyErr := os.ReadFile(p.path(KubeletClientKeyFile))
	if certErr == nil && keyErr == nil {
		if _, err := p.checkKubeletClientCert(certPEM, keyPEM); err != nil {
			return nil, fmt.Errorf("load pki: %w", err)
		}
		p.kubeletClientCertPEM, p.kubeletClientKeyPEM = certPEM, keyPEM
	}
	if err := p.loadServiceAccountKey(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *PKI) path(name string) string { return filepath.Join(p.Dir, name) }

// ensureCA loads the CA or, when there is no ca.crt, creates one. A ca.crt
// without its key is an error rather than a reason to start over: every
// kubeconfig and component trusts that CA.
func (p *PKI) ensureCA(now time.Time) error {
	certPEM, err := os.ReadFile(p.path(CACertFile))
	if errors.Is(err, fs.ErrNotExist) {
		cert, key, err := newCA(now)
		if err != nil {
			return err
		}
		keyPEM, err := encodeKey(key)
		if err != nil {
			return err
		}
		// The key first: a crash in between leaves no ca.crt, and the
		// next call starts again.
		if err := atomicfile.Write(p.path(CAKeyFile), keyPEM, 0o600); err != nil {
			return err
		}
		p.CAPEM = encodeCert(cert)
		if err := atomicfile.Write(p.path(CACertFile), p.CAPEM, 0o644); err != nil {
			return err
		}
		p.CACert, p.caKey = cert, key
		return nil
	}
	if err != nil {
		return fmt.Errorf("load ca: %w", err)
	}
	if p.CACert, err = parseCert(certPEM); err != nil {
		return fmt.Errorf("load ca: %s: %w", p.path(CACertFile), err)
	}
	p.CAPEM = certPEM
	if !p.CACert.IsCA {
		return fmt.Errorf("load ca: %s is not a CA certificate", p.path(CACertFile))
	}
	if now.After(p.CACert.NotAfter) {
		return fmt.Errorf("load ca: %s expired on %s; delete the cluster and create it again for a new CA",
			p.path(CACertFile), p.CACert.NotAfter.Format(time.DateOnly))
	}
	keyPEM, err := os.ReadFile(p.path(CAKeyFile))
	if err != nil {
		return fmt.Errorf("load ca: %w", err)
	}
	p.caKey, err = p.checkCAKey(keyPEM)
	return err
}

func (p *PKI) checkCAKey(keyPEM []byte) (crypto.Signer, error) {
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.path(CAKeyFile), err)
	}
	if !keyMatches(p.CACert, key) {
		return nil, fmt.Errorf("%s does not belong to %s", p.path(CAKeyFile), p.path(CACertFile))
	}
	return key, nil
}

// ensureServerCert keeps the serving certificate if it still fits and
// issues a new one otherwise. It is derived from the CA, so there is
// nothing to lose by replacing it.
func (p *PKI) ensureServerCert(now time.Time, names sans) error {
	certPEM, certErr := os.ReadFile(p.path(ServerCertFile))
	keyPEM, keyErr := os.ReadFile(p.path(ServerKeyFile))
	if certErr == nil && keyErr == nil {
		cert, err := p.checkServerCert(certPEM, keyPEM)
		if err == nil && names.matches(cert) && now.Add(renewBefore).Before(cert.NotAfter) {
			p.ServerCert, p.ServerCertPEM, p.serverKeyPEM = cert, certPEM, keyPEM
			return nil
		}
	}
	cert, key, err := newServerCert(now, names, p.CACert, p.caKey)
	if err != nil {
		return err
	}
	if keyPEM, err = encodeKey(key); err != nil {
		return err
	}
	certPEM = encodeCert(cert)
	// A crash between the two writes leaves a pair that does not match,
	// which the next call notices and replaces.
	if err := atomicfile.Write(p.path(ServerKeyFile), keyPEM, 0o600); err != nil {
		return err
	}
	if err := atomicfile.Write(p.path(ServerCertFile), certPEM, 0o644); err != nil {
		return err
	}
	p.ServerCert, p.ServerCertPEM, p.serverKeyPEM = cert, certPEM, keyPEM
	return nil
}

// checkServerCert parses the serving certificate and checks that its key
// matches and that the CA signed it.
func (p *PKI) checkServerCert(certPEM, keyPEM []byte) (*x509.Certificate, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.path(ServerCertFile), err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.path(ServerKeyFile), err)
	}
	if !keyMatches(cert, key) {
		return nil, fmt.Errorf("%s does not belong to %s", p.path(ServerKeyFile), p.path(ServerCertFile))
	}
	if err := cert.CheckSignatureFrom(p.CACert); err != nil {
		return nil, fmt.Errorf("%s is not signed by %s: %w", p.path(ServerCertFile), p.path(CACertFile), err)
	}
	return cert, nil
}

// ServerTLSConfig returns the TLS configuration of an API server: the
// serving certificate, TLS 1.2 or later (kube-apiserver's default minimum),
// HTTP/2 offered first as kube-apiserver does.
func (p *PKI) ServerTLSConfig() (*tls.Config, error) {
	if p.ServerCertPEM == nil || p.serverKeyPEM == nil {
		return nil, errors.New("server tls config: no apiserver certificate loaded")
	}
	pair, err := tls.X509KeyPair(p.ServerCertPEM, p.serverKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("server tls config: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
	}, nil
}

// CAKey returns the CA's key, which the controller manager's CSR signer
// issues client certificates with.
func (p *PKI) CAKey() (crypto.Signer, error) {
	if p.caKey == nil {
		return nil, fmt.Errorf("ca key: %s holds no %s", p.Dir, CAKeyFile)
	}
	return p.caKey, nil
}

// CertPool returns a pool holding the cluster's CA, for clients.
func (p *PKI) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.CACert)
	return pool
}

// Upstream's identity for the API server's client certificate to kubelets
// (kubeadm's apiserver-kubelet-client.crt): since Kubernetes 1.29 kubeadm
// puts it in kubeadm:cluster-admins, bound to cluster-admin by the
// ClusterRoleBinding of that name, rather than in system:masters, which
// no RBAC change can take away.
const (
	KubeletClientCommonName = "kube-apiserver-kubelet-client"
	KubeletClientGroup      = auth.ClusterAdminsGroup
)

// ensureKubeletClientCert keeps apiserver-kubelet-client.crt and .key: a
// valid pair the CA signed is kept, anything else is replaced.
func (p *PKI) ensureKubeletClientCert(now time.Time) error {
	certPEM, certErr := os.ReadFile(p.path(KubeletClientCertFile))
	keyPEM, keyErr := os.ReadFile(p.path(KubeletClientKeyFile))
	if certErr == nil && keyErr == nil {
		if cert, err := p.checkKubeletClientCert(certPEM, keyPEM); err == nil && now.Add(renewBefore).Before(cert.NotAfter) &&
			slices.Equal(cert.Subject.Organization, []string{KubeletClientGroup}) {
			p.kubeletClientCertPEM, p.kubeletClientKeyPEM = certPEM, keyPEM
			return nil
		}
	}
	cert, key, err := newClientCert(now, KubeletClientCommonName, []string{KubeletClientGroup}, p.CACert, p.caKey)
	if err != nil {
		return err
	}
	if keyPEM, err = encodeKey(key); err != nil {
		return err
	}
	certPEM = encodeCert(cert)
	if err := atomicfile.Write(p.path(KubeletClientKeyFile), keyPEM, 0o600); err != nil {
		return err
	}
	if err := atomicfile.Write(p.path(KubeletClientCertFile), certPEM, 0o644); err != nil {
		return err
	}
	p.kubeletClientCertPEM, p.kubeletClientKeyPEM = certPEM, keyPEM
	return nil
}

func (p *PKI) checkKubeletClientCert(certPEM, keyPEM []byte) (*x509.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.path(KubeletClientCertFile), err)
	}
	if err := pair.Leaf.CheckSignatureFrom(p.CACert); err != nil {
		return nil, fmt.Errorf("%s is not signed by %s: %w", p.path(KubeletClientCertFile), p.path(CACertFile), err)
	}
	return pair.Leaf, nil
}

// KubeletClientCertificate is the API server's client certificate to
// kubelets.
func (p *PKI) KubeletClientCertificate() (tls.Certificate, error) {
	if p.kubeletClientCertPEM == nil {
		return tls.Certificate{}, fmt.Errorf("kubelet client certificate: %s holds no %s", p.Dir, KubeletClientCertFile)
	}
	pair, err := tls.X509KeyPair(p.kubeletClientCertPEM, p.kubeletClientKeyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet client certificate: %w", err)
	}
	return pair, nil
}
