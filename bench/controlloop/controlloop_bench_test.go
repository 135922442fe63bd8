package controlloopbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/kubelet"
	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
	"github.com/klab-dev/klab/cluster/scheduler"
	"github.com/klab-dev/klab/cluster/scheduler/plugins"
)

// image is on every hollow node.
const image = "klab/app:latest"

// shapes are the cluster sizes and pod counts the issue asks for.
var shapes = []struct{ nodes, pods int }{
	{100, 1000},
	{100, 10000},
	{1000, 1000},
	{1000, 10000},
}

func BenchmarkDensity(b *testing.B) {
	for _, s := range shapes {
		b.Run(fmt.Sprintf("nodes=%d/pods=%d", s.nodes, s.pods), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				runDensity(b, s.nodes, s.pods)
			}
		})
	}
}

// runDensity starts a cluster of n hollow nodes and a scheduler, creates
// pods, and reports throughput and startup latency.
func runDensity(b *testing.B, nodes, pods int) {
	b.Helper()
	c := apiservertest.New(b, apiservertest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	tlsCfg, err := c.PKI.ServerTLSConfig()
	if err != nil {
		b.Fatal(err)
	}
	// Hollow kubelets share the admin identity: the test PKI has one node
	// identity, and the identity does not change the work they do.
	admin := c.Config(0, auth.AdminUser)
	var kubelets []*kubelet.Kubelet
	var mu sync.Mutex
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := 0; i < nodes; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cfg := *admin
			cfg.QPS, cfg.Burst = 50, 100
			k, err := kubelet.New(kubelet.Config{
				NodeName: fmt.Sprintf("node-%04d", i), REST: &cfg,
				Runtime: critest.New(critest.Options{Images: []string{image}}),
				Capacity: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("64Gi"),
					corev1.ResourcePods: resource.MustParse("250"),
				},
				NodeIP: "127.0.0.1", PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256),
				Listen: "127.0.0.1:0", TLS: tlsCfg.Clone(), CAPool: c.PKI.CertPool(), Logger: logger,
			})
			if err == nil {
				err = k.Start(ctx)
			}
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			kubelets = append(kubelets, k)
			mu.Unlock()
		}()
	}
	wg.Wait()
	defer func() {
		for _, k := range kubelets {
			k.Kill()
		}
	}()
	if b.Failed() {
		b.FailNow()
	}
	client := kubernetes.NewForConfigOrDie(admin)
	waitNodesReady(b, client, nodes)
	b.Logf("%d nodes Ready in %v", nodes, time.Since(start).Round(time.Millisecond))

	startScheduler := func() *scheduler.Scheduler {
		// One scheduler, without leader election: the second phase starts
		// a fresh one at once instead of waiting out the first one's
		// Lease.
		s, err := scheduler.New(scheduler.Config{REST: c.Config(0, auth.KubeScheduler), Identity: "bench", Profile: plugins.Default(),
			DebugListen: "127.0.0.1:0", Logger: logger, DisableLeaderElection: true})
		if err == nil {
			err = s.Start(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
		return s
	}

	// Follow every pod through an informer, which resumes its watch if
	// the API server ends it (a watcher that falls behind is closed, as
	// upstream's watch cache does).
	var obsMu sync.Mutex
	bound := make(map[string]time.Time, 2*pods)
	running := make(map[string]time.Time, 2*pods)
	waiters := map[string]chan struct{}{}
	observe := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		obsMu.Lock()
		defer obsMu.Unlock()
		if _, seen := bound[p.Name]; !seen && p.Spec.NodeName != "" {
			bound[p.Name] = now
			if ch, ok := waiters["bound/"+p.Name]; ok {
				close(ch)
				delete(waiters, "bound/"+p.Name)
			}
		}
		if _, seen := running[p.Name]; !seen && p.Status.Phase == corev1.PodRunning {
			running[p.Name] = now
			if ch, ok := waiters["running/"+p.Name]; ok {
				close(ch)
				delete(waiters, "running/"+p.Name)
			}
		}
	}
	// waitFor returns a channel closed once the named pod is bound or
	// running ("bound/pod-00001").
	waitFor := func(key string) <-chan struct{} {
		obsMu.Lock()
		defer obsMu.Unlock()
		ch := make(chan struct{})
		kind, name, _ := strings.Cut(key, "/")
		if _, ok := map[string]map[string]time.Time{"bound": bound, "running": running}[kind][name]; ok {
			close(ch)
		} else {
			waiters[key] = ch
		}
		return ch
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("default"))
	podInformer := factory.Core().V1().Pods().Informer()
	podInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	createClient := kubernetes.NewForConfigOrDie(withQPS(admin, 5000))
	createPods := func(prefix string, n int) []time.Time {
		created := make([]time.Time, n)
		var cwg sync.WaitGroup
		next := make(chan int)
		for g := 0; g < 32; g++ {
			cwg.Add(1)
			go func() {
				defer cwg.Done()
				for i := range next {
					pod := &corev1.Pod{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", prefix, i), Labels: map[string]string{"app": prefix}},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image,
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
								corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("10Mi")}}}}},
					}
					created[i] = time.Now()
					if _, err := createClient.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for i := 0; i < n; i++ {
			next <- i
		}
		close(next)
		cwg.Wait()
		return created
	}
	waitAll := func(kind, prefix string, n int) {
		deadline := time.After(10 * time.Minute)
		for i := 0; i < n; i++ {
			select {
			case <-waitFor(fmt.Sprintf("%s/%s-%05d", kind, prefix, i)):
			case <-deadline:
				b.Fatalf("%s-%05d not %s after 10 minutes", prefix, i, kind)
			}
		}
	}

	// Phase 1, pod startup latency: pods created in a burst while the
	// scheduler runs, each timed from its creation request to the moment
	// the informer sees it Running (the SLO's definition).
	s := startScheduler()
	b.ResetTimer()
	created := createPods("startup", pods)
	waitAll("running", "startup", pods)
	obsMu.Lock()
	latencies := make([]time.Duration, 0, pods)
	for i := 0; i < pods; i++ {
		latencies = append(latencies, running[fmt.Sprintf("startup-%05d", i)].Sub(created[i]))
	}
	obsMu.Unlock()
	slices.Sort(latencies)
	p50, p99 := latencies[len(latencies)/2], latencies[len(latencies)*99/100]

	// Phase 2, scheduling throughput: with the scheduler stopped, pods
	// pile up Pending; a new scheduler then binds them all. Throughput is
	// the pods bound over the time from the first binding to the last, as
	// scheduler_perf counts it.
	s.Kill()
	createPods("throughput", pods)
	s = startScheduler()
	defer s.Kill()
	waitAll("bound", "throughput", pods)
	b.StopTimer()
	obsMu.Lock()
	var first, last time.Time
	for i := 0; i < pods; i++ {
		t := bound[fmt.Sprintf("throughput-%05d", i)]
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	obsMu.Unlock()
	throughput := float64(pods-1) / last.Sub(first).Seconds()
	b.ReportMetric(throughput, "pods/s")
	b.ReportMetric(float64(p50.Microseconds())/1000, "startup-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "startup-p99-ms")
	b.Logf("nodes=%d pods=%d: scheduling %.0f pods/s; startup p50 %v p99 %v", nodes, pods, throughput, p50.Round(time.Millisecond), p99.Round(time.Millisecond))
}

func withQPS(cfg *rest.Config, qps float32) *rest.Config {
	out := *cfg
	out.QPS, out.Burst = qps, int(qps)
	return &out
}

func waitNodesReady(b *testing.B, client kubernetes.Interface, want int) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err == nil {
			ready := 0
			for _, n := range list.Items {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if ready == want {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("nodes not Ready after 5 minutes")
}
