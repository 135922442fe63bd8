package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestEtcdctlTLS checks etcd behind TLS as a student meets it: klab status
// -o json names https endpoints and the CA, certificate and key; the CKA
// form `etcdctl --endpoints=https://... --cacert --cert --key snapshot
// save` works with those files; a client that trusts the CA but has no
// certificate is refused; and klab's own tooling (status, clock) still
// reads the members.
func TestEtcdctlTLS(t *testing.T) {
	testenv.EndToEnd(t)
	testHome(t)
	t.Setenv("ETCDCTL_ENDPOINTS", "")
	i18n.SetLang(i18n.English)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := lab.Up(ctx, lab.Spec{Name: "ctltls", Masters: 1, Speed: 1, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background(), nil)
	t.Setenv("KLAB_CLUSTER", "ctltls")

	code, stdout, stderr := klabProcess(t, "status", "-o", "json")
	if code != 0 {
		t.Fatalf("klab status -o json exited %d: %s", code, stderr)
	}
	var st struct {
		EtcdEndpoints  []string `json:"etcdEndpoints"`
		EtcdCACert     string   `json:"etcdCACert"`
		EtcdClientCert string   `json:"etcdClientCert"`
		EtcdClientKey  string   `json:"etcdClientKey"`
		Leader         string   `json:"leader"`
	}
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("klab status -o json: %v\n%s", err, stdout)
	}
	if len(st.EtcdEndpoints) != 1 || !strings.HasPrefix(st.EtcdEndpoints[0], "https://") {
		t.Fatalf("etcdEndpoints %v, want one https:// URL", st.EtcdEndpoints)
	}
	for name, path := range map[string]string{"etcdCACert": st.EtcdCACert, "etcdClientCert": st.EtcdClientCert, "etcdClientKey": st.EtcdClientKey} {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s %q: %v", name, path, err)
		}
	}
	if st.Leader == "" {
		t.Fatal("klab status names no leader: klab's own tooling cannot read the members")
	}
	if code, stdout, _ := klabProcess(t, "status"); code != 0 || !strings.Contains(stdout, "--cacert="+st.EtcdCACert) {
		t.Errorf("klab status does not show the etcdctl credentials:\n%s", stdout)
	}

	// The CKA form, every flag given by hand: klab presets nothing then.
	snap := filepath.Join(t.TempDir(), "snap.db")
	code, stdout, stderr = klabProcess(t, "etcdctl", "--endpoints="+st.EtcdEndpoints[0],
		"--cacert="+st.EtcdCACert, "--cert="+st.EtcdClientCert, "--key="+st.EtcdClientKey, "snapshot", "save", snap)
	if code != 0 {
		t.Fatalf("etcdctl snapshot save with the CKA flags exited %d: %s %s", code, stdout, stderr)
	}
	if fi, err := os.Stat(snap); err != nil || fi.Size() == 0 {
		t.Fatalf("snapshot %s: %v", snap, err)
	}
	// klab etcdctl alone presets the certificates.
	if code, stdout, stderr := klabProcess(t, "etcdctl", "endpoint", "health"); code != 0 || !strings.Contains(stdout+stderr, "is healthy") {
		t.Fatalf("klab etcdctl endpoint health exited %d: %s %s", code, stdout, stderr)
	}
	// The clock endpoint answers klab.
	if code, stdout, stderr := klabProcess(t, "clock"); code != 0 {
		t.Fatalf("klab clock exited %d: %s %s", code, stdout, stderr)
	}

	// Trusting the CA is not enough: without a client certificate the
	// member refuses.
	caPEM, err := os.ReadFile(st.EtcdCACert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cli, err := clientv3.New(clientv3.Config{Endpoints: st.EtcdEndpoints, TLS: &tls.Config{RootCAs: roots}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err == nil {
		defer cli.Close()
		rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
		defer rcancel()
		if _, err := cli.Get(rctx, "/registry", clientv3.WithPrefix(), clientv3.WithKeysOnly()); err == nil {
			t.Fatal("a client without a certificate read /registry")
		}
	}
}
