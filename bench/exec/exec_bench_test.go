package execbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	streamhttp "k8s.io/streaming/pkg/httpstream"

	"github.com/klab-dev/klab/cluster/lab"
)

const podName = "bench"

// cluster is the one local cluster every benchmark uses, with a running
// klab/app pod.
var cluster struct {
	once   sync.Once
	err    error
	lab    *lab.Cluster
	config *rest.Config
	client kubernetes.Interface
	podIP  string
}

func setUp(b *testing.B) {
	b.Helper()
	cluster.once.Do(func() { cluster.err = startCluster() })
	if cluster.err != nil {
		b.Fatal(cluster.err)
	}
}

func startCluster() error {
	home, err := os.MkdirTemp("", "klab-execbench")
	if err != nil {
		return err
	}
	os.Setenv("KLAB_HOME", home)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := lab.Up(ctx, lab.Spec{Name: "execbench", Masters: 1, Workers: 1, Speed: 1, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		return err
	}
	cluster.lab = c
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.Dir(), lab.KubeconfigFile))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cluster.config = cfg
	if cluster.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app"}}},
	}
	if _, err := cluster.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	for ctx.Err() == nil {
		p, err := cluster.client.CoreV1().Pods("default").Get(ctx, podName, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			cluster.podIP = p.Status.PodIP
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("pod %s did not start: %w", podName, ctx.Err())
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster.lab != nil {
		cluster.lab.Close(context.Background(), nil)
		os.RemoveAll(os.Getenv("KLAB_HOME"))
	}
	os.Exit(code)
}

// percentile by nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func BenchmarkExecRoundTrip(b *testing.B) {
	setUp(b)
	req := cluster.client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(podName).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "app", Command: []string{"echo", "hi"}, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	executors := []struct {
		name string
		new  func() (remotecommand.Executor, error)
	}{
		{"websockets", func() (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutor(cluster.config, "GET", req.URL().String())
		}},
		{"spdy", func() (remotecommand.Executor, error) {
			return remotecommand.NewSPDYExecutor(cluster.config, "POST", req.URL())
		}},
	}
	for _, ex := range executors {
		b.Run(ex.name, func(b *testing.B) {
			samples := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				exec, err := ex.new()
				if err != nil {
					b.Fatal(err)
				}
				var out, errOut bytes.Buffer
				if err := exec.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}); err != nil {
					b.Fatalf("exec: %v (%s)", err, errOut.String())
				}
				samples = append(samples, time.Since(start))
				if out.String() != "hi\n" {
					b.Fatalf("exec printed %q", out.String())
				}
			}
			slices.Sort(samples)
			b.ReportMetric(float64(percentile(samples, 0.50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(samples, 0.99).Microseconds())/1000, "p99-ms")
		})
	}
}

// chunk is what one iteration sends: 1 MiB.
const chunk = 1 << 20

func BenchmarkPortForwardThroughput(b *testing.B) {
	setUp(b)
	url := cluster.client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(podName).SubResource("portforward").URL()
	dialers := []struct {
		name string
		new  func() (streamhttp.Dialer, error)
	}{
		{"websockets", func() (streamhttp.Dialer, error) {
			return portforward.NewSPDYOverWebsocketDialerForStreaming(url, cluster.config)
		}},
		{"spdy", func() (streamhttp.Dialer, error) {
			transport, upgrader, err := spdy.RoundTripperFor(cluster.config)
			if err != nil {
				return nil, err
			}
			return spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, "POST", url), nil
		}},
	}
	for i, d := range dialers {
		b.Run(d.name, func(b *testing.B) {
			// The sender stands on the pod's IP, at a port the app does
			// not use.
			port := 9100 + i
			ln, err := net.Listen("tcp", net.JoinHostPort(cluster.podIP, strconv.Itoa(port)))
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			total := int64(b.N) * chunk
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				buf := make([]byte, chunk)
				for sent := int64(0); sent < total; sent += chunk {
					if _, err := conn.Write(buf); err != nil {
						return
					}
				}
			}()
			dialer, err := d.new()
			if err != nil {
				b.Fatal(err)
			}
			stop, ready := make(chan struct{}), make(chan struct{})
			fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- fw.ForwardPorts() }()
			defer func() { close(stop); <-done }()
			<-ready
			ports, err := fw.GetPorts()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(chunk)
			b.ResetTimer()
			conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))))
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			n, err := io.CopyN(io.Discard, conn, total)
			if err != nil {
				b.Fatalf("read %d of %d bytes: %v", n, total, err)
			}
		})
	}
}
