package pki

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// filesIn lists the names of dir's files.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestComponentCredentialsHoldOnlyTheirOwn(t *testing.T) {
	p := ensure(t, t.TempDir(), testHosts, testNodes)
	root := t.TempDir()
	tests := []struct {
		user      string
		hosts     []string
		wantFiles []string
		wantOrgs  []string
	}{
		{auth.KubeScheduler, nil, []string{CACertFile, ComponentClientCertFile, ComponentClientKeyFile}, nil},
		{auth.KubeProxy, nil, []string{CACertFile, ComponentClientCertFile, ComponentClientKeyFile}, nil},
		{auth.KubeControllerManager, nil, []string{CACertFile, CAKeyFile, ComponentClientCertFile, ComponentClientKeyFile}, nil},
		{auth.NodeUser("worker-1"), []string{"10.1.0.3", "worker-1"},
			[]string{CACertFile, ComponentClientCertFile, ComponentClientKeyFile, KubeletServingCertFile, KubeletServingKeyFile}, []string{auth.NodesGroup}},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			id, ok := ClientIdentity(tt.user)
			if !ok {
				t.Fatalf("ClientIdentity(%q) not ok", tt.user)
			}
			id.ServingHosts = tt.hosts
			dir := filepath.Join(root, tt.user)
			// A stray token file from elsewhere is removed.
			os.MkdirAll(dir, 0o700)
			os.WriteFile(filepath.Join(dir, TokenFile), []byte("x,y,z\n"), 0o600)
			if err := p.EnsureComponentCredentials(dir, id); err != nil {
				t.Fatal(err)
			}
			got := filesIn(t, dir)
			want := slices.Sorted(slices.Values(tt.wantFiles))
			if !slices.Equal(got, want) {
				t.Errorf("files %v, want %v", got, want)
			}
			c, err := LoadComponentCredentials(dir)
			if err != nil {
				t.Fatal(err)
			}
			leaf := c.Client.Leaf
			if leaf.Subject.CommonName != tt.user || !slices.Equal(leaf.Subject.Organization, tt.wantOrgs) {
				t.Errorf("client certificate CN=%q O=%v, want CN=%q O=%v", leaf.Subject.CommonName, leaf.Subject.Organization, tt.user, tt.wantOrgs)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: p.CertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("client certificate does not verify as a client of the cluster CA: %v", err)
			}
			if len(tt.hosts) > 0 {
				if _, err := c.Serving.Leaf.Verify(x509.VerifyOptions{Roots: p.CertPool(), DNSName: "10.1.0.3"}); err != nil {
					t.Errorf("serving certificate: %v", err)
				}
			}
			// A second call keeps the same certificate.
			before, _ := os.ReadFile(filepath.Join(dir, ComponentClientCertFile))
			if err := p.EnsureComponentCredentials(dir, id); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(filepath.Join(dir, ComponentClientCertFile))
			if string(before) != string(after) {
				t.Error("a second call issued a new client certificate")
			}
		})
	}
}

func TestKubeletClientCertIsKubeadms(t *testing.T) {
	p := ensure(t, t.TempDir(), testHosts, testNodes)
	cert, err := p.KubeletClientCertificate()
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Subject.CommonName != "kube-apiserver-kubelet-client" || !slices.Equal(leaf.Subject.Organization, []string{"kubeadm:cluster-admins"}) {
		t.Errorf("CN=%q O=%v, want kubeadm's kube-apiserver-kubelet-client in kubeadm:cluster-admins", leaf.Subject.CommonName, leaf.Subject.Organization)
	}
}

func TestTrustOnly(t *testing.T) {
	p := ensure(t, t.TempDir(), testHosts, testNodes)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ServerKeyFile), []byte("old"), 0o600)
	if err := p.EnsureTrustOnly(dir); err != nil {
		t.Fatal(err)
	}
	if got := filesIn(t, dir); !slices.Equal(got, []string{CACertFile}) {
		t.Errorf("files %v, want only %s", got, CACertFile)
	}
}
