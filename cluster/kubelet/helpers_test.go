package kubelet

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/timing"
)

const (
	testNode  = "node-1"
	testSpeed = timing.Speed(20)
	appImage  = "klab/app:v1"
	// crashImage's containers exit with 1 shortly after they start.
	crashImage = "crash:v1"
)

// testCluster is a real API server on real etcd, with a kubelet of node-1
// on the in-memory runtime.
type testCluster struct {
	t       *testing.T
	pki     *pki.PKI
	url     string
	admin   kubernetes.Interface
	nodeCfg *rest.Config
	rt      *critest.Runtime
	kubelet *Kubelet
}

// startAPIServer runs an API server that can reach kubelets for
// pods/log and the streaming subresources, on the same etcd as an
// apiservertest cluster.
func startAPIServer(t *testing.T) *testCluster {
	t.Helper()
	c := apiservertest.New(t, apiservertest.Options{})
	c.Stop(0)
	addr, err := etcdtest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := c.PKI.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.LoadTokenFile(filepath.Join(c.PKI.Dir, pki.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	kubeletCert, err := c.PKI.KubeletClientCertificate()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{
		Name: "apiserver-kubelet-test", Etcd: c.Etcd.Client(), Listen: addr, TLS: tlsCfg,
		Authenticator: authn, ClientCA: c.PKI.CertPool(),
		KubeletCA: c.PKI.CertPool(), KubeletClientCert: &kubeletCert,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	tc := &testCluster{t: t, pki: c.PKI, url: "https://" + addr}
	adminCfg := tc.restConfig(auth.AdminUser)
	if tc.admin, err = kubernetes.NewForConfig(adminCfg); err != nil {
		t.Fatal(err)
	}
	tc.nodeCfg = tc.restConfig(auth.NodeUser(testNode))
	return tc
}

// restConfig is user's client configuration: a token of the token file,
// or a component's client certificate as a cluster's kubelet holds one.
func (tc *testCluster) restConfig(user string) *rest.Config {
	var cfg *rest.Config
	var err error
	if _, ok := tc.pki.Token(user); ok {
		cfg, err = tc.pki.RESTConfig("test", tc.url, user)
	} else if id, ok := pki.ClientIdentity(user); ok {
		dir := filepath.Join(tc.t.TempDir(), "credentials")
		if err = tc.pki.EnsureComponentCredentials(dir, id); err == nil {
			var creds *pki.ComponentCredentials
			if creds, err = pki.LoadComponentCredentials(dir); err == nil {
				cfg, err = creds.RESTConfig(tc.url)
			}
		}
	} else {
		err = fmt.Errorf("no credentials for %q", user)
	}
	if err != nil {
		tc.t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	return cfg
}

func testRuntime() *critest.Runtime {
	return critest.New(critest.Options{
		Images:      []string{appImage, crashImage},
		RecordCalls: true,
		Behave: func(cfg cri.ContainerConfig) critest.Behavior {
			if cfg.Image == crashImage {
				return critest.Behavior{ExitAfter: 20 * time.Millisecond, ExitCode: 1, Logs: []string{"crashing"}}
			}
			return critest.Behavior{Logs: []string{"hello from " + cfg.Name}}
		},
	})
}

// startKubelet starts a kubelet of node-1 on rt.
func (tc *testCluster) startKubelet(rt *critest.Runtime) *Kubelet {
	tc.t.Helper()
	tlsCfg, err := tc.pki.ServerTLSConfig()
	if err != nil {
		tc.t.Fatal(err)
	}
	k, err := New(Config{
		NodeName: testNode, REST: tc.nodeCfg, Runtime: rt, Speed: testSpeed,
		Capacity: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")},
		NodeIP:   "127.0.0.1", PodCIDR: "10.244.1.0/24", Listen: "127.0.0.1:0", TLS: tlsCfg, CAPool: tc.pki.CertPool(),
	})
	if err != nil {
		tc.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(k.Kill)
	tc.rt, tc.kubelet = rt, k
	return k
}

// eventually polls cond every 20 ms until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; last: %s", what, last)
}

func (tc *testCluster) createPod(name, image string, mutate func(*v1.Pod)) *v1.Pod {
	tc.t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                      testNode,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []v1.Container{{Name: "app", Image: image}},
		},
	}
	if mutate != nil {
		mutate(pod)
	}
	created, err := tc.admin.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		tc.t.Fatal(err)
	}
	return created
}

func (tc *testCluster) getPod(name string) *v1.Pod {
	pod, err := tc.admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		tc.t.Fatal(err)
	}
	return pod
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue && c.Reason == reasonKubeletReady && c.Message == messageKubeletReady
		}
	}
	return false
}

func containsCall(calls []string, prefix string) bool {
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

func podIsReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func eventReasons(t *testing.T, client kubernetes.Interface, pod *v1.Pod) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	eventually(t, "events", func() (bool, string) {
		list, err := client.CoreV1().Events(pod.Namespace).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String(),
		})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			out[e.Reason] = true
			if e.Source.Component != "kubelet" || e.Source.Host != testNode {
				t.Errorf("event source = %+v", e.Source)
			}
		}
		return out[eventStarted], fmt.Sprint(out)
	})
	return out
}
