// Package controllerctx is what the controller manager hands each of its
// controllers: clients, shared informers, an event recorder and the
// cluster's timings. It is a package of its own so that the controllers
// (one package each) and the manager that starts them do not import each
// other.
package controllerctx

import (
	"context"
	"crypto"
	"crypto/x509"
	"log/slog"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/record"

	"github.com/klab-dev/klab/cluster/timing"
)

// Context is shared by every controller of one controller manager.
type Context struct {
	// Client talks to the API server as system:kube-controller-manager.
	Client kubernetes.Interface
	// Informers are shared by all controllers; the manager starts them
	// after every controller has registered its handlers.
	Informers informers.SharedInformerFactory
	// Metadata and MetadataInformers serve the garbage collector, which
	// needs only object metadata of many resources.
	Metadata          metadata.Interface
	MetadataInformers metadatainformer.SharedInformerFactory
	// Recorder returns an event recorder whose events name component as
	// their source ("replicaset-controller").
	Recorder func(component string) record.EventRecorder
	// Speed divides Kubernetes' timings.
	Speed timing.Speed
	// Logger is the manager's log.
	Logger *slog.Logger
	// ClusterSigningCert and ClusterSigningKey are the CA the CSR signer
	// issues certificates with (upstream's --cluster-signing-cert-file
	// and --cluster-signing-key-file); nil leaves the signer off.
	ClusterSigningCert *x509.Certificate
	ClusterSigningKey  crypto.Signer
	// RootCA is the PEM bundle the root CA publisher puts into every
	// namespace (upstream's --root-ca-file); empty leaves it off.
	RootCA []byte
}

// Controller is one reconciler of the controller manager.
type Controller interface {
	// Name is upstream's controller name ("replicaset", "nodelifecycle").
	Name() string
	// Run processes work with the given number of workers until ctx is
	// done. It waits for its informers' caches to sync first.
	Run(ctx context.Context, workers int)
}

// InitFunc builds a controller and registers its informer handlers.
type InitFunc func(ctx context.Context, c Context) (Controller, error)
