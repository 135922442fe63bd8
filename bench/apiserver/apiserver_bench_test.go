package apiserverbench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// namespace holds every benchmark object.
const namespace = "bench"

// topologies are the cluster shapes every benchmark runs on.
var topologies = []struct {
	name             string
	etcd, apiServers int
}{
	{"etcd=1/apiservers=1", 1, 1},
	{"etcd=1/apiservers=3", 1, 3},
	{"etcd=3/apiservers=1", 3, 1},
	{"etcd=3/apiservers=3", 3, 3},
}

// fixture is a running cluster with one admin client per API server;
// operations go to the servers in turn, as a client behind a load
// balancer would send them.
type fixture struct {
	c       *apiservertest.Cluster
	clients []kubernetes.Interface
	next    int
}

// client returns the client of the next server in turn.
func (f *fixture) client() kubernetes.Interface {
	cs := f.clients[f.next%len(f.clients)]
	f.next++
	return cs
}

// eachTopology runs bench on each topology, each on a fresh cluster that
// lives as long as its sub-benchmark.
func eachTopology(b *testing.B, bench func(ctx context.Context, b *testing.B, f *fixture)) {
	for _, topo := range topologies {
		b.Run(topo.name, func(b *testing.B) {
			c := apiservertest.New(b, apiservertest.Options{EtcdMembers: topo.etcd, APIServers: topo.apiServers})
			f := &fixture{c: c}
			for i := range topo.apiServers {
				cs, err := kubernetes.NewForConfig(c.Config(i, auth.AdminUser))
				if err != nil {
					b.Fatal(err)
				}
				f.clients = append(f.clients, cs)
			}
			ctx := b.Context()
			if _, err := f.clients[0].CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: namespace}}
			if _, err := f.clients[0].CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			bench(ctx, b, f)
		})
	}
}

// latencies collects the duration of each operation of a benchmark.
type latencies []time.Duration

// report adds the median and 99th percentile (nearest rank) to the
// benchmark's results.
func (l latencies) report(b *testing.B) { l.reportAs(b, "") }

// reportAs reports the percentiles with prefix before their units.
func (l latencies) reportAs(b *testing.B, prefix string) {
	if len(l) == 0 {
		return
	}
	sorted := slices.Clone(l)
	slices.Sort(sorted)
	rank := func(p float64) time.Duration {
		i := int(p/100*float64(len(sorted))+0.999999) - 1
		return sorted[max(0, min(i, len(sorted)-1))]
	}
	b.ReportMetric(float64(rank(50))/1e6, prefix+"p50-ms")
	b.ReportMetric(float64(rank(99))/1e6, prefix+"p99-ms")
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": "bench"}},
		Data:       map[string]string{"config.yaml": "replicas: 3\nimage: nginx:1.27\n"},
	}
}

// BenchmarkCreate: one ConfigMap create at a time.
func BenchmarkCreate(b *testing.B) {
	eachTopology(b, func(ctx context.Context, b *testing.B, f *fixture) {
		var lat latencies
		i := 0
		for b.Loop() {
			cs := f.client()
			start := time.Now()
			_, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, configMap("cm-"+strconv.Itoa(i)), metav1.CreateOptions{})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
		lat.report(b)
	})
}

// deploymentApply is the configuration BenchmarkApply applies, with its
// replica count left to fill in.
const deploymentApply = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"applied","namespace":"` + namespace + `"},
"spec":{"replicas":%d,"selector":{"matchLabels":{"app":"applied"}},"template":{"metadata":{"labels":{"app":"applied"}},
"spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80}]}]}}}}`

func deployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27",
					Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}},
			},
		},
	}
}

// BenchmarkCreateDeployment: one Deployment create at a time, an object
// with a pod template, its defaults and so a larger managedFields entry
// than a ConfigMap's.
func BenchmarkCreateDeployment(b *testing.B) {
	eachTopology(b, func(ctx context.Context, b *testing.B, f *fixture) {
		var lat latencies
		i := 0
		for b.Loop() {
			cs := f.client()
			start := time.Now()
			_, err := cs.AppsV1().Deployments(namespace).Create(ctx, deployment("web-"+strconv.Itoa(i)), metav1.CreateOptions{})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
		lat.report(b)
	})
}

// BenchmarkApply: server-side apply of one Deployment by one manager, each
// apply changing its replica count so that every one is a write (the
// merge by ownership, admission, validation, the etcd transaction).
func BenchmarkApply(b *testing.B) {
	eachTopology(b, func(ctx context.Context, b *testing.B, f *fixture) {
		apply := func(cs kubernetes.Interface, replicas int) error {
			_, err := cs.AppsV1().Deployments(namespace).Patch(ctx, "applied", types.ApplyPatchType,
				[]byte(fmt.Sprintf(deploymentApply, replicas)), metav1.PatchOptions{FieldManager: "bench"})
			return err
		}
		if err := apply(f.clients[0], 1); err != nil { // creates it
			b.Fatal(err)
		}
		var lat latencies
		i := 0
		for b.Loop() {
			cs := f.client()
			start := time.Now()
			err := apply(cs, 2+i%2)
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
		lat.report(b)
	})
}

// BenchmarkGet: one ConfigMap read at a time (a linearizable etcd read).
func BenchmarkGet(b *testing.B) {
	eachTopology(b, func(ctx context.Context, b *testing.B, f *fixture) {
		if _, err := f.clients[0].CoreV1().ConfigMaps(namespace).Create(ctx, configMap("read-me"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		var lat latencies
		for b.Loop() {
			cs := f.client()
			start := time.Now()
			_, err := cs.CoreV1().ConfigMaps(namespace).Get(ctx, "read-me", metav1.GetOptions{})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
		}
		lat.report(b)
	})
}

// BenchmarkList1000 and BenchmarkList10000: list every pod of a namespace
// holding that many (about 1.2 KiB each as stored).
func BenchmarkList1000(b *testing.B)  { benchmarkList(b, 1000) }
func BenchmarkList10000(b *testing.B) { benchmarkList(b, 10000) }

func benchmarkList(b *testing.B, pods int) {
	eachTopology(b, func(ctx context.Context, b *testing.B, f *fixture) {
		storePods(ctx, b, f, pods)
		var lat latencies
		for b.Loop() {
			cs := f.client()
			start := time.Now()
			list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			if len(list.Items) != pods {
				b.Fatalf("listed %d pods; want %d", len(list.Items), pods)
			}
		}
		lat.report(b)
	})
}

// storePods builds the data set once: one pod goes through the API server
// (admission, defaults), and n copies of what it stored, renamed, are
// written straight to etcd in batches, which takes a second instead of
// the minutes n creates would.
func storePods(ctx context.Context, b *testing.B, f *fixture, n int) {
	b.Helper()
	template := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "template", Namespace: namespace, Labels: map[string]string{"app": "web", "pod-template-hash": "7d9c8b5f4"}},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Containers: []corev1.Container{{
				Name: "web", Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				Env:   []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "LOG_LEVEL", Value: "info"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
			}},
		},
	}
	if _, err := f.clients[0].CoreV1().Pods(namespace).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	etcd := f.c.Etcd.Client()
	key := "/registry/pods/" + namespace + "/"
	resp, err := etcd.Get(ctx, key+"template")
	if err != nil || len(resp.Kvs) != 1 {
		b.Fatalf("read the stored template pod: %v", err)
	}
	var stored corev1.Pod
	if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil {
		b.Fatal(err)
	}
	const batch = 64
	var ops []clientv3.Op
	flush := func() {
		if _, err := etcd.Txn(ctx).Then(ops...).Commit(); err != nil {
			b.Fatal(err)
		}
		ops = ops[:0]
	}
	for i := 1; i < n; i++ { // the template is pod number n
		stored.Name = fmt.Sprintf("web-%05d", i)
		stored.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		data, err := json.Marshal(&stored)
		if err != nil {
			b.Fatal(err)
		}
		ops = append(ops, clientv3.OpPut(key+stored.Name, string(data)))
		if len(ops) == batch {
			flush()
		}
	}
	if len(ops) > 0 {
		flush()
	}
}

// BenchmarkWatchDelivery: the time from a create returning to its client
// until a watch (on the first API server) delivers the ADDED event (p50-ms,
// p99-ms; 0 when the event arrived first, which early-% counts), and from
// sending the create to the event (sent-p50-ms, sent-p99-ms).
func BenchmarkWatchDelivery(b *testing.B) {
	eachTopology(b, func(ctx context.Context, b *testing.B, f *fixture) {
		w, err := f.clients[0].CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		type arrival struct {
			name string
			at   time.Time
		}
		arrivals := make(chan arrival, 1024)
		go func() {
			defer close(arrivals)
			for ev := range w.ResultChan() {
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Added {
					arrivals <- arrival{cm.Name, time.Now()}
				}
			}
		}()
		// afterReturn: from the create's response to the event (0 when the
		// event came first); afterSend: from sending the create.
		var afterReturn, afterSend latencies
		early := 0
		i := 0
		for b.Loop() {
			name := "w-" + strconv.Itoa(i)
			i++
			sent := time.Now()
			if _, err := f.client().CoreV1().ConfigMaps(namespace).Create(ctx, configMap(name), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			returned := time.Now()
			for {
				a, ok := <-arrivals
				if !ok {
					b.Fatal("watch closed")
				}
				if a.name == name {
					if a.at.Before(returned) {
						early++
					}
					afterReturn = append(afterReturn, max(0, a.at.Sub(returned)))
					afterSend = append(afterSend, a.at.Sub(sent))
					break
				}
			}
		}
		afterReturn.report(b)
		afterSend.reportAs(b, "sent-")
		b.ReportMetric(100*float64(early)/float64(max(1, i)), "early-%")
	})
}
