package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

var (
	testHosts = []string{"127.0.0.11", "127.0.0.12", "master-1", "klab-demo-lb"}
	testNodes = []string{"master-1", "worker-1"}
)

func ensure(t *testing.T, dir string, hosts, nodes []string) *PKI {
	t.Helper()
	p, err := Ensure(dir, hosts, nodes)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return p
}

// readAll returns the contents of every file in dir, by name.
func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := make(map[string]string)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(data)
	}
	return files
}

func TestEnsureCreates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	p := ensure(t, dir, testHosts, testNodes)

	wantModes := map[string]fs.FileMode{
		CACertFile: 0o644, CAKeyFile: 0o600, ServerCertFile: 0o644, ServerKeyFile: 0o600, TokenFile: 0o600,
		KubeletClientCertFile: 0o644, KubeletClientKeyFile: 0o600,
		ServiceAccountKeyFile: 0o600, ServiceAccountPublicKeyFile: 0o644,
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(wantModes) {
		t.Errorf("dir holds %d files, want %d (no temporary files left)", len(entries), len(wantModes))
	}
	for name, mode := range wantModes {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if info.Mode().Perm() != mode {
			t.Errorf("%s mode = %v, want %v", name, info.Mode().Perm(), mode)
		}
	}

	if !p.CACert.IsCA || p.CACert.Subject.CommonName != "kubernetes" {
		t.Errorf("CA: IsCA %v, CN %q; want a CA named kubernetes", p.CACert.IsCA, p.CACert.Subject.CommonName)
	}
	if pub, ok := p.CACert.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("CA key is %T, want ECDSA P-256", p.CACert.PublicKey)
	}
	if life := p.CACert.NotAfter.Sub(p.CACert.NotBefore); life < 10*365*24*time.Hour {
		t.Errorf("CA valid for %v, want ten years", life)
	}
	if !slices.Equal(p.ServerCert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("server cert ExtKeyUsage = %v, want server auth", p.ServerCert.ExtKeyUsage)
	}

	type who struct {
		name   string
		groups []string
	}
	var got []who
	hexToken := regexp.MustCompile(`^[0-9a-f]{64}$`)
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	tokens := make(map[string]bool)
	for _, id := range p.Identities {
		got = append(got, who{id.Name, id.Groups})
		if !hexToken.MatchString(id.Token) {
			t.Errorf("%s token %q is not 32 bytes of hex", id.Name, id.Token)
		}
		if !uuid.MatchString(id.UID) {
			t.Errorf("%s uid %q is not a UUID", id.Name, id.UID)
		}
		if tokens[id.Token] {
			t.Errorf("%s shares its token", id.Name)
		}
		tokens[id.Token] = true
	}
	want := []who{
		{"kubernetes-admin", []string{"system:masters"}},
		{"klab-viewer", []string{"klab:viewers"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("identities:\n got %v\nwant %v", got, want)
	}

	// tokens.csv is what kube-apiserver's token authenticator reads.
	a, err := auth.LoadTokenFile(filepath.Join(dir, TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	adminToken, _ := p.Token(auth.AdminUser)
	u, ok := a.AuthenticateToken(adminToken)
	if !ok || u.Name != auth.AdminUser || !u.InGroup(auth.SystemPrivilegedGroup) {
		t.Errorf("admin token authenticates as %+v, %v", u, ok)
	}
}

func TestEnsureIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	first := ensure(t, dir, testHosts, testNodes)
	before := readAll(t, dir)
	stat, _ := os.Stat(filepath.Join(dir, TokenFile))

	second := ensure(t, dir, testHosts, testNodes)
	if !bytes.Equal(first.CAPEM, second.CAPEM) {
		t.Error("second Ensure returned another CA")
	}
	if !bytes.Equal(first.ServerCertPEM, second.ServerCertPEM) {
		t.Error("second Ensure issued another server certificate")
	}
	if !reflect.DeepEqual(first.Identities, second.Identities) {
		t.Errorf("identities changed:\n first %+v\nsecond %+v", first.Identities, second.Identities)
	}
	if after := readAll(t, dir); !reflect.DeepEqual(before, after) {
		t.Error("second Ensure changed files")
	}
	if again, _ := os.Stat(filepath.Join(dir, TokenFile)); !again.ModTime().Equal(stat.ModTime()) {
		t.Error("second Ensure rewrote tokens.csv")
	}
}

func TestServerCertSANs(t *testing.T) {
	p := ensure(t, t.TempDir(), testHosts, testNodes)
	want := []string{
		"master-1", "klab-demo-lb",
		"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
		"127.0.0.11", "127.0.0.12", "127.0.0.1", "::1", "10.96.0.1",
	}
	if got := certSANs(p.ServerCert); !equalSets(got, want) || len(got) != len(want) {
		t.Errorf("SANs:\n got %v\nwant %v", got, want)
	}
	roots := p.CertPool()
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			_, err := p.ServerCert.Verify(x509.VerifyOptions{
				DNSName:   name,
				Roots:     roots,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			if err != nil {
				t.Errorf("verify for %s: %v", name, err)
			}
		})
	}
	if _, err := p.ServerCert.Verify(x509.VerifyOptions{DNSName: "127.0.0.13", Roots: roots}); err == nil {
		t.Error("certificate verifies for 127.0.0.13, which was not asked for")
	}
}

func TestEnsureNewHostsKeepCAAndTokens(t *testing.T) {
	dir := t.TempDir()
	first := ensure(t, dir, testHosts, testNodes)
	second := ensure(t, dir, append(slices.Clone(testHosts), "192.168.50.7"), testNodes)
	if !bytes.Equal(first.CAPEM, second.CAPEM) || !reflect.DeepEqual(first.Identities, second.Identities) {
		t.Error("a new host changed the CA or the tokens")
	}
	if bytes.Equal(first.ServerCertPEM, second.ServerCertPEM) {
		t.Fatal("a new host did not issue a new server certificate")
	}
	if _, err := second.ServerCert.Verify(x509.VerifyOptions{DNSName: "192.168.50.7", Roots: second.CertPool()}); err != nil {
		t.Errorf("new certificate: %v", err)
	}
}

func TestEnsureNodesChange(t *testing.T) {
	dir := t.TempDir()
	first := ensure(t, dir, testHosts, []string{"master-1", "worker-1"})
	second := ensure(t, dir, testHosts, []string{"master-1", "worker-2"})

	for _, name := range []string{auth.AdminUser, auth.ViewerUser} {
		a, _ := first.Token(name)
		b, ok := second.Token(name)
		if !ok || a != b {
			t.Errorf("token of %s changed or vanished", name)
		}
	}
	if !bytes.Equal(first.CAPEM, second.CAPEM) {
		t.Error("a node change replaced the CA")
	}
}

func TestEnsureBadInput(t *testing.T) {
	tests := []struct {
		name    string
		hosts   []string
		nodes   []string
		wantErr string
	}{
		{name: "host with port", hosts: []string{"127.0.0.1:6443"}, wantErr: `host "127.0.0.1:6443" is neither an IP address nor a DNS name`},
		{name: "url", hosts: []string{"https://master-1"}, wantErr: `host "https://master-1" is neither`},
		{name: "empty host", hosts: []string{""}, wantErr: `host "" is neither`},
		{name: "empty node", nodes: []string{""}, wantErr: `bad node name ""`},
		{name: "node with comma", nodes: []string{"a,b"}, wantErr: `bad node name "a,b"`},
		{name: "node twice", nodes: []string{"w", "w"}, wantErr: `node "w" given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pki")
			_, err := Ensure(dir, tt.hosts, tt.nodes)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Ensure error = %v, want one containing %q", err, tt.wantErr)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Error("Ensure created files for bad input")
			}
		})
	}
}

func TestEnsureRefusesToReplaceStoredState(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(dir string) error
		wantErr string
	}{
		{
			name:    "ca key missing",
			damage:  func(dir string) error { return os.Remove(filepath.Join(dir, CAKeyFile)) },
			wantErr: CAKeyFile,
		},
		{
			name: "ca key of another ca",
			damage: func(dir string) error {
				key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
				pemData, err := encodeKey(key)
				if err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(dir, CAKeyFile), pemData, 0o600)
			},
			wantErr: "ca.key does not belong to",
		},
		{
			name: "token file broken",
			damage: func(dir string) error {
				f, err := os.OpenFile(filepath.Join(dir, TokenFile), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = f.WriteString("only-a-token\n")
				return err
			},
			wantErr: "tokens.csv:3: token file must have at least 3 columns",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ensure(t, dir, testHosts, testNodes)
			if err := tt.damage(dir); err != nil {
				t.Fatal(err)
			}
			before := readAll(t, dir)
			_, err := Ensure(dir, testHosts, testNodes)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Ensure error = %v, want one containing %q", err, tt.wantErr)
			}
			if after := readAll(t, dir); !reflect.DeepEqual(before, after) {
				t.Error("a failed Ensure changed files")
			}
		})
	}
}

func TestEnsureReplacesBrokenServerCert(t *testing.T) {
	tests := []struct {
		name   string
		damage func(dir string) error
	}{
		{"key missing", func(dir string) error { return os.Remove(filepath.Join(dir, ServerKeyFile)) }},
		{"not pem", func(dir string) error { return os.WriteFile(filepath.Join(dir, ServerCertFile), []byte("junk"), 0o644) }},
		{"key of another cert", func(dir string) error {
			key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			pemData, err := encodeKey(key)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, ServerKeyFile), pemData, 0o600)
		}},
		{"signed by another ca", func(dir string) error {
			other := filepath.Join(filepath.Dir(dir), "other")
			if _, err := Ensure(other, testHosts, testNodes); err != nil {
				return err
			}
			for _, f := range []string{ServerCertFile, ServerKeyFile} {
				data, err := os.ReadFile(filepath.Join(other, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pki")
			first := ensure(t, dir, testHosts, testNodes)
			if err := tt.damage(dir); err != nil {
				t.Fatal(err)
			}
			second := ensure(t, dir, testHosts, testNodes)
			if !bytes.Equal(first.CAPEM, second.CAPEM) {
				t.Error("CA replaced")
			}
			if err := second.ServerCert.CheckSignatureFrom(second.CACert); err != nil {
				t.Errorf("new server certificate: %v", err)
			}
			if _, err := Load(dir); err != nil {
				t.Errorf("Load after repair: %v", err)
			}
		})
	}
}

func TestServerCertRenewedBeforeExpiry(t *testing.T) {
	dir := t.TempDir()
	p := ensure(t, dir, testHosts, testNodes)
	names, err := wantedSANs(testHosts)
	if err != nil {
		t.Fatal(err)
	}
	old := p.ServerCertPEM

	// Well within its year: kept.
	if err := p.ensureServerCert(time.Now().Add(300*24*time.Hour), names); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(old, p.ServerCertPEM) {
		t.Fatal("certificate renewed with two months left")
	}
	// Less than a month left: renewed.
	later := time.Now().Add(340 * 24 * time.Hour)
	if err := p.ensureServerCert(later, names); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(old, p.ServerCertPEM) {
		t.Fatal("certificate not renewed with under a month left")
	}
	if !p.ServerCert.NotAfter.After(later.Add(300 * 24 * time.Hour)) {
		t.Errorf("renewed certificate ends %v, want about a year after %v", p.ServerCert.NotAfter, later)
	}
}

func TestServerTLSConfigHandshake(t *testing.T) {
	p := ensure(t, t.TempDir(), testHosts, testNodes)
	cfg, err := p.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()

	tests := []struct {
		serverName string
		wantOK     bool
	}{
		{"kubernetes.default.svc", true},
		{"127.0.0.1", true},
		{"klab-demo-lb", true},
		{"example.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.serverName, func(t *testing.T) {
			conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: p.CertPool(), ServerName: tt.serverName})
			if err == nil {
				conn.Close()
			}
			if (err == nil) != tt.wantOK {
				t.Errorf("handshake as %s: err %v, want ok=%v", tt.serverName, err, tt.wantOK)
			}
		})
	}
}

// TestServiceAccountKeyKept checks that a second Ensure and Load return
// the key of the first: replacing it would invalidate every token issued.
func TestServiceAccountKeyKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	first, err := ensure(t, dir, testHosts, testNodes).ServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	second, err := ensure(t, dir, testHosts, testNodes).ServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	third, err := loaded.ServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	pub := first.Public().(*ecdsa.PublicKey)
	if !pub.Equal(second.Public()) || !pub.Equal(third.Public()) {
		t.Error("the service-account key changed between Ensure, Ensure and Load")
	}
	pubPEM, err := os.ReadFile(filepath.Join(dir, ServiceAccountPublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pubPEM)
	if block == nil {
		t.Fatalf("%s holds no PEM block", ServiceAccountPublicKeyFile)
	}
	parsed, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(parsed) {
		t.Errorf("%s is not the public half of %s", ServiceAccountPublicKeyFile, ServiceAccountKeyFile)
	}
}
