// Command soakbench runs a 3+3 cluster on the local runtime in this process
// under steady churn, and then holds thousands of idle connections open to
// one of its API servers.
//
// Soak: for -for (10 min) a client creates a Deployment of 3 replicas every
// 2 s and deletes the one made 5 rounds earlier, and scales a standing one
// between 1 and 4, so that the scheduler, the controllers, the kubelets, the
// kube-proxies and etcd all keep working. The churn is paced to what the
// cluster finishes: a round whose namespace still holds more pods than the
// steady state's (the last rounds' not yet gone) creates nothing and waits
// for the next, so a slow machine gets the same working set, only fewer
// rounds; how many rounds ran and how many waited is printed. Every -every (30 s) it samples the
// whole process after a forced GC: goroutines and the live heap. A leak
// shows as a count that keeps climbing; a cluster that holds steady shows
// the same figures at the end as in the middle. The samples are printed,
// then the first third's mean beside the last third's.
//
// Idle connections: -conns (10,000) TLS connections to the first API server,
// each sending one GET /livez and then keeping the connection open, as an
// idle keep-alive client does. With them open, 200 lists of the default
// namespace's pods are timed (p50/p99, beside the same before they were
// opened), and the goroutines and heap they cost are printed. The server
// must answer every one of them and keep answering the admin.
//
//	go run ./bench/soak/cmd/soakbench [-for 10m] [-every 30s] [-conns 10000]
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/lab"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "soakbench:", err)
		os.Exit(1)
	}
}

func run() error {
	dur := flag.Duration("for", 10*time.Minute, "how long the churn runs")
	every := flag.Duration("every", 30*time.Second, "how often the process is sampled")
	conns := flag.Int("conns", 10000, "idle connections to hold open to one API server")
	flag.Parse()

	// Each idle connection is a descriptor here, in the API server, and
	// one in the client, which is a process of its own.
	if err := raiseFiles(*conns + 4096); err != nil {
		return err
	}
	if host := os.Getenv(idleEnv); host != "" {
		return holdIdle(host, *conns)
	}

	home, err := os.MkdirTemp("", "soakbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	os.Setenv("KLAB_HOME", home)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	c, err := lab.Up(ctx, lab.Spec{Name: fmt.Sprintf("soak-%d", os.Getpid()), Masters: 3, Workers: 3, Speed: 1, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	cancel()
	if err != nil {
		return err
	}
	defer c.Close(context.Background(), nil)
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.Dir(), lab.KubeconfigFile))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := soak(client, *dur, *every); err != nil {
		return err
	}
	return idle(client, c.Info().APIServers[0], *conns)
}

type sample struct {
	at         time.Duration
	goroutines int
	heap       uint64
	pods       int
}

func measure(start time.Time, client kubernetes.Interface) sample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := sample{at: time.Since(start), goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if pods, err := client.CoreV1().Pods("soak").List(ctx, metav1.ListOptions{}); err == nil {
		s.pods = len(pods.Items)
	}
	return s
}

// soak churns the cluster for dur and samples the process every every.
func soak(client kubernetes.Interface, dur, every time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), dur+time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "soak"}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	deploy := func(name string, replicas int32) *appsv1.Deployment {
		labels := map[string]string{"app": name}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(replicas),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app"}}},
				},
			},
		}
	}
	dc := client.AppsV1().Deployments("soak")
	if _, err := dc.Create(ctx, deploy("standing", 2), metav1.CreateOptions{}); err != nil {
		return err
	}
	// Let the cluster reach its working set before the first sample.
	time.Sleep(20 * time.Second)

	start := time.Now()
	samples := []sample{measure(start, client)}
	fmt.Printf("| t | goroutines | live heap | pods in soak |\n|---|---|---|---|\n")
	print := func(s sample) {
		fmt.Printf("| %s | %d | %.1f MiB | %d |\n", s.at.Round(time.Second), s.goroutines, float64(s.heap)/(1<<20), s.pods)
	}
	print(samples[0])
	var errs atomic.Int64
	// The steady state: the 5 live churn Deployments' 15 pods, the
	// standing one's up to 4, and the pods of one round in flight.
	const steadyPods = 5*3 + 4 + 3
	rounds, waited := 0, 0
	round := time.NewTicker(2 * time.Second)
	defer round.Stop()
	sampler := time.NewTicker(every)
	defer sampler.Stop()
	end := time.After(dur)
	for {
		select {
		case <-end:
			for _, name := range []string{"standing"} {
				dc.Delete(ctx, name, metav1.DeleteOptions{})
			}
			fmt.Printf("\nchurn: %d rounds ran, %d waited for the cluster to finish the ones before\n", rounds, waited)
			return summarise(samples, errs.Load())
		case <-sampler.C:
			s := measure(start, client)
			samples = append(samples, s)
			print(s)
		case <-round.C:
			if pods, err := client.CoreV1().Pods("soak").List(ctx, metav1.ListOptions{}); err == nil && len(pods.Items) > steadyPods {
				waited++
				continue
			}
			i := rounds
			rounds++
			if _, err := dc.Create(ctx, deploy(fmt.Sprintf("churn-%d", i), 3), metav1.CreateOptions{}); err != nil {
				errs.Add(1)
			}
			if i >= 5 {
				if err := dc.Delete(ctx, fmt.Sprintf("churn-%d", i-5), metav1.DeleteOptions{}); err != nil {
					errs.Add(1)
				}
			}
			scale, err := dc.GetScale(ctx, "standing", metav1.GetOptions{})
			if err == nil {
				scale.Spec.Replicas = int32(1 + i%4)
				_, err = dc.UpdateScale(ctx, "standing", scale, metav1.UpdateOptions{})
			}
			if err != nil {
				errs.Add(1)
			}
		}
	}
}

func summarise(samples []sample, errs int64) error {
	if len(samples) < 6 {
		return fmt.Errorf("only %d samples: run longer than 6 sampling periods", len(samples))
	}
	third := len(samples) / 3
	mean := func(s []sample) (g, h float64) {
		for _, x := range s {
			g += float64(x.goroutines)
			h += float64(x.heap)
		}
		return g / float64(len(s)), h / float64(len(s)) / (1 << 20)
	}
	g1, h1 := mean(samples[1 : 1+third])
	g3, h3 := mean(samples[len(samples)-third:])
	fmt.Printf("\nsoak: %d samples over %s; first third's mean %.0f goroutines, %.1f MiB; last third's %.0f goroutines, %.1f MiB (%+.1f %%, %+.1f %%); %d churn requests failed\n",
		len(samples), samples[len(samples)-1].at.Round(time.Second), g1, h1, g3, h3, 100*(g3-g1)/g1, 100*(h3-h1)/h1, errs)
	return nil
}

// idle opens n idle keep-alive connections to the API server at server and
// times the admin's lists before and while they are open.
func idle(client kubernetes.Interface, server string, n int) error {
	u, err := url.Parse(server)
	if err != nil {
		return err
	}
	lists := func() (p50, p99 time.Duration, err error) {
		var took []time.Duration
		for range 200 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			start := time.Now()
			_, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			cancel()
			if err != nil {
				return 0, 0, err
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		return took[len(took)/2], took[len(took)*99/100], nil
	}
	b50, b99, err := lists()
	if err != nil {
		return err
	}
	before := measure(time.Now(), client)

	self, err := os.Executable()
	if err != nil {
		return err
	}
	holder := exec.Command(self, "-conns", strconv.Itoa(n))
	holder.Env = append(os.Environ(), idleEnv+"="+u.Host)
	holder.Stderr = os.Stderr
	holder.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := holder.StdinPipe()
	if err != nil {
		return err
	}
	out, err := holder.StdoutPipe()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := holder.Start(); err != nil {
		return err
	}
	defer holder.Wait()
	defer in.Close() // the holder closes its connections and ends
	ready, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(ready) != "ready" {
		return fmt.Errorf("the idle connections were not all opened (%q, %v)", ready, err)
	}
	opened := time.Since(start)
	w50, w99, err := lists()
	if err != nil {
		return fmt.Errorf("with %d idle connections open the API server no longer answers: %w", n, err)
	}
	with := measure(time.Now(), client)
	fmt.Printf("\n| idle connections to one API server | opened in | goroutines added | heap added | list pods p50 / p99 before | with them open |\n|---|---|---|---|---|---|\n")
	fmt.Printf("| %d | %s | %d (%.1f per connection) | %.1f MiB (%.1f KiB per connection) | %s / %s | %s / %s |\n",
		n, opened.Round(100*time.Millisecond), with.goroutines-before.goroutines, float64(with.goroutines-before.goroutines)/float64(n),
		float64(int64(with.heap)-int64(before.heap))/(1<<20), float64(int64(with.heap)-int64(before.heap))/1024/float64(n),
		b50.Round(10*time.Microsecond), b99.Round(10*time.Microsecond), w50.Round(10*time.Microsecond), w99.Round(10*time.Microsecond))
	return nil
}

// idleEnv, when set, makes soakbench the holder of the idle connections:
// it opens -conns of them to the API server it names, says "ready" and
// keeps them until its standard input closes.
const idleEnv = "SOAKBENCH_IDLE"

func holdIdle(host string, n int) error {
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var mu sync.Mutex
	var failed []error
	// 8 dialers: a TLS handshake is the server's CPU, and 2 cores.
	next := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				c, err := openIdle(host)
				mu.Lock()
				if err != nil {
					failed = append(failed, err)
				} else {
					conns = append(conns, c)
				}
				mu.Unlock()
			}
		}()
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d connections failed, the first: %v", len(failed), n, failed[0])
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// raiseFiles raises the soft limit of open files to at least n, up to the
// hard limit, which only a privileged process could raise.
func raiseFiles(n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Max < uint64(n) {
		return fmt.Errorf("-conns needs %d open files in a process, and the hard limit is %d", n, lim.Max)
	}
	if lim.Cur < uint64(n) {
		lim.Cur = uint64(n)
		return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return nil
}

// openIdle connects, asks once for /livez on a keep-alive connection, reads
// the answer and leaves the connection open and idle.
func openIdle(host string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", host, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(c, "GET /livez HTTP/1.1\r\nHost: %s\r\n\r\n", host); err != nil {
		c.Close()
		return nil, err
	}
	buf := make([]byte, 4096)
	nr, err := c.Read(buf)
	if err != nil {
		c.Close()
		return nil, err
	}
	if !strings.HasPrefix(string(buf[:nr]), "HTTP/1.1 200") {
		c.Close()
		return nil, errors.New("GET /livez: " + strings.SplitN(string(buf[:nr]), "\r\n", 2)[0])
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
