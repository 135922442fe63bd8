// Command resetbench measures a reset to a lesson step (klab reset --step,
// the workspace's R key) on a 3+3 cluster of each runtime and prints a
// Markdown table: the time lab.ResetToStep takes from the call to a new
// etcd cluster with a leader and every component started again — every
// member stopped, a data dir restored from the step's snapshot for each
// (inside its volume on Docker), the members started as a new cluster, the
// API servers, controllers and kubelets started — and, apart, the time
// until the API server serves the restored objects and the step's pods
// run again.
//
//	go run ./bench/reset/cmd/resetbench [-runtimes local,docker] [-runs 3]
//
// The Docker runtime needs a running engine and a static linux klab binary
// ($KLAB_BINARY, else one built now); without an engine its row is
// skipped. Clusters are named "kbench-reset-<runtime>-<random>" and removed
// at the end, whatever happens.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/bench/internal/benchcmd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime/docker"
)

const lesson = "resetbench"

// cpuProfile, when set, names the CPU profiles of the resets: the local
// runtime's components run in this process, so its profile shows where a
// reset spends its CPU.
var cpuProfile string

type result struct {
	runtime string
	reset   []time.Duration // lab.ResetToStep
	back    []time.Duration // the call to the step's objects served and its pods running
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "resetbench:", err)
		os.Exit(1)
	}
}

func run() error {
	runtimes := flag.String("runtimes", "local,docker", "runtimes to measure, comma-separated")
	runs := flag.Int("runs", 3, "resets per runtime")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write CPU profiles of the resets (the ResetToStep calls only) to <file>.<runtime>.<run>")
	flag.Parse()
	home, err := os.MkdirTemp("", "kbench-reset")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	os.Setenv("KLAB_HOME", home)

	var results []result
	for _, rt := range strings.Split(*runtimes, ",") {
		rt = strings.TrimSpace(rt)
		if rt == lab.RuntimeDocker {
			if err := docker.Ping(context.Background()); err != nil {
				fmt.Fprintf(os.Stderr, "no Docker engine answers (%v): the Docker runtime's row is skipped\n", err)
				continue
			}
		}
		r, err := measure(rt, *runs)
		if err != nil {
			return fmt.Errorf("%s: %w", rt, err)
		}
		results = append(results, r)
	}
	t := benchcmd.Table{Header: []string{"runtime", "shape", "resets", "reset (median)", "reset (min–max)", "reset → step's objects served and pods Running (median)"}}
	for _, r := range results {
		t.Row(r.runtime, "3+3", fmt.Sprint(len(r.reset)), benchcmd.Seconds(benchcmd.Median(r.reset), 2),
			fmt.Sprintf("%.2f–%.2f s", slices.Min(r.reset).Seconds(), slices.Max(r.reset).Seconds()), benchcmd.Seconds(benchcmd.Median(r.back), 2))
	}
	t.Print(os.Stdout)
	return nil
}

func measure(rt string, runs int) (r result, err error) {
	r.runtime = rt
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	b := make([]byte, 3)
	rand.Read(b)
	name := "kbench-reset-" + rt + "-" + hex.EncodeToString(b)
	opts := lab.Options{}
	if rt == lab.RuntimeDocker {
		if opts.Binary, err = benchcmd.KlabBinary(); err != nil {
			return r, err
		}
		defer func() {
			cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer ccancel()
			docker.RemoveCluster(cctx, name, nil)
		}()
	}
	c, err := lab.Up(ctx, lab.Spec{Name: name, Masters: 3, Workers: 3, Speed: 10, Runtime: rt, NoFsync: true}, opts)
	if err != nil {
		return r, fmt.Errorf("up: %w", err)
	}
	defer c.Close(context.Background(), nil)
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		return r, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return r, err
	}
	deploys := client.AppsV1().Deployments("default")

	// The step starts with Deployment "step" running; what comes after
	// it ("later") is what each reset undoes.
	if _, err := deploys.Create(ctx, deployment("step", 3), metav1.CreateOptions{}); err != nil {
		return r, err
	}
	if err := waitRunning(ctx, client, "app=step", 3); err != nil {
		return r, err
	}
	if _, err := lab.SaveStepSnapshot(ctx, name, lesson, "two"); err != nil {
		return r, err
	}
	for i := range runs {
		if _, err := deploys.Create(ctx, deployment("later", 2), metav1.CreateOptions{}); err != nil {
			return r, fmt.Errorf("run %d: %w", i+1, err)
		}
		if err := waitRunning(ctx, client, "app=later", 2); err != nil {
			return r, fmt.Errorf("run %d: %w", i+1, err)
		}
		stopProfile, err := startProfile(rt)
		if err != nil {
			return r, err
		}
		start := time.Now()
		res, err := lab.ResetToStep(ctx, name, lesson, "two", nil)
		stopProfile()
		if err != nil {
			return r, fmt.Errorf("run %d: reset: %w", i+1, err)
		}
		r.reset = append(r.reset, res.Elapsed)
		for {
			_, err := deploys.Get(ctx, "later", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				return r, fmt.Errorf("run %d: later still served after the reset", i+1)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := waitRunning(ctx, client, "app=step", 3); err != nil {
			return r, fmt.Errorf("run %d: %w", i+1, err)
		}
		r.back = append(r.back, time.Since(start))
		var stages []string
		for _, st := range res.Stages {
			stages = append(stages, fmt.Sprintf("%s %v", st.Name, st.Elapsed.Round(time.Millisecond)))
		}
		fmt.Fprintf(os.Stderr, "%s run %d: reset %v (%s; cluster %s, was %s, term %d), step's pods running after %v\n",
			rt, i+1, res.Elapsed.Round(time.Millisecond), strings.Join(stages, ", "), res.ClusterID, res.OldClusterID, res.Term, r.back[i].Round(time.Millisecond))
	}
	return r, nil
}

// startProfile starts profiling the CPU into <cpuProfile>.<runtime>.<run>,
// one file a reset (pprof merges the files it is given); it returns the
// stop.
func startProfile(rt string) (func(), error) {
	if cpuProfile == "" {
		return func() {}, nil
	}
	profileRuns[rt]++
	f, err := os.Create(fmt.Sprintf("%s.%s.%d", cpuProfile, rt, profileRuns[rt]))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

var profileRuns = map[string]int{}

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app:latest"}}},
			},
		},
	}
}

// waitRunning waits until n pods match selector, each Running and Ready,
// and none more.
func waitRunning(ctx context.Context, client kubernetes.Interface, selector string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err == nil {
			ready := 0
			for _, p := range list.Items {
				if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) {
					ready++
				}
			}
			if ready == n && len(list.Items) == n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d running pods %s: %w", n, selector, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
