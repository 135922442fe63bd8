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
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/internal/atomicfile"
)

// Files of a component's credentials directory. A kubeadm node keeps the
// same things apart: the client certificate embedded in scheduler.conf,
// controller-manager.conf or kubelet.conf, and the kubelet's serving pair
// in /var/lib/kubelet/pki.
const (
	// ComponentClientCertFile and ComponentClientKeyFile are the
	// component's client certificate to the API server: its user (common
	// name) and groups (organizations).
	ComponentClientCertFile = "client.crt"
	ComponentClientKeyFile  = "client.key"
	// KubeletServingCertFile and KubeletServingKeyFile are a kubelet's
	// serving certificate for its port 10250, signed by the cluster CA.
	KubeletServingCertFile = "kubelet.crt"
	KubeletServingKeyFile  = "kubelet.key"
)

// ComponentIdentity is who a component is to the API server, and what
// else its credentials directory holds.
type ComponentIdentity struct {
	// User and Groups go into the client certificate's common name and
	// organizations.
	User   string
	Groups []string
	// ServingHosts, when set, are the IP addresses and DNS names of a
	// serving certificate (the kubelet's).
	ServingHosts []string
	// WithCAKey adds ca.key: only the controller manager's CSR signer
	// signs, as kubeadm gives kube-controller-manager
	// --cluster-signing-key-file and no other component.
	WithCAKey bool
}

// EnsureComponentCredentials writes the credentials of one component into
// dir, and nothing else: ca.crt, its own client certificate and key, its
// serving pair when id.ServingHosts is set, and ca.key when id.WithCAKey.
// Any other file in dir is removed, so that a component never holds a
// credential that is not its own (the token file, the API server's key,
// another component's key). A certificate that still fits (same subject,
// signed by this CA, not about to expire) is kept.
func (p *PKI) EnsureComponentCredentials(dir string, id ComponentIdentity) error {
	if id.User == "" {
		return fmt.Errorf("component credentials %s: no user name", dir)
	}
	if p.caKey == nil {
		return fmt.Errorf("component credentials %s: no CA key in %s", dir, p.Dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("component credentials: %w", err)
	}
	now := time.Now()
	keep := []string{CACertFile, ComponentClientCertFile, ComponentClientKeyFile}
	if err := writeIfChanged(filepath.Join(dir, CACertFile), p.CAPEM, 0o644); err != nil {
		return err
	}
	client := pairFiles{cert: filepath.Join(dir, ComponentClientCertFile), key: filepath.Join(dir, ComponentClientKeyFile)}
	if err := p.ensurePair(now, client, func(c *x509.Certificate) bool {
		return c.Subject.CommonName == id.User && slices.Equal(c.Subject.Organization, id.Groups) &&
			slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}, func(pub crypto.PublicKey) (*x509.Certificate, error) {
		return signClient(now, clientValidity, id.User, id.Groups, pub, p.CACert, p.caKey)
	}); err != nil {
		return fmt.Errorf("component credentials %s: %w", dir, err)
	}
	if len(id.ServingHosts) > 0 {
		names, err := servingSANs(id.ServingHosts)
		if err != nil {
			return fmt.Errorf("component credentials %s: %w", dir, err)
		}
		serving := pairFiles{cert: filepath.Join(dir, KubeletServingCertFile), key: filepath.Join(dir, KubeletServingKeyFile)}
		if err := p.ensurePair(now, serving, func(c *x509.Certificate) bool {
			return c.Subject.CommonName == id.User && names.matches(c)
		}, func(pub crypto.PublicKey) (*x509.Certificate, error) {
			return signServing(now, id.User, names, pub, p.CACert, p.caKey)
		}); err != nil {
			return fmt.Errorf("component credentials %s: %w", dir, err)
		}
		keep = append(keep, KubeletServingCertFile, KubeletServingKeyFile)
	}
	if id.WithCAKey {
		keyPEM, err := os.ReadFile(p.path(CAKeyFile))
		if err != nil {
			return fmt.Errorf("component credentials %s: %w", dir, err)
		}
		if err := writeIfChanged(filepath.Join(dir, CAKeyFile), keyPEM, 0o600); err != nil {
			return err
		}
		keep = append(keep, CAKeyFile)
	}
	return removeAllBut(dir, keep)
}

// EnsureTrustOnly writes ca.crt alone into dir and removes any other file:
// the credentials of a component that verifies API servers but is no user
// of theirs (the load balancer's health checks).
func (p *PKI) EnsureTrustOnly(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("component credentials: %w", err)
	}
	if err := writeIfChanged(filepath.Join(dir, CACertFile), p.CAPEM, 0o644); err != nil {
		return err
	}
	return removeAllBut(dir, []string{CACertFile})
}

// pairFiles are the paths of a certificate and its key.
type pairFiles struct{ cert, key string }

// ensurePair keeps the pair at f when it parses, matches, was signed by
// the CA, fits and is not about to expire; otherwise it makes a new key
// and has issue sign it.
func (p *PKI) ensurePair(now time.Time, f pairFiles, fits func(*x509.Certificate) bool, issue func(crypto.PublicKey) (*x509.Certificate, error)) error {
	certPEM, certErr := os.ReadFile(f.cert)
	keyPEM, keyErr := os.ReadFile(f.key)
	if certErr == nil && keyErr == nil {
		if pair, err := tls.X509KeyPair(certPEM, keyPEM); err == nil &&
			pair.Leaf.CheckSignatureFrom(p.CACert) == nil && fits(pair.Leaf) && now.Add(renewBefore).Before(pair.Leaf.NotAfter) {
			return nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate key: %w", err)
	}
	cert, err := issue(key.Public())
	if err != nil {
		return err
	}
	if keyPEM, err = encodeKey(key); err != nil {
		return err
	}
	// The key first; a crash in between leaves a pair that does not
	// match, which the next call replaces.
	if err := atomicfile.Write(f.key, keyPEM, 0o600); err != nil {
		return err
	}
	return atomicfile.Write(f.cert, encodeCert(cert), 0o644)
}

// servingSANs are the names of a serving certificate for hosts, without
// repeats: a component's are its hosts alone (the API server's add its
// in-cluster names, see wantedSANs). A host is an IP address or a DNS
// name; anything else (a host:port, a URL) is an error.
func servingSANs(hosts []string) (sans, error) {
	var s sans
	seen := map[string]bool{}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !seen[ip.String()] {
				seen[ip.String()] = true
				s.ips = append(s.ips, ip)
			}
			continue
		}
		name := strings.ToLower(h)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return sans{}, fmt.Errorf("host %q is neither an IP address nor a DNS name: %s", h, strings.Join(errs, "; "))
		}
		if !seen[name] {
			seen[name] = true
			s.dns = append(s.dns, name)
		}
	}
	return s, nil
}

// signServing signs a serving certificate for pub and names.
func signServing(now time.Time, commonName string, names sans, pub crypto.PublicKey, ca *x509.Certificate, caKey crypto.Signer) (*x509.Certificate, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(serverValidity)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     names.dns,
		IPAddresses:  names.ips,
	}
	return sign(tmpl, ca, pub, caKey)
}

// removeAllBut removes the regular files of dir not named in keep.
func removeAllBut(dir string, keep []string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("component credentials: %w", err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && !slices.Contains(keep, e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("component credentials: %w", err)
			}
		}
	}
	return nil
}

// ComponentCredentials are what one component loaded from its own
// credentials directory.
type ComponentCredentials struct {
	// Dir is the directory they were loaded from.
	Dir string
	// CACert is the cluster CA and CAPEM its PEM encoding.
	CACert *x509.Certificate
	CAPEM  []byte
	// Client is the component's client certificate to the API server.
	Client tls.Certificate
	// Serving is the kubelet's serving pair; nil when dir holds none.
	Serving *tls.Certificate
	caKey   crypto.Signer
}

// LoadComponentCredentials reads the directory EnsureComponentCredentials
// wrote. The serving pair and ca.key are optional.
func LoadComponentCredentials(dir string) (*ComponentCredentials, error) {
	c := &ComponentCredentials{Dir: dir}
	var err error
	if c.CAPEM, err = os.ReadFile(filepath.Join(dir, CACertFile)); err != nil {
		return nil, fmt.Errorf("load component credentials: %w", err)
	}
	if c.CACert, err = parseCert(c.CAPEM); err != nil {
		return nil, fmt.Errorf("load component credentials: %s: %w", filepath.Join(dir, CACertFile), err)
	}
	if c.Client, err = loadPair(filepath.Join(dir, ComponentClientCertFile), filepath.Join(dir, ComponentClientKeyFile)); err != nil {
		return nil, fmt.Errorf("load component credentials: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, KubeletServingCertFile)); err == nil {
		pair, err := loadPair(filepath.Join(dir, KubeletServingCertFile), filepath.Join(dir, KubeletServingKeyFile))
		if err != nil {
			return nil, fmt.Errorf("load component credentials: %w", err)
		}
		c.Serving = &pair
	}
	if keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile)); err == nil {
		key, err := parseKey(keyPEM)
		if err != nil {
			return nil, fmt.Errorf("load component credentials: %s: %w", filepath.Join(dir, CAKeyFile), err)
		}
		if !keyMatches(c.CACert, key) {
			return nil, fmt.Errorf("load component credentials: %s does not belong to %s", filepath.Join(dir, CAKeyFile), filepath.Join(dir, CACertFile))
		}
		c.caKey = key
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load component credentials: %w", err)
	}
	return c, nil
}

func loadPair(certFile, keyFile string) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", certFile, err)
	}
	return pair, nil
}

// User is the user name of the client certificate.
func (c *ComponentCredentials) User() string { return c.Client.Leaf.Subject.CommonName }

// RESTConfig is the client-go configuration of the component against
// server: the cluster CA to trust, its client certificate to present, as
// the kubeconfigs kubeadm writes for components (scheduler.conf, ...) say.
func (c *ComponentCredentials) RESTConfig(server string) (*rest.Config, error) {
	certPEM, err := os.ReadFile(filepath.Join(c.Dir, ComponentClientCertFile))
	if err != nil {
		return nil, fmt.Errorf("rest config: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(c.Dir, ComponentClientKeyFile))
	if err != nil {
		return nil, fmt.Errorf("rest config: %w", err)
	}
	return &rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAPEM, CertData: certPEM, KeyData: keyPEM},
	}, nil
}

// CertPool returns a pool holding the cluster's CA.
func (c *ComponentCredentials) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(c.CACert)
	return pool
}

// ServingTLSConfig is the kubelet's HTTPS configuration: its serving pair,
// TLS 1.2 or later, HTTP/2 offered first.
func (c *ComponentCredentials) ServingTLSConfig() (*tls.Config, error) {
	if c.Serving == nil {
		return nil, fmt.Errorf("serving tls config: %s holds no %s", c.Dir, KubeletServingCertFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{*c.Serving},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
	}, nil
}

// CAKey returns the CA's key; only the controller manager's directory
// holds it.
func (c *ComponentCredentials) CAKey() (crypto.Signer, error) {
	if c.caKey == nil {
		return nil, fmt.Errorf("ca key: %s holds no %s", c.Dir, CAKeyFile)
	}
	return c.caKey, nil
}
