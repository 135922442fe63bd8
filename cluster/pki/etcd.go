package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/klab-dev/klab/internal/atomicfile"
)

// etcd's PKI is kubeadm's: a CA of its own (etcd/ca.crt), which only etcd
// members and their clients trust, so that a certificate from the cluster
// CA (a kubelet's, a user's from a CSR) opens no door to etcd. Each member
// has a serving certificate for its client port and a peer certificate for
// raft; both carry the member's names and the loopback addresses and are
// good for server and client authentication, as kubeadm issues them (a
// member dials its peers with its peer certificate). The API servers use
// apiserver-etcd-client, klab's own tooling (status, etcdctl, snapshots,
// the TUI) healthcheck-client.
//
// Layout under a cluster's PKI directory (kubeadm keeps one member's files
// in /etc/kubernetes/pki/etcd; klab keeps every member's, one folder each):
//
//	etcd/ca.crt, etcd/ca.key
//	etcd/healthcheck-client.crt, .key
//	etcd/apiserver-etcd-client.crt, .key
//	etcd/<member>/server.crt, .key, peer.crt, .key
const (
	EtcdDirName              = "etcd"
	EtcdServerCertFile       = "server.crt"
	EtcdServerKeyFile        = "server.key"
	EtcdPeerCertFile         = "peer.crt"
	EtcdPeerKeyFile          = "peer.key"
	EtcdHealthcheckCertFile  = "healthcheck-client.crt"
	EtcdHealthcheckKeyFile   = "healthcheck-client.key"
	APIServerEtcdClientCert  = "apiserver-etcd-client.crt"
	APIServerEtcdClientKey   = "apiserver-etcd-client.key"
	etcdCACommonName         = "etcd-ca"
	etcdHealthcheckCommon    = "kube-etcd-healthcheck-client"
	apiServerEtcdClientName  = "kube-apiserver-etcd-client"
	etcdClientAuthorityGroup = "system:masters"
)

// EtcdMember names one member and the hosts (IPs or DNS names) it is
// reached at; its certificates carry them with localhost, 127.0.0.1 and
// ::1.
type EtcdMember struct {
	Name  string
	Hosts []string
}

// EtcdPKI is where a cluster's etcd certificates are.
type EtcdPKI struct {
	// Dir is the etcd folder (<pki>/etcd).
	Dir string
	// CACert is the etcd CA.
	CACert *x509.Certificate
	caKey  crypto.Signer
}

// EtcdDir returns the etcd folder of the PKI directory pkiDir.
func EtcdDir(pkiDir string) string { return filepath.Join(pkiDir, EtcdDirName) }

// CAFile, HealthcheckCertFile and the others return a file's path.
func (e *EtcdPKI) CAFile() string              { return filepath.Join(e.Dir, CACertFile) }
func (e *EtcdPKI) HealthcheckCertFile() string { return filepath.Join(e.Dir, EtcdHealthcheckCertFile) }
func (e *EtcdPKI) HealthcheckKeyFile() string  { return filepath.Join(e.Dir, EtcdHealthcheckKeyFile) }
func (e *EtcdPKI) APIServerCertFile() string   { return filepath.Join(e.Dir, APIServerEtcdClientCert) }
func (e *EtcdPKI) APIServerKeyFile() string    { return filepath.Join(e.Dir, APIServerEtcdClientKey) }

// MemberFile returns the path of one of a member's files (EtcdServerCertFile,
// EtcdPeerKeyFile, ...).
func (e *EtcdPKI) MemberFile(member, file string) string {
	return filepath.Join(e.Dir, member, file)
}

// EnsureEtcd loads or creates the etcd PKI under pkiDir for members, as
// Ensure does the cluster's: the CA is kept, a leaf that no longer fits
// (other names, near expiry, another CA) is issued again.
func EnsureEtcd(pkiDir string, members []EtcdMember) (*EtcdPKI, error) {
	e := &EtcdPKI{Dir: EtcdDir(pkiDir)}
	if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("etcd pki: %w", err)
	}
	now := time.Now()
	if err := e.ensureCA(now); err != nil {
		return nil, fmt.Errorf("etcd pki: %w", err)
	}
	clients := []struct {
		cert, key, cn string
	}{
		{e.HealthcheckCertFile(), e.HealthcheckKeyFile(), etcdHealthcheckCommon},
		{e.APIServerCertFile(), e.APIServerKeyFile(), apiServerEtcdClientName},
	}
	for _, c := range clients {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: c.cn, Organization: []string{etcdClientAuthorityGroup}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if err := e.ensureLeaf(now, c.cert, c.key, tmpl); err != nil {
			return nil, fmt.Errorf("etcd pki: %w", err)
		}
	}
	seen := make(map[string]bool)
	for _, m := range members {
		if m.Name == "" || m.Name != filepath.Base(m.Name) || m.Name == "." || m.Name == ".." {
			return nil, fmt.Errorf("etcd pki: bad member name %q", m.Name)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("etcd pki: member %q given twice", m.Name)
		}
		seen[m.Name] = true
		names, err := memberSANs(m)
		if err != nil {
			return nil, fmt.Errorf("etcd pki: member %s: %w", m.Name, err)
		}
		if err := os.MkdirAll(filepath.Join(e.Dir, m.Name), 0o700); err != nil {
			return nil, fmt.Errorf("etcd pki: %w", err)
		}
		for _, pair := range [][2]string{{EtcdServerCertFile, EtcdServerKeyFile}, {EtcdPeerCertFile, EtcdPeerKeyFile}} {
			tmpl := &x509.Certificate{
				Subject:     pkix.Name{CommonName: m.Name},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
				DNSNames:    names.dns,
				IPAddresses: names.ips,
			}
			if err := e.ensureLeaf(now, e.MemberFile(m.Name, pair[0]), e.MemberFile(m.Name, pair[1]), tmpl); err != nil {
				return nil, fmt.Errorf("etcd pki: member %s: %w", m.Name, err)
			}
		}
	}
	return e, nil
}

// memberSANs are a member's names: its own, its hosts and the loopback
// addresses, as kubeadm's etcd server and peer certificates carry.
func memberSANs(m EtcdMember) (sans, error) {
	var s sans
	seen := make(map[string]bool)
	for _, h := range append([]string{m.Name, "localhost", "127.0.0.1", "::1"}, m.Hosts...) {
		if ip := net.ParseIP(h); ip != nil {
			if !seen[ip.String()] {
				seen[ip.String()] = true
				s.ips = append(s.ips, ip)
			}
			continue
		}
		one, err := wantedSANs([]string{h})
		if err != nil {
			return sans{}, err
		}
		if !seen[one.dns[0]] {
			seen[one.dns[0]] = true
			s.dns = append(s.dns, one.dns[0])
		}
	}
	return s, nil
}

func (e *EtcdPKI) ensureCA(now time.Time) error {
	certPath, keyPath := e.CAFile(), filepath.Join(e.Dir, CAKeyFile)
	certPEM, err := os.ReadFile(certPath)
	if errors.Is(err, fs.ErrNotExist) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("generate etcd ca key: %w", err)
		}
		serial, err := newSerial()
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber:          serial,
			Subject:               pkix.Name{CommonName: etcdCACommonName},
			NotBefore:             now.Add(-backdate),
			NotAfter:              now.Add(caValidity),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		cert, err := sign(tmpl, tmpl, key.Public(), key)
		if err != nil {
			return fmt.Errorf("create etcd ca certificate: %w", err)
		}
		keyPEM, err := encodeKey(key)
		if err != nil {
			return err
		}
		// The key first, as for the cluster CA: a crash in between leaves
		// no ca.crt and the next call starts again.
		if err := atomicfile.Write(keyPath, keyPEM, 0o600); err != nil {
			return err
		}
		if err := atomicfile.Write(certPath, encodeCert(cert), 0o644); err != nil {
			return err
		}
		e.CACert, e.caKey = cert, key
		return nil
	}
	if err != nil {
		return fmt.Errorf("load etcd ca: %w", err)
	}
	if e.CACert, err = parseCert(certPEM); err != nil {
		return fmt.Errorf("load etcd ca: %s: %w", certPath, err)
	}
	if !e.CACert.IsCA {
		return fmt.Errorf("load etcd ca: %s is not a CA certificate", certPath)
	}
	if now.After(e.CACert.NotAfter) {
		return fmt.Errorf("load etcd ca: %s expired on %s; delete the cluster and create it again for a new CA",
			certPath, e.CACert.NotAfter.Format(time.DateOnly))
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return fmt.Errorf("load etcd ca: %w", err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return fmt.Errorf("load etcd ca: %s: %w", keyPath, err)
	}
	if !keyMatches(e.CACert, key) {
		return fmt.Errorf("load etcd ca: %s does not belong to %s", keyPath, certPath)
	}
	e.caKey = key
	return nil
}

// ensureLeaf keeps the pair at certPath and keyPath when the etcd CA
// signed it, its key matches, it carries tmpl's subject, usages and names
// and is far from expiry; otherwise it issues tmpl anew.
func (e *EtcdPKI) ensureLeaf(now time.Time, certPath, keyPath string, tmpl *x509.Certificate) error {
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		if pair, err := tls.X509KeyPair(certPEM, keyPEM); err == nil && leafFits(pair.Leaf, tmpl, e.CACert, now) {
			return nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate key for %s: %w", certPath, err)
	}
	serial, err := newSerial()
	if err != nil {
		return err
	}
	t := *tmpl
	t.SerialNumber = serial
	t.NotBefore = now.Add(-backdate)
	t.NotAfter = now.Add(serverValidity)
	if t.NotAfter.After(e.CACert.NotAfter) {
		t.NotAfter = e.CACert.NotAfter
	}
	t.KeyUsage = x509.KeyUsageDigitalSignature
	cert, err := sign(&t, e.CACert, key.Public(), e.caKey)
	if err != nil {
		return fmt.Errorf("create %s: %w", certPath, err)
	}
	if keyPEM, err = encodeKey(key); err != nil {
		return err
	}
	// A crash between the writes leaves a pair that does not match, which
	// the next call replaces.
	if err := atomicfile.Write(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return atomicfile.Write(certPath, encodeCert(cert), 0o644)
}

func leafFits(cert, tmpl, ca *x509.Certificate, now time.Time) bool {
	return cert.CheckSignatureFrom(ca) == nil &&
		cert.Subject.CommonName == tmpl.Subject.CommonName &&
		slices.Equal(cert.Subject.Organization, tmpl.Subject.Organization) &&
		slices.Equal(cert.ExtKeyUsage, tmpl.ExtKeyUsage) &&
		equalSets(certSANs(cert), certSANs(tmpl)) &&
		now.Add(renewBefore).Before(cert.NotAfter)
}

// EtcdServerTLS returns the TLS configuration of an etcd listener: the
// pair at certFile and keyFile, and client certificates required and
// verified with the CA at caFile (etcd's --client-cert-auth and
// --peer-client-cert-auth).
func EtcdServerTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	pool, pair, err := loadTLSFiles(caFile, certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("etcd server tls: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// EtcdClientTLS returns the TLS configuration of an etcd client (etcdctl's
// --cacert, --cert, --key): it trusts the CA at caFile and presents the
// pair at certFile and keyFile.
func EtcdClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	pool, pair, err := loadTLSFiles(caFile, certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("etcd client tls: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

func loadTLSFiles(caFile, certFile, keyFile string) (*x509.CertPool, tls.Certificate, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, tls.Certificate{}, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("%s, %s: %w", certFile, keyFile, err)
	}
	return pool, pair, nil
}
