// Package rootcacertpublisher publishes the cluster CA into every
// namespace as the ConfigMap kube-root-ca.crt, as upstream's
// root-ca-cert-publisher does: pods verify the API server with its ca.crt
// (the ServiceAccount admission plugin projects it into each pod beside
// the token), and a ConfigMap someone changed or deleted is put back.
package rootcacertpublisher

import (
	"context"
	"fmt"
	"log/slog"
	"maps"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// Name is the publisher's name in the controller manager.
const Name = "root-ca-cert-publisher"

// Upstream's names for the ConfigMap and its content.
const (
	// ConfigMapName is the ConfigMap every namespace gets.
	ConfigMapName = "kube-root-ca.crt"
	// CAKey is the key of the CA bundle in it.
	CAKey = "ca.crt"
	// descriptionAnnotation tells a reader what the ConfigMap is for.
	descriptionAnnotation = "kubernetes.io/description"
	description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Controller is the root CA publisher.
type Controller struct {
	client   kubernetes.Interface
	rootCA   []byte
	cmLister corelisters.ConfigMapLister
	nsLister corelisters.NamespaceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	worker   *controllerutil.Worker[string]
	logger   *slog.Logger
}

// Init builds the publisher from the manager's context; without a root CA
// it is skipped.
func Init(_ context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	if len(c.RootCA) == 0 {
		return nil, nil
	}
	return New(c.Client, c.Informers.Core().V1().ConfigMaps(), c.Informers.Core().V1().Namespaces(), c.RootCA, c.Logger)
}

// New returns a publisher of rootCA (PEM).
func New(client kubernetes.Interface, cms coreinformers.ConfigMapInformer, namespaces coreinformers.NamespaceInformer, rootCA []byte, logger *slog.Logger) (*Controller, error) {
	logger = componentbase.Logger(logger)
	c := &Controller{
		client: client, rootCA: rootCA, cmLister: cms.Lister(), nsLister: namespaces.Lister(),
		logger: logger.With("controller", Name),
		queue:  controllerutil.NewQueue[string]("root_ca_cert_publisher"),
	}
	c.worker = &controllerutil.Worker[string]{
		Queue: c.queue, Sync: c.syncNamespace,
		OnError: func(key string, err error, _ bool) { c.logger.Error("Sync failed", "namespace", key, "err", err) },
	}
	// Handlers only queue the namespace's name; sync decides.
	configMapChanged := func(obj interface{}) {
		if cm, ok := controllerutil.DeletedObject[*v1.ConfigMap](obj); ok && cm.Name == ConfigMapName {
			c.queue.Add(cm.Namespace)
		}
	}
	var err error
	c.synced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: cms.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, obj interface{}) { configMapChanged(obj) },
			DeleteFunc: configMapChanged,
		}},
		controllerutil.EventHandler{Informer: namespaces.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { c.queue.Add(obj.(*v1.Namespace).Name) },
			UpdateFunc: func(_, obj interface{}) { c.queue.Add(obj.(*v1.Namespace).Name) },
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("%s controller: %w", Name, err)
	}
	return c, nil
}

// Name returns "root-ca-cert-publisher".
func (c *Controller) Name() string { return Name }

// QueueLen is how many namespaces wait to be checked.
func (c *Controller) QueueLen() int { return c.queue.Len() }

// SyncCounts returns how many namespace syncs ran and how many failed.
func (c *Controller) SyncCounts() (syncs, failures uint64) { return c.worker.SyncCounts() }

// Run works the queue until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{Logger: c.logger, Synced: c.synced, Queues: []controllerutil.Runnable{c.worker}}.Run(ctx, workers)
}

// syncNamespace creates or corrects the namespace's kube-root-ca.crt.
func (c *Controller) syncNamespace(ctx context.Context, key string) error {
	ns, err := c.nsLister.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Status.Phase != v1.NamespaceActive {
		return nil // nothing new goes into a terminating namespace
	}
	want := map[string]string{CAKey: string(c.rootCA)}
	cm, err := c.cmLister.ConfigMaps(key).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		_, err := c.client.CoreV1().ConfigMaps(key).Create(ctx, &v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Annotations: map[string]string{descriptionAnnotation: description}},
			Data:       want,
		}, metav1.CreateOptions{})
		// Already there (the cache lagged), or the namespace started
		// terminating: nothing to do.
		if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			return fmt.Errorf("create configmap %s/%s: %w", key, ConfigMapName, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if maps.Equal(cm.Data, want) && len(cm.BinaryData) == 0 && cm.Annotations[descriptionAnnotation] == description {
		return nil
	}
	cm = cm.DeepCopy() // never the informer's copy
	cm.Data, cm.BinaryData = want, nil
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[descriptionAnnotation] = description
	if _, err := c.client.CoreV1().ConfigMaps(key).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update configmap %s/%s: %w", key, ConfigMapName, err)
	}
	return nil
}
