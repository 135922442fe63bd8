package pki

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

func TestWriteKubeconfig(t *testing.T) {
	dir := t.TempDir()
	p := ensure(t, filepath.Join(dir, "pki"), testHosts, testNodes)
	tests := []struct {
		user string
	}{
		{auth.AdminUser},
		{auth.ViewerUser},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			path := filepath.Join(dir, tt.user+".kubeconfig")
			if err := p.WriteKubeconfig(path, "demo", "https://127.0.0.1:6443", tt.user); err != nil {
				t.Fatal(err)
			}
			if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
				t.Fatalf("kubeconfig stat = %v, %v; want mode 0600", info, err)
			}
			cfg, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.CurrentContext != "klab-demo" {
				t.Errorf("current context = %q, want klab-demo", cfg.CurrentContext)
			}
			ctx := cfg.Contexts["klab-demo"]
			if ctx == nil || ctx.Cluster != "klab-demo" || ctx.AuthInfo != tt.user {
				t.Errorf("context = %+v, want cluster klab-demo and user %s", ctx, tt.user)
			}
			rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
			if err != nil {
				t.Fatal(err)
			}
			token, _ := p.Token(tt.user)
			if rc.Host != "https://127.0.0.1:6443" || rc.BearerToken != token || !bytes.Equal(rc.CAData, p.CAPEM) {
				t.Errorf("rest config: host %q, token match %v, CA match %v", rc.Host, rc.BearerToken == token, bytes.Equal(rc.CAData, p.CAPEM))
			}
			direct, err := p.RESTConfig("demo", "https://127.0.0.1:6443", tt.user)
			if err != nil {
				t.Fatal(err)
			}
			if direct.Host != rc.Host || direct.BearerToken != rc.BearerToken || !bytes.Equal(direct.CAData, rc.CAData) {
				t.Error("RESTConfig differs from the kubeconfig's rest config")
			}
		})
	}
	if err := p.WriteKubeconfig(filepath.Join(dir, "x"), "demo", "https://127.0.0.1:6443", "nobody"); err == nil ||
		!strings.Contains(err.Error(), `no token for user "nobody"`) {
		t.Errorf("unknown user: error %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	want := ensure(t, dir, testHosts, testNodes)
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.CAPEM, want.CAPEM) || !bytes.Equal(got.ServerCertPEM, want.ServerCertPEM) ||
		!reflect.DeepEqual(got.Identities, want.Identities) {
		t.Error("Load returned something other than Ensure")
	}
	if _, err := got.ServerTLSConfig(); err != nil {
		t.Errorf("ServerTLSConfig after Load: %v", err)
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("Load of an empty dir succeeded")
	}
}

func TestTokenLookup(t *testing.T) {
	p := ensure(t, t.TempDir(), testHosts, testNodes)
	tests := []struct {
		name   string
		wantOK bool
	}{
		{auth.AdminUser, true},
		{auth.ViewerUser, true},
		// Components authenticate with client certificates, not tokens.
		{auth.KubeProxy, false},
		{auth.NodeUser("worker-1"), false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token, ok := p.Token(tt.name)
			if ok != tt.wantOK || (ok && token == "") {
				t.Errorf("Token(%q) = %q, %v; want ok=%v", tt.name, token, ok, tt.wantOK)
			}
		})
	}
}
