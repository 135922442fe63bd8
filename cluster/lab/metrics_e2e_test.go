package lab

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/klab-dev/klab/internal/testenv"
)

// kubectlMu serialises in-process kubectl runs: kubectl's fatal handler
// is process-wide.
var kubectlMu sync.Mutex

type kubectlFatal struct{ code int }

// kubectl runs the real kubectl in the test process against the
// fixture's cluster and returns its output; a failure ends the test.
func (f *loopFixture) kubectl(args ...string) string {
	f.t.Helper()
	out, errOut, code := f.tryKubectl(args...)
	if code != 0 {
		f.t.Fatalf("kubectl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func (f *loopFixture) tryKubectl(args ...string) (stdout, stderr string, code int) {
	kubectlMu.Lock()
	defer kubectlMu.Unlock()
	var out, errOut bytes.Buffer
	cmdutil.BehaviorOnFatal(func(msg string, code int) {
		errOut.WriteString(msg)
		panic(kubectlFatal{code: code})
	})
	defer cmdutil.DefaultBehaviorOnFatal()
	defer func() {
		if r := recover(); r != nil {
			fatal, ok := r.(kubectlFatal)
			if !ok {
				panic(r)
			}
			stdout, stderr, code = out.String(), errOut.String(), fatal.code
		}
	}()
	full := append([]string{"--kubeconfig", f.c.Info().Kubeconfig, "--cache-dir", f.cacheDir()}, args...)
	command := kubectlcmd.NewDefaultKubectlCommandWithArgs(kubectlcmd.KubectlOptions{
		Arguments: append([]string{"kubectl"}, full...),
		IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
	})
	command.SetArgs(full)
	if err := command.Execute(); err != nil {
		cmdutil.CheckErr(err)
	}
	return out.String(), errOut.String(), 0
}

func (f *loopFixture) cacheDir() string {
	if f.kubectlCache == "" {
		f.kubectlCache = f.t.TempDir()
	}
	return f.kubectlCache
}

// loadGenerator sends GET / to the pods' IPs, round robin, from workers
// goroutines until stop is closed, as a client of the Service would.
func (f *loopFixture) loadGenerator(selector string, workers int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := i; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				var ips []string
				for _, p := range f.pods(selector) {
					if podRunningReady(&p) {
						ips = append(ips, p.Status.PodIP)
					}
				}
				if len(ips) == 0 {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				resp, err := client.Get(fmt.Sprintf("http://%s:8080/", ips[n%len(ips)]))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	return &wg
}

var milliCPU = regexp.MustCompile(`(\d+)m`)

// TestTopAndAutoscale: kubectl top node and top pod show the CPU a pod
// under load really burns; kubectl autoscale makes an HPA that scales the
// Deployment out under that load and back in once it stops.
func TestTopAndAutoscale(t *testing.T) {
	testenv.EndToEnd(t)
	f := startLoopCluster(t, 1, 1, 10)
	d := deployment("web", 1, "klab/app")
	d.Spec.Template.Spec.Containers[0].Args = []string{"--cpu-per-request=20ms", "--log-requests=false"}
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if _, err := f.client.AppsV1().Deployments("default").Create(f.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitRunning("app=web", 1, time.Minute)

	stop := make(chan struct{})
	load := f.loadGenerator("app=web", 2, stop)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		load.Wait()
	}()

	// kubectl top pod: the loaded pod uses CPU, in millicores.
	f.eventually(30*time.Second, "kubectl top pod to show CPU use", func() (bool, error) {
		out, errOut, code := f.tryKubectl("top", "pod", "-l", "app=web", "--containers")
		if code != 0 {
			return false, fmt.Errorf("exit %d: %s", code, errOut)
		}
		for _, m := range milliCPU.FindAllStringSubmatch(out, -1) {
			if n, _ := strconv.Atoi(m[1]); n > 0 {
				return strings.Contains(out, "POD") && strings.Contains(out, "app"), nil
			}
		}
		return false, fmt.Errorf("no CPU use in %q", out)
	})
	out := f.kubectl("top", "node")
	if !strings.Contains(out, "worker-1") || !strings.Contains(out, "CPU(cores)") {
		t.Fatalf("kubectl top node:\n%s", out)
	}
	if out := f.kubectl("top", "pod", "-A"); !strings.Contains(out, "NAMESPACE") || !strings.Contains(out, "web-") {
		t.Fatalf("kubectl top pod -A:\n%s", out)
	}
	t.Logf("top:\n%s", f.kubectl("top", "pod", "-l", "app=web"))

	// kubectl autoscale: the HPA scales the Deployment out under the load.
	f.kubectl("autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=4")
	replicas := func() (int32, error) {
		d, err := f.client.AppsV1().Deployments("default").Get(f.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		return *d.Spec.Replicas, nil
	}
	f.eventually(2*time.Minute, "the HPA to scale web out", func() (bool, error) {
		n, err := replicas()
		return err == nil && n >= 2, fmt.Errorf("replicas %d, %v", n, err)
	})
	out = f.kubectl("get", "hpa", "web")
	for _, want := range []string{"REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "Deployment/web", "/50%"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get hpa: no %q in\n%s", want, out)
		}
	}
	t.Logf("hpa:\n%s", out)
	events := f.kubectl("get", "events", "--field-selector", "reason=SuccessfulRescale")
	if !strings.Contains(events, "New size:") || !strings.Contains(events, "cpu resource utilization (percentage of request) above target") {
		t.Errorf("no SuccessfulRescale event with upstream's message:\n%s", events)
	}

	// The load stops: once the downscale stabilization window (5 min at
	// real speed, 30 s at speed 10) has passed, it scales back in to 1.
	close(stop)
	load.Wait()
	f.eventually(3*time.Minute, "the HPA to scale web back in to 1", func() (bool, error) {
		n, err := replicas()
		return err == nil && n == 1, fmt.Errorf("replicas %d, %v", n, err)
	})
	if events := f.kubectl("get", "events", "--field-selector", "reason=SuccessfulRescale"); !strings.Contains(events, "All metrics below target") {
		t.Errorf("no scale-in event:\n%s", events)
	}
	t.Logf("describe:\n%s", f.kubectl("describe", "hpa", "web"))
}
