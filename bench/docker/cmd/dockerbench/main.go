// Command dockerbench measures klab's Docker runtime on this machine's
// engine and prints Markdown tables: for each cluster shape, the time from
// `klab up` to every node Ready and a first pod Running (cold, with the
// image built first; and warm), the memory of the cluster's containers as
// docker stats counts it, the image's size, and the time `klab down` takes.
//
//	go run ./bench/docker/cmd/dockerbench [-shapes 1+1,3+3,3+10]
//
// It needs a running engine and a static linux klab binary ($KLAB_BINARY,
// else one built now). Clusters are named "kbench-<shape>-<random>" and
// removed at the end, whatever happens.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/bench/internal/benchcmd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime/docker"
)

type shape struct{ masters, workers int }

func (s shape) String() string { return fmt.Sprintf("%d+%d", s.masters, s.workers) }

type result struct {
	shape     shape
	cold      bool
	ready     time.Duration
	firstPod  time.Duration
	memory    int64
	down      time.Duration
	imageSize int64
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "dockerbench:", err)
		os.Exit(1)
	}
}

func run() error {
	shapesFlag := flag.String("shapes", "1+1,3+3,3+10", "cluster shapes, masters+workers, comma-separated")
	speed := flag.Float64("speed", 1, "the clusters' speed factor")
	flag.Parse()
	var shapes []shape
	for _, s := range strings.Split(*shapesFlag, ",") {
		m, w, ok := strings.Cut(strings.TrimSpace(s), "+")
		mi, err1 := strconv.Atoi(m)
		wi, err2 := strconv.Atoi(w)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("-shapes: %q is not masters+workers", s)
		}
		shapes = append(shapes, shape{mi, wi})
	}
	ctx := context.Background()
	if err := docker.Ping(ctx); err != nil {
		return fmt.Errorf("no Docker engine answers: %w", err)
	}
	bin, err := benchcmd.KlabBinary()
	if err != nil {
		return err
	}
	home, err := os.MkdirTemp("", "kbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	os.Setenv("KLAB_HOME", home)

	var results []result
	for _, s := range shapes {
		for _, cold := range []bool{true, false} {
			r, err := measure(ctx, bin, s, cold, *speed)
			if err != nil {
				return fmt.Errorf("%s (cold %v): %w", s, cold, err)
			}
			results = append(results, r)
			fmt.Fprintf(os.Stderr, "%s cold=%v: Ready %v, first pod %v, memory %.0f MiB, down %v\n",
				s, cold, r.ready.Round(time.Millisecond), r.firstPod.Round(time.Millisecond), mib(r.memory), r.down.Round(time.Millisecond))
		}
	}
	t := benchcmd.Table{Header: []string{"shape", "start", "up → nodes Ready", "up → first pod Running", "containers' memory", "klab down"}}
	for _, r := range results {
		start := "warm"
		if r.cold {
			start = "cold (image built)"
		}
		t.Row(r.shape.String(), start, benchcmd.Seconds(r.ready, 1), benchcmd.Seconds(r.firstPod, 1), fmt.Sprintf("%.0f MiB", mib(r.memory)), benchcmd.Seconds(r.down, 1))
	}
	t.Print(os.Stdout)
	if len(results) > 0 {
		fmt.Printf("\nImage klab/node: %.1f MiB\n", mib(results[0].imageSize))
	}
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func measure(ctx context.Context, bin string, s shape, cold bool, speed float64) (r result, err error) {
	r.shape, r.cold = s, cold
	if cold {
		if err := docker.RemoveImages(ctx); err != nil {
			return r, err
		}
	}
	b := make([]byte, 3)
	rand.Read(b)
	name := "kbench-" + strings.ReplaceAll(s.String(), "+", "x") + "-" + hex.EncodeToString(b)
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		docker.RemoveCluster(cctx, name, nil)
	}()

	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := lab.Up(ctx, lab.Spec{Name: name, Masters: s.masters, Workers: s.workers, Speed: speed, Runtime: lab.RuntimeDocker, NoFsync: true}, lab.Options{Binary: bin})
	if err != nil {
		return r, err
	}
	r.ready = time.Since(start)
	if err := firstPod(ctx, c.Info().Kubeconfig, s.workers == 0); err != nil {
		return r, err
	}
	r.firstPod = time.Since(start)
	rt, ok := c.Runtime().(*docker.Runtime)
	if !ok {
		return r, fmt.Errorf("cluster runs in %s, not docker", c.Runtime().Name())
	}
	if r.memory, err = rt.Stats(ctx); err != nil {
		return r, err
	}
	img, err := docker.EnsureImage(ctx, docker.ImageOptions{Binary: bin})
	if err != nil {
		return r, err
	}
	r.imageSize = img.Size
	start = time.Now()
	if _, err := lab.Down(ctx, name, false, nil); err != nil {
		return r, err
	}
	r.down = time.Since(start)
	return r, nil
}

// firstPod creates one pod of the demo workload and waits, watching, until
// it runs.
func firstPod(ctx context.Context, kubeconfig string, onMaster bool) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "first"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "klab/app:latest", ImagePullPolicy: corev1.PullIfNotPresent,
		}}},
	}
	if onMaster {
		pod.Spec.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	created, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=first", ResourceVersion: created.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return fmt.Errorf("watch: %v", ev.Object)
		}
		if p, ok := ev.Object.(*corev1.Pod); ok && p.Status.Phase == corev1.PodRunning {
			return nil
		}
	}
	return fmt.Errorf("pod first: watch ended: %w", ctx.Err())
}
