package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/klab-dev/klab/internal/atomicfile"
)

// The service-account key pair, named as kubeadm names it: the API server
// signs ServiceAccount tokens with sa.key (--service-account-signing-key-file)
// and verifies them with sa.pub (--service-account-key-file).
const (
	ServiceAccountKeyFile       = "sa.key"
	ServiceAccountPublicKeyFile = "sa.pub"
)

// ensureServiceAccountKey keeps sa.key and writes sa.pub from it. The key
// is not derived from the CA: replacing it would invalidate every token
// already handed out, so an existing key is kept and only a missing one
// is made.
func (p *PKI) ensureServiceAccountKey() error {
	keyPEM, err := os.ReadFile(p.path(ServiceAccountKeyFile))
	switch {
	case err == nil:
		if p.saKey, err = parseKey(keyPEM); err != nil {
			return fmt.Errorf("load service-account key: %s: %w", p.path(ServiceAccountKeyFile), err)
		}
	case errors.Is(err, fs.ErrNotExist):
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("generate service-account key: %w", err)
		}
		if keyPEM, err = encodeKey(key); err != nil {
			return err
		}
		if err := atomicfile.Write(p.path(ServiceAccountKeyFile), keyPEM, 0o600); err != nil {
			return err
		}
		p.saKey = key
	default:
		return fmt.Errorf("load service-account key: %w", err)
	}
	pubPEM, err := encodePublicKey(p.saKey.Public())
	if err != nil {
		return err
	}
	return writeIfChanged(p.path(ServiceAccountPublicKeyFile), pubPEM, 0o644)
}

// loadServiceAccountKey reads sa.key for Load; a PKI from before
// service-account tokens has none, which is not an error here.
func (p *PKI) loadServiceAccountKey() error {
	keyPEM, err := os.ReadFile(p.path(ServiceAccountKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load service-account key: %w", err)
	}
	if p.saKey, err = parseKey(keyPEM); err != nil {
		return fmt.Errorf("load service-account key: %s: %w", p.path(ServiceAccountKeyFile), err)
	}
	return nil
}

// ServiceAccountKey returns the key that signs ServiceAccount tokens.
func (p *PKI) ServiceAccountKey() (crypto.Signer, error) {
	if p.saKey == nil {
		return nil, fmt.Errorf("service-account key: %s holds no %s", p.Dir, ServiceAccountKeyFile)
	}
	return p.saKey, nil
}

func encodePublicKey(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
