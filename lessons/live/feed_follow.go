package live

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/lessons"
)

// Follow makes the Feed follow what checks with these needs read, on top
// of the members, nodes and pods it always follows: the etcd keys (as
// SetKeys), the objects of each resource named, the cluster's Events,
// every API server's and every etcd member's requests, every
// kube-proxy's mode and the traffic runs. What was followed for earlier needs keeps being followed (a
// reader keeps its last word of an object, which must stay current),
// except keys, which are exactly those given.
//
// Events, requests and traffic runs are reported from when Follow first
// asks for them: none from before. Call Follow when a step begins, or,
// better, once for every step a cluster serves (Needs.Merge), so that
// nothing is missed while a source connects; Refresh then waits until
// the objects' initial lists are in.
func (f *Feed) Follow(n lessons.Needs) {
	f.keys.set(n.Keys)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		return
	}
	for _, r := range n.Objects {
		f.kube.watchObjects(f, r)
	}
	if n.Events {
		f.kube.watchEvents(f)
	}
	if n.Requests && !f.following[followRequests] {
		f.following[followRequests] = true
		f.followRequests()
	}
	if n.EtcdRequests && !f.following[followEtcdRequests] {
		f.following[followEtcdRequests] = true
		f.followEtcdRequests()
	}
	if n.Proxies && !f.following[followProxies] {
		f.following[followProxies] = true
		f.followProxies()
	}
	if n.Traffic && !f.following[followTraffic] {
		f.following[followTraffic] = true
		f.followTraffic()
	}
}

// The sources Follow starts once.
const (
	followRequests     = "requests"
	followEtcdRequests = "etcd-requests"
	followProxies      = "proxies"
	followTraffic      = "traffic"
)

// kubeWatches are the watches Follow starts on the API server: a
// dynamic informer per resource, and one on Events. They share one
// client and its connections, closed with the Feed.
type kubeWatches struct {
	mu      sync.Mutex
	started bool
	err     error
	conns   *conns
	cfg     *rest.Config
	dynamic dynamicinformer.DynamicSharedInformerFactory
	typed   informers.SharedInformerFactory
	// synced are the registrations of the object handlers, whose initial
	// lists Refresh waits for.
	synced  []cache.ResourceEventHandlerRegistration
	objects []schema.GroupVersionResource
	events  bool
}

// start makes the clients and factories, once; false if there is no API
// server to watch (which has been logged).
func (k *kubeWatches) start(f *Feed) bool {
	if k.started {
		return k.err == nil
	}
	k.started = true
	cfg, conns, err := f.restConfig()
	if err != nil {
		k.err = err
		f.logger.Warn("lessons feed: no Kubernetes client; objects and Events are not followed", "err", err)
		return false
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		k.err = err
		return false
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		k.err = err
		return false
	}
	k.cfg, k.conns = cfg, conns
	k.dynamic = dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
	k.typed = informers.NewSharedInformerFactory(cs, 0)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		<-f.ctx.Done()
		k.mu.Lock()
		defer k.mu.Unlock()
		k.dynamic.Shutdown()
		k.typed.Shutdown()
		conns.close()
	}()
	return true
}

// watchObjects starts watching a resource in every namespace, once. Its
// initial list arrives as objects observed.
func (k *kubeWatches) watchObjects(f *Feed, r schema.GroupVersionResource) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if slices.Contains(k.objects, r) || !k.start(f) {
		return
	}
	k.objects = append(k.objects, r)
	inf := k.dynamic.ForResource(r).Informer()
	reg, err := inf.AddEventHandler(objectHandler(f, r.GroupResource()))
	if err != nil {
		f.logger.Warn("lessons feed: object handler", "resource", r.String(), "err", err)
		return
	}
	k.synced = append(k.synced, reg)
	k.dynamic.Start(f.ctx.Done())
}

// watchEvents starts watching the cluster's core/v1 Events, once. Those
// of the initial list are history and are not reported; an Event
// recorded again (its count went up) is reported again.
func (k *kubeWatches) watchEvents(f *Feed) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.events || !k.start(f) {
		return
	}
	k.events = true
	inf := k.typed.Core().V1().Events().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if e, ok := obj.(*corev1.Event); ok && !initial {
				f.send(item{obs: []lessons.Observation{eventObserved(e)}})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Event)
			n, ok2 := newObj.(*corev1.Event)
			if ok1 && ok2 && eventCount(n) != eventCount(o) {
				f.send(item{obs: []lessons.Observation{eventObserved(n)}})
			}
		},
	})
	if err != nil {
		f.logger.Warn("lessons feed: event handler", "err", err)
		return
	}
	k.typed.Start(f.ctx.Done())
}

// waitSynced waits until every object watch has handed on its initial
// list, or ctx ends.
func (k *kubeWatches) waitSynced(ctx context.Context) {
	k.mu.Lock()
	regs := slices.Clone(k.synced)
	k.mu.Unlock()
	for _, reg := range regs {
		select {
		case <-reg.HasSyncedChecker().Done():
		case <-ctx.Done():
			return
		}
	}
}

// eventCount is how many times an Event was recorded: its count, or its
// series' count for an events.k8s.io Event read through core/v1.
func eventCount(e *corev1.Event) int32 {
	if e.Series != nil {
		return max(e.Series.Count, e.Count)
	}
	return e.Count
}

func eventObserved(e *corev1.Event) lessons.EventObserved {
	return lessons.EventObserved{
		Namespace: e.Namespace,
		Reason:    e.Reason,
		Type:      e.Type,
		Kind:      e.InvolvedObject.Kind,
		Name:      e.InvolvedObject.Name,
		Message:   e.Message,
	}
}

// objectHandler reports a resource's objects as the informer sees them.
// An update that changes nothing (a resync) is not sent.
func objectHandler(f *Feed, r schema.GroupResource) cache.ResourceEventHandlerFuncs {
	observe := func(u *unstructured.Unstructured, deleted bool) lessons.ObjectObserved {
		o := lessons.ObjectObserved{Resource: r, Namespace: u.GetNamespace(), Name: u.GetName(), Deleted: deleted}
		if !deleted {
			// The informer's cache keeps its object; the evaluator keeps
			// this copy.
			o.Object = u.DeepCopy().Object
		}
		return o
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				f.send(item{obs: []lessons.Observation{observe(u, false)}})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*unstructured.Unstructured)
			n, ok2 := newObj.(*unstructured.Unstructured)
			if !ok1 || !ok2 || o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			f.send(item{obs: []lessons.Observation{observe(n, false)}})
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				f.send(item{obs: []lessons.Observation{observe(u, true)}})
			}
		},
	}
}
