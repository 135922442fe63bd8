package live

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons"
)

// followKube runs informers on the cluster's nodes and pods. Their initial
// lists arrive as additions, so that a check sees the nodes that were
// Ready before the Feed started.
func (f *Feed) followKube() {
	client, conns, err := f.kubeClient()
	if err != nil {
		// Without an API server there are no nodes or pods to wait for.
		f.logger.Warn("lessons feed: no Kubernetes client; nodes and pods are not followed", "err", err)
		f.readyWithout(sourceNodes, sourcePods)
		return
	}
	// No resync: nothing here is judged on a timer, only on changes.
	factory := informers.NewSharedInformerFactory(client, 0)
	nodes := factory.Core().V1().Nodes().Informer()
	pods := factory.Core().V1().Pods().Informer()
	nodeReg, err := nodes.AddEventHandler(handler(f, nodeObserved))
	if err != nil {
		f.logger.Warn("lessons feed: node handler", "err", err)
		f.readyWithout(sourceNodes, sourcePods)
		return
	}
	podReg, err := pods.AddEventHandler(handler(f, podObserved))
	if err != nil {
		f.logger.Warn("lessons feed: pod handler", "err", err)
		f.readyWithout(sourceNodes, sourcePods)
		return
	}
	factory.Start(f.ctx.Done())
	f.wg.Add(3)
	go func() {
		defer f.wg.Done()
		<-f.ctx.Done()
		factory.Shutdown()
		// The informers have stopped: this Feed is gone, and its
		// connections with it, idle or still being dialled.
		conns.close()
	}()
	for source, reg := range map[string]cache.ResourceEventHandlerRegistration{sourceNodes: nodeReg, sourcePods: podReg} {
		go func() {
			defer f.wg.Done()
			// Synced means the handler has been given the whole initial
			// list; what it sent is ahead of this in the Feed's queue.
			select {
			case <-reg.HasSyncedChecker().Done():
				f.send(item{ready: source})
			case <-f.ctx.Done():
			}
		}()
	}
}

// readyWithout reports sources that will send nothing as ready, so that
// Synced does not wait for them.
func (f *Feed) readyWithout(sources ...string) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for _, s := range sources {
			if !f.send(item{ready: s}) {
				return
			}
		}
	}()
}

// kubeClient returns a client of the cluster's API server on connections
// of its own, which the Feed closes when it closes.
func (f *Feed) kubeClient() (kubernetes.Interface, *conns, error) {
	cfg, conns, err := f.restConfig()
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return client, conns, nil
}

// restConfig returns the admin's client configuration of the cluster, on
// connections of its own, which the caller closes.
func (f *Feed) restConfig() (*rest.Config, *conns, error) {
	if f.info.Kubeconfig == "" {
		return nil, nil, i18n.NewError("lab.err.no-kubeconfig", f.info.Name)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.info.Kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cfg.UserAgent = "klab-lessons"
	// A Dial of its own also gives the client a transport of its own,
	// not one client-go shares with other clients of the same cluster.
	conns := newConns()
	cfg.Dial = conns.dial
	return cfg, conns, nil
}

// handler turns an informer's notifications into observations made by
// observe, which describes an object, or its deletion. An update that
// changes nothing a check reads (a node's heartbeat) is not sent.
func handler[T any](f *Feed, observe func(obj *T, deleted bool) lessons.Observation) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(*T); ok {
				f.send(item{obs: []lessons.Observation{observe(o, false)}})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*T)
			n, ok2 := newObj.(*T)
			if !ok1 || !ok2 {
				return
			}
			next := observe(n, false)
			if sameObservation(observe(o, false), next) {
				return
			}
			f.send(item{obs: []lessons.Observation{next}})
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(*T); ok {
				f.send(item{obs: []lessons.Observation{observe(o, true)}})
			}
		},
	}
}

func nodeObserved(n *corev1.Node, deleted bool) lessons.Observation {
	return lessons.NodeObserved{Node: n.Name, Ready: nodeReady(n), Deleted: deleted}
}

// nodeReady reports the node's Ready condition being True.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podObserved(p *corev1.Pod, deleted bool) lessons.Observation {
	return lessons.PodObserved{
		Namespace:   p.Namespace,
		Name:        p.Name,
		Labels:      maps.Clone(p.Labels),
		Node:        p.Spec.NodeName,
		Phase:       string(p.Status.Phase),
		Terminating: p.DeletionTimestamp != nil,
		Deleted:     deleted,
	}
}

// sameObservation reports whether two observations of one object read the
// same.
func sameObservation(a, b lessons.Observation) bool {
	switch x := a.(type) {
	case lessons.NodeObserved:
		y, ok := b.(lessons.NodeObserved)
		return ok && x == y
	case lessons.PodObserved:
		y, ok := b.(lessons.PodObserved)
		return ok && x.Namespace == y.Namespace && x.Name == y.Name && x.Node == y.Node &&
			x.Phase == y.Phase && x.Terminating == y.Terminating && x.Deleted == y.Deleted &&
			maps.Equal(x.Labels, y.Labels)
	}
	return false
}
