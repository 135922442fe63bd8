// Package csrsigning is the controller manager's CSR signer for
// kubernetes.io/kube-apiserver-client: once someone approves a
// CertificateSigningRequest for that signer, it signs the request's key
// with the cluster CA (upstream's --cluster-signing-cert-file and
// --cluster-signing-key-file) and writes the certificate into
// status.certificate, where `kubectl get csr -o jsonpath=` finds it. A
// request the signer will not honour gets a Failed condition instead.
package csrsigning

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certificatesinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// Name is the signer's name in the controller manager.
const Name = "csrsigning"

// Upstream's signing limits.
const (
	// SignerName is the signer this controller serves.
	SignerName = certificatesv1.KubeAPIServerClientSignerName
	// DefaultDuration is --cluster-signing-duration's default: the
	// longest certificate the signer issues.
	DefaultDuration = 365 * 24 * time.Hour
	// minDuration is the shortest certificate a request can ask for.
	minDuration = 10 * time.Minute
	// backdate is how far before now a certificate starts, for clocks
	// that lag.
	backdate = 5 * time.Minute
)

// Controller signs approved requests of SignerName.
type Controller struct {
	client   kubernetes.Interface
	lister   certificateslisters.CertificateSigningRequestLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	worker   *controllerutil.Worker[string]
	logger   *slog.Logger
	ca       *x509.Certificate
	caKey    crypto.Signer
	duration time.Duration
	now      func() time.Time
}

// Init builds the signer from the manager's context; without a signing
// CA it is skipped, as upstream's is without its files.
func Init(_ context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	if c.ClusterSigningCert == nil || c.ClusterSigningKey == nil {
		return nil, nil
	}
	return New(c.Client, c.Informers.Certificates().V1().CertificateSigningRequests(), c.ClusterSigningCert, c.ClusterSigningKey, c.Logger)
}

// New returns a signer that signs with ca and caKey.
func New(client kubernetes.Interface, csrs certificatesinformers.CertificateSigningRequestInformer, ca *x509.Certificate, caKey crypto.Signer, logger *slog.Logger) (*Controller, error) {
	logger = componentbase.Logger(logger)
	c := &Controller{
		client: client, lister: csrs.Lister(), ca: ca, caKey: caKey, duration: DefaultDuration, now: time.Now,
		logger: logger.With("controller", Name),
		queue:  controllerutil.NewQueue[string](Name),
	}
	c.worker = &controllerutil.Worker[string]{
		Queue: c.queue, Sync: c.sync,
		OnError: func(key string, err error, _ bool) { c.logger.Error("Sync failed", "csr", key, "err", err) },
	}
	enqueue := func(obj interface{}) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			c.queue.Add(csr.Name)
		}
	}
	var err error
	c.synced, err = controllerutil.AddEventHandlers(controllerutil.EventHandler{Informer: csrs.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
	}})
	if err != nil {
		return nil, fmt.Errorf("csrsigning controller: %w", err)
	}
	return c, nil
}

// Name returns "csrsigning".
func (c *Controller) Name() string { return Name }

// QueueLen is how many requests wait to be looked at.
func (c *Controller) QueueLen() int { return c.queue.Len() }

// SyncCounts returns how many syncs ran and how many failed.
func (c *Controller) SyncCounts() (syncs, failures uint64) { return c.worker.SyncCounts() }

// Run works the queue until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{Logger: c.logger, Synced: c.synced, Queues: []controllerutil.Runnable{c.worker}}.Run(ctx, workers)
}

// sync signs the request named key if it is this signer's, approved, and
// neither denied, failed nor signed already.
func (c *Controller) sync(ctx context.Context, key string) error {
	cached, err := c.lister.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cached.Spec.SignerName != SignerName || len(cached.Status.Certificate) > 0 || !approved(cached) {
		return nil
	}
	csr := cached.DeepCopy()
	certPEM, err := c.sign(csr)
	var refused *refusal
	switch {
	case errors.As(err, &refused):
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: v1.ConditionTrue,
			Reason: "SignerValidationFailure", Message: refused.Error(),
			LastUpdateTime: metav1.NewTime(c.now()),
		})
	case err != nil:
		return fmt.Errorf("sign %s: %w", csr.Name, err)
	default:
		csr.Status.Certificate = certPEM
	}
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of %s: %w", csr.Name, err)
	}
	return nil
}

// approved reports whether the request is approved and not denied or
// failed.
func approved(csr *certificatesv1.CertificateSigningRequest) bool {
	ok := false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			ok = true
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		}
	}
	return ok
}

// refusal is a request the signer will not sign: it is marked Failed
// rather than retried.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// clientUsages maps the usages a kube-apiserver-client certificate may
// carry to their X.509 form; client auth is required.
var clientUsages = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageDigitalSignature: x509.KeyUsageDigitalSignature,
	certificatesv1.UsageKeyEncipherment:  x509.KeyUsageKeyEncipherment,
	certificatesv1.UsageClientAuth:       0,
}

// sign returns the PEM certificate for csr, or a refusal.
func (c *Controller) sign(csr *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	var keyUsage x509.KeyUsage
	hasClientAuth := false
	for _, u := range csr.Spec.Usages {
		ku, ok := clientUsages[u]
		if !ok {
			return nil, &refusal{fmt.Sprintf("invalid usage for client certificate: %s", u)}
		}
		keyUsage |= ku
		hasClientAuth = hasClientAuth || u == certificatesv1.UsageClientAuth
	}
	if !hasClientAuth {
		return nil, &refusal{fmt.Sprintf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)}
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, &refusal{"unable to parse csr: PEM block type must be CERTIFICATE REQUEST"}
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, &refusal{fmt.Sprintf("unable to parse csr: %v", err)}
	}
	if err := req.CheckSignature(); err != nil {
		return nil, &refusal{fmt.Sprintf("unable to verify csr signature: %v", err)}
	}
	if req.Subject.CommonName == "" {
		return nil, &refusal{"subject common name (the user name) is empty"}
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	now := c.now()
	notAfter := now.Add(c.requestedDuration(csr))
	if notAfter.After(c.ca.NotAfter) {
		notAfter = c.ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               req.Subject,
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              keyUsage,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.ca, req.PublicKey, c.caKey)
	if err != nil {
		return nil, fmt.Errorf("create certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// requestedDuration is spec.expirationSeconds, at least ten minutes and at
// most the signer's duration.
func (c *Controller) requestedDuration(csr *certificatesv1.CertificateSigningRequest) time.Duration {
	if csr.Spec.ExpirationSeconds == nil {
		return c.duration
	}
	d := max(time.Duration(*csr.Spec.ExpirationSeconds)*time.Second, minDuration)
	return min(d, c.duration)
}
