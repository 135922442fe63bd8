package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Lifetimes, as kubeadm's: the CA lives ten years, a serving certificate
// one year and is renewed when less than a month is left.
const (
	caValidity     = 10 * 365 * 24 * time.Hour
	serverValidity = 365 * 24 * time.Hour
	renewBefore    = 30 * 24 * time.Hour
	// backdate covers clocks that run a little behind the one that signed.
	backdate = 5 * time.Minute
)

// Subjects, as kubeadm names them.
const (
	caCommonName     = "kubernetes"
	serverCommonName = "kube-apiserver"
)

// defaultSANs are the names every API server certificate carries besides
// the hosts given to Ensure: the loopback names and the names pods use
// for the kubernetes service (its first service IP included).
var defaultSANs = []string{
	"localhost", "127.0.0.1", "::1",
	"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	"10.96.0.1",
}

// sans is a certificate's subject alternative names.
type sans struct {
	dns []string
	ips []net.IP
}

// wantedSANs returns hosts plus defaultSANs, without repeats. A host is an
// IP address or a DNS name; anything else (a host:port, a URL) is an error.
func wantedSANs(hosts []string) (sans, error) {
	return servingSANs(append(slices.Clone(hosts), defaultSANs...))
}

// matches reports whether cert carries exactly the names in s.
func (s sans) matches(cert *x509.Certificate) bool {
	return equalSets(s.strings(), certSANs(cert))
}

func (s sans) strings() []string {
	out := slices.Clone(s.dns)
	for _, ip := range s.ips {
		out = append(out, ip.String())
	}
	return out
}

func certSANs(cert *x509.Certificate) []string {
	out := slices.Clone(cert.DNSNames)
	for _, ip := range cert.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

func equalSets(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// newCA creates a self-signed CA certificate and its key.
func newCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate ca key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: caCommonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	cert, err := sign(tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("create ca certificate: %w", err)
	}
	return cert, key, nil
}

// newServerCert creates a serving certificate for names, signed by the CA.
func newServerCert(now time.Time, names sans, ca *x509.Certificate, caKey crypto.Signer) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate apiserver key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(serverValidity)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: serverCommonName},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     names.dns,
		IPAddresses:  names.ips,
	}
	cert, err := sign(tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("create apiserver certificate: %w", err)
	}
	return cert, key, nil
}

func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) (*x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

// newSerial returns a random 128-bit serial number, as RFC 5280 suggests
// for certificates that must not collide.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil // never 0
}

func encodeCert(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// parseCert returns the first certificate in PEM data.
func parseCert(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return x509.ParseCertificate(block.Bytes)
}

// parseKey returns the private key in PEM data, SEC 1 (as klab writes it)
// or PKCS #8.
func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	switch block.Type {
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported key type %T", key)
		}
		return signer, nil
	default:
		return nil, fmt.Errorf("unexpected PEM block %q", block.Type)
	}
}

// keyMatches reports whether key is the private half of cert's public key.
func keyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}

// clientValidity is how long a client certificate the cluster CA issues
// stays valid: a year, as kubeadm's and the kube-apiserver-client signer's
// default.
const clientValidity = 365 * 24 * time.Hour

// IssueClientCert signs a client certificate for pub with the cluster CA:
// the API server's x509 authenticator reads commonName as the user name
// and organizations as the groups. validity 0 means a year, and no
// certificate outlives the CA.
func (p *PKI) IssueClientCert(commonName string, organizations []string, pub crypto.PublicKey, validity time.Duration) (*x509.Certificate, error) {
	if p.caKey == nil {
		return nil, fmt.Errorf("issue client certificate for %q: no CA key in %s", commonName, p.Dir)
	}
	if commonName == "" {
		return nil, errors.New("issue client certificate: the common name (the user name) is empty")
	}
	if validity <= 0 {
		validity = clientValidity
	}
	cert, err := signClient(time.Now(), validity, commonName, organizations, pub, p.CACert, p.caKey)
	if err != nil {
		return nil, fmt.Errorf("issue client certificate for %q: %w", commonName, err)
	}
	return cert, nil
}

// EncodeCert returns cert in PEM, as kubeconfigs and CSR statuses hold it.
func EncodeCert(cert *x509.Certificate) []byte { return encodeCert(cert) }

// newClientCert creates a key and a client certificate for user
// commonName in the groups organizations, signed by the CA, as kubeadm's
// apiserver-kubelet-client.crt is.
func newClientCert(now time.Time, commonName string, organizations []string, ca *x509.Certificate, caKey crypto.Signer) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate %s key: %w", commonName, err)
	}
	cert, err := signClient(now, serverValidity, commonName, organizations, key.Public(), ca, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("create %s certificate: %w", commonName, err)
	}
	return cert, key, nil
}

// signClient signs a client certificate for pub, valid for validity from
// now but never past the CA: commonName is the user, organizations the
// groups.
func signClient(now time.Time, validity time.Duration, commonName string, organizations []string, pub crypto.PublicKey, ca *x509.Certificate, caKey crypto.Signer) (*x509.Certificate, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: organizations},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return sign(tmpl, ca, pub, caKey)
}
