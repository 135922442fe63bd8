package lb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHTTPSHealth(t *testing.T) {
	ready := startAPIServer(t, "ready", "127.0.0.1:0")
	notReady := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "[-]etcd failed: reason withheld", http.StatusServiceUnavailable)
	}))
	defer notReady.Close()
	// Every httptest server has the same certificate, so the untrusted
	// one is made here.
	foreign := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: selfSigned(t)})

	tests := []struct {
		name    string
		caPEM   []byte
		backend string
		wantErr string
	}{
		{name: "ready", caPEM: caPEM(ready), backend: ready.addr},
		{name: "not ready", caPEM: caPEM(ready), backend: strings.TrimPrefix(notReady.URL, "https://"), wantErr: "/readyz answered 503 Service Unavailable: [-]etcd failed"},
		{name: "untrusted certificate", caPEM: foreign, backend: ready.addr, wantErr: "certificate signed by unknown authority"},
		{name: "nothing listening", caPEM: caPEM(ready), backend: closedAddr(t), wantErr: "connection refused"},
		{name: "bad CA PEM", caPEM: []byte("not pem"), backend: ready.addr, wantErr: "no CA certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := HTTPSHealth(tt.caPEM)(t.Context(), tt.backend)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("check failed: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// selfSigned returns a self-signed CA certificate, in DER.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "someone else"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// closedAddr returns an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
