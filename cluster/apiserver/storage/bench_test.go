package storage

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// BenchmarkWatchFanout is the control loop's watch load: one kubelet per
// node watching the pods bound to it (fieldSelector spec.nodeName=<node>),
// started as client-go's informers start (the watch-list protocol), then
// every pod updated once per iteration. It reports how long the kubelets
// took to get their initial pods (startup-ms) and how many pod events per
// second reached them (events/s), served by the watch cache or by one etcd
// watch per kubelet (the store before the cache).
//
//	go test ./cluster/apiserver/storage -run '^$' -bench WatchFanout -benchtime 1x
func BenchmarkWatchFanout(b *testing.B) {
	for _, bc := range []struct {
		mode           string
		kubelets, pods int
	}{
		{"cache", 100, 1000},
		{"etcd", 100, 1000},
		{"cache", 1000, 1000},
		{"etcd", 1000, 1000},
		{"cache", 1000, 10000},
	} {
		b.Run(fmt.Sprintf("%s/kubelets=%d/pods=%d", bc.mode, bc.kubelets, bc.pods), func(b *testing.B) {
			benchmarkWatchFanout(b, bc.mode == "etcd", bc.kubelets, bc.pods)
		})
	}
}

func benchmarkWatchFanout(b *testing.B, perWatcherEtcd bool, kubelets, pods int) {
	cluster := etcdtest.New(b, 1, nil)
	cli := cluster.Client()
	s := NewWithOptions(cli, Options{DisableWatchCache: perWatcherEtcd})
	b.Cleanup(s.Close)
	res := lookup(b, "pods")
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)

	podsOf := make([]*corev1.Pod, pods)
	for i := range podsOf {
		podsOf[i] = benchPod(i, fmt.Sprintf("node-%d", i%kubelets))
	}
	putPods(b, cli, res, podsOf, 0)

	// The kubelets start: watch-list, then follow.
	var delivered, target atomic.Int64
	var started sync.WaitGroup
	done := make(chan struct{}, 1)
	startedAt := time.Now()
	for k := range kubelets {
		pred := predicate(b, res, "", fmt.Sprintf("spec.nodeName=node-%d", k))
		w, err := s.Watch(ctx, res, "", WatchOptions{Predicate: pred, SendInitialEvents: boolPtr(true), AllowBookmarks: true})
		if err != nil {
			b.Fatal(err)
		}
		started.Add(1)
		go func() {
			defer w.Stop()
			synced := false
			for ev := range w.ResultChan() {
				switch {
				case ev.Type == watch.Bookmark && !synced:
					synced = true
					started.Done()
				case ev.Type == watch.Modified:
					if delivered.Add(1) == target.Load() {
						done <- struct{}{}
					}
				case ev.Type == watch.Error:
					b.Errorf("watch error: %v", ev.Object)
				}
			}
			if ctx.Err() == nil {
				b.Errorf("a kubelet's watch ended (closed as too slow?)")
			}
		}()
	}
	started.Wait()
	startup := time.Since(startedAt)

	b.ResetTimer()
	var writing time.Duration
	for i := range b.N {
		target.Store(int64(pods * (i + 1)))
		writeStart := time.Now()
		putPods(b, cli, res, podsOf, i+1)
		writing += time.Since(writeStart)
		select {
		case <-done:
		case <-time.After(10 * time.Minute):
			b.Fatalf("delivered %d of %d events", delivered.Load(), target.Load())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(startup.Milliseconds()), "startup-ms")
	// writes/s is what etcd took the updates at: the most events/s can be.
	b.ReportMetric(float64(pods*b.N)/writing.Seconds(), "writes/s")
	b.ReportMetric(float64(delivered.Load())/b.Elapsed().Seconds(), "events/s")
}

// putPods writes every pod straight to etcd (as the API server stores
// them, without its read-modify-write), sixteen writers at a time; step
// changes an annotation so each round is a real update.
func putPods(b *testing.B, cli *clientv3.Client, res *registry.Resource, podsOf []*corev1.Pod, step int) {
	b.Helper()
	work := make(chan *corev1.Pod)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				p.Annotations = map[string]string{"klab.dev/step": fmt.Sprint(step)}
				data, err := encode(p, res.GroupVersion())
				if err == nil {
					_, err = cli.Put(context.Background(), res.Key(p.Namespace, p.Name), string(data))
				}
				if err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for _, p := range podsOf {
		work <- p
	}
	close(work)
	wg.Wait()
}

// benchPod is a pod of the size a Deployment makes: labels, an owner, two
// containers with resources, a status with conditions.
func benchPod(i int, node string) *corev1.Pod {
	p := testPod("default", fmt.Sprintf("web-7c9f8b-%05d", i), node, map[string]string{"app": "web", "pod-template-hash": "7c9f8b"})
	p.Spec.Containers = []corev1.Container{
		{Name: "app", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}},
		{Name: "sidecar", Image: "busybox:1.36", Command: []string{"sh", "-c", "sleep infinity"}},
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = fmt.Sprintf("10.244.%d.%d", i/250, i%250+2)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	return p
}

// BenchmarkDispatch is the dispatcher alone, in memory: one event of a
// pod on one of 1000 nodes, with a kubelet watching each node and a few
// watchers of every pod (scheduler, controllers), per operation.
func BenchmarkDispatch(b *testing.B) {
	const kubelets, everything = 1000, 4
	m := newMemCacher(b, roomyCapacity)
	for k := range kubelets {
		w := m.watch(b, scenarioWatch{fields: fmt.Sprintf("spec.nodeName=node-%d", k)}, WatchOptions{})
		go drain(w)
	}
	for range everything {
		go drain(m.watch(b, scenarioWatch{}, WatchOptions{}))
	}
	podsOf := make([]*storeElement, 1000)
	for i := range podsOf {
		podsOf[i] = podElement(m.res, benchPod(i, fmt.Sprintf("node-%d", i%kubelets)), 1)
	}
	b.ResetTimer()
	for i := range b.N {
		e := podsOf[i%len(podsOf)]
		m.rev++
		m.incoming <- m.wc.apply(e.key, m.rev, &storeElement{key: e.key, obj: e.obj, labels: e.labels, fields: e.fields, index: e.index})
	}
}

func drain(w watch.Interface) {
	for range w.ResultChan() {
	}
}
