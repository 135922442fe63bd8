// Package resourcequota is klab's resourcequota controller, after
// upstream's pkg/controller/resourcequota: it keeps each ResourceQuota's
// status — status.hard copied from spec.hard, status.used counted from the
// objects that exist in the quota's namespace.
//
// The API server's ResourceQuota admission charges a new object to
// status.used before storing it; this controller is what gives usage back
// (a deleted object, a pod that finished, a create that failed after its
// charge) and what fills in a new quota's status, without which the quota
// constrains nothing. As upstream it recounts a namespace's quotas when a
// counted object is deleted or a pod finishes (replenishment), when a
// quota is created or its spec changes, and every resync period (5
// minutes, at the lab's speed).
//
// Pods and services are measured from their objects (compute requests
// and limits, node ports, load balancers); every other resource is
// counted as count/<resource>.<group>, from the typed informers for the
// kinds a lesson uses and by listing metadata for the rest.
package resourcequota

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/internal/quota"
	"github.com/klab-dev/klab/cluster/timing"
)

const (
	// Name is the controller's name in kube-controller-manager.
	Name = "resourcequota"
	// ResyncPeriod is upstream's --resource-quota-sync-period.
	ResyncPeriod = 5 * time.Minute
)

// Controller is the resourcequota controller.
type Controller struct {
	client   kubernetes.Interface
	metadata metadata.Interface
	speed    timing.Speed

	quotaLister corelisters.ResourceQuotaLister
	// counted lists the objects of the resources it has an informer
	// for, by namespace.
	counted map[schema.GroupResource]func(namespace string) ([]runtime.Object, error)
	synced  []cache.InformerSynced

	// queue holds quota keys.
	queue  workqueue.TypedRateLimitingInterface[string]
	logger *slog.Logger
}

var _ controllerctx.Controller = (*Controller)(nil)

// Init builds the controller and registers its informer handlers.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c)
}

// informed are the resources counted from a typed informer; the others
// are listed when a quota names them.
func informed(f informers.SharedInformerFactory) map[schema.GroupResource]cache.SharedIndexInformer {
	return map[schema.GroupResource]cache.SharedIndexInformer{
		{Resource: "pods"}:                        f.Core().V1().Pods().Informer(),
		{Resource: "services"}:                    f.Core().V1().Services().Informer(),
		{Resource: "configmaps"}:                  f.Core().V1().ConfigMaps().Informer(),
		{Resource: "secrets"}:                     f.Core().V1().Secrets().Informer(),
		{Resource: "resourcequotas"}:              f.Core().V1().ResourceQuotas().Informer(),
		{Group: "apps", Resource: "deployments"}:  f.Apps().V1().Deployments().Informer(),
		{Group: "apps", Resource: "replicasets"}:  f.Apps().V1().ReplicaSets().Informer(),
		{Group: "apps", Resource: "statefulsets"}: f.Apps().V1().StatefulSets().Informer(),
		{Group: "apps", Resource: "daemonsets"}:   f.Apps().V1().DaemonSets().Informer(),
		{Group: "batch", Resource: "jobs"}:        f.Batch().V1().Jobs().Informer(),
		{Group: "batch", Resource: "cronjobs"}:    f.Batch().V1().CronJobs().Informer(),
	}
}

func newController(c controllerctx.Context) (*Controller, error) {
	quotaInformer := c.Informers.Core().V1().ResourceQuotas()
	rq := &Controller{
		client:      c.Client,
		metadata:    c.Metadata,
		speed:       c.Speed,
		quotaLister: quotaInformer.Lister(),
		counted:     map[schema.GroupResource]func(string) ([]runtime.Object, error){},
		queue:       controllerutil.NewQueue[string](Name),
		logger:      c.Logger.With("controller", Name),
	}
	handlers := []controllerutil.EventHandler{{Informer: quotaInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
		AddFunc: rq.enqueue,
		UpdateFunc: func(old, cur any) {
			o, c := old.(*corev1.ResourceQuota), cur.(*corev1.ResourceQuota)
			// Its own status writes (and admission's charges) need no
			// recount; a new spec, or a status that lost its hard, does.
			if !quota.Equals(o.Spec.Hard, c.Spec.Hard) || !quota.Equals(c.Spec.Hard, c.Status.Hard) {
				rq.enqueue(cur)
			}
		},
	}}}
	for gr, inf := range informed(c.Informers) {
		indexer := inf.GetIndexer()
		rq.counted[gr] = func(namespace string) ([]runtime.Object, error) {
			items, err := indexer.ByIndex(cache.NamespaceIndex, namespace)
			if err != nil {
				return nil, err
			}
			out := make([]runtime.Object, 0, len(items))
			for _, item := range items {
				out = append(out, item.(runtime.Object))
			}
			return out, nil
		}
		if gr.Resource == "resourcequotas" {
			continue // handled above
		}
		funcs := cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) { rq.replenish(gr, obj) },
		}
		if gr.Resource == "services" {
			// A Service that stops being a NodePort or LoadBalancer one
			// gives its ports back.
			funcs.UpdateFunc = func(old, cur any) {
				if !quota.Equals(quota.Usage(gr, old.(runtime.Object)), quota.Usage(gr, cur.(runtime.Object))) {
					rq.replenish(gr, cur)
				}
			}
		}
		if gr.Resource == "pods" {
			// A pod that finished gives its compute resources back.
			funcs.UpdateFunc = func(old, cur any) {
				if quota.Chargeable(old.(*corev1.Pod)) && !quota.Chargeable(cur.(*corev1.Pod)) {
					rq.replenish(gr, cur)
				}
			}
		}
		handlers = append(handlers, controllerutil.EventHandler{Informer: inf, Funcs: funcs})
	}
	var err error
	rq.synced, err = controllerutil.AddEventHandlers(handlers...)
	if err != nil {
		return nil, fmt.Errorf("resourcequota controller: %w", err)
	}
	return rq, nil
}

// Name returns "resourcequota".
func (rq *Controller) Name() string { return Name }

// Run waits for the caches, then runs workers until ctx is done.
func (rq *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{
		Logger: rq.logger,
		Synced: rq.synced,
		Queues: []controllerutil.Runnable{&controllerutil.Worker[string]{
			Queue: rq.queue, Sync: rq.sync,
			OnError: func(key string, err error, _ bool) {
				rq.logger.Info("sync failed, requeuing", "resourceQuota", key, "err", err)
			},
		}},
	}.Run(ctx, workers)
}

func (rq *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		rq.queue.Add(key)
	}
}

// replenish recounts the quotas of obj's namespace that limit something
// obj's resource consumes.
func (rq *Controller) replenish(gr schema.GroupResource, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	quotas, err := rq.quotaLister.ResourceQuotas(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range quotas {
		if len(quota.MatchingResources(gr, quota.ResourceNames(q.Status.Hard))) > 0 {
			rq.queue.Add(q.Namespace + "/" + q.Name)
		}
	}
}

// sync recounts one quota's usage and writes its status when it changed.
// The key comes back after the resync period.
func (rq *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	q, err := rq.quotaLister.ResourceQuotas(namespace).Get(name)
	if err != nil {
		return nil // deleted
	}
	used, err := rq.usage(ctx, q)
	if err != nil {
		return err
	}
	if !quota.Equals(q.Status.Hard, q.Spec.Hard) || !quota.Equals(q.Status.Used, used) {
		update := q.DeepCopy()
		update.Status.Hard = q.Spec.Hard
		update.Status.Used = used
		if _, err := rq.client.CoreV1().ResourceQuotas(namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return controllerutil.RequeueAfter(rq.speed.Scale(ResyncPeriod))
}

// usage is the quota's usage of each resource of its spec, counted from
// the objects of its namespace. A resource it cannot count keeps the
// usage recorded before.
func (rq *Controller) usage(ctx context.Context, q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	used := corev1.ResourceList{}
	byResource := map[schema.GroupResource]bool{}
	for name := range q.Spec.Hard {
		gr, ok := quota.ResourceFor(name)
		if !ok {
			if prev, ok := q.Status.Used[name]; ok {
				used[name] = prev
			}
			continue
		}
		byResource[gr] = true
	}
	for gr := range byResource {
		objs, err := rq.objects(ctx, gr, q.Namespace)
		if err != nil {
			return nil, err
		}
		sum, err := quota.Sum(q, gr, objs)
		if err != nil {
			return nil, err
		}
		for k, v := range sum {
			used[k] = v
		}
	}
	return used, nil
}

// objects lists a namespace's objects of gr: from the informer when there
// is one, else their metadata from the API server (enough to count them).
func (rq *Controller) objects(ctx context.Context, gr schema.GroupResource, namespace string) ([]runtime.Object, error) {
	if list, ok := rq.counted[gr]; ok {
		return list(namespace)
	}
	if rq.metadata == nil {
		return nil, fmt.Errorf("no metadata client to count %s", gr)
	}
	gvr, err := rq.preferredVersion(gr)
	if err != nil {
		return nil, nil // not served: none exist
	}
	list, err := rq.metadata.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// preferredVersion finds the version the API server serves gr in.
func (rq *Controller) preferredVersion(gr schema.GroupResource) (schema.GroupVersionResource, error) {
	groups, err := rq.client.Discovery().ServerGroups()
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	for _, g := range groups.Groups {
		if g.Name == gr.Group {
			return gr.WithVersion(g.PreferredVersion.Version), nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("group %q is not served", gr.Group)
}
