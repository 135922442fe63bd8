package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// TestDockerServiceNetwork checks that a pod of a Docker cluster reaches
// Services as one of a real cluster does: its resolv.conf names the
// cluster DNS, nslookup (over UDP) is answered from 10.96.0.10 by the
// masters' coredns pods behind the kube-dns Service, and an HTTP request
// to the Service's name and to its ClusterIP reaches one of its pods, in
// every kube-proxy mode, switched live.
func TestDockerServiceNetwork(t *testing.T) {
	bin := requireDocker(t)
	testHome(t)
	name := dockerClusterName(t, "svcnet")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c, err := Up(ctx, Spec{Name: name, Masters: 1, Workers: 1, Speed: 10, Runtime: RuntimeDocker, NoFsync: true}, Options{Binary: bin})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	f := &loopFixture{t: t, name: name, c: c, ctx: ctx}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if f.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.AppsV1().Deployments("default").Create(ctx, deployment("web", 2, "klab/app:latest"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if web, err = f.client.CoreV1().Services("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := f.waitRunning("app=web", 2, 3*time.Minute)
	client := pods[0].Name

	out, err := execIn(ctx, f, client, "cat", "/etc/resolv.conf")
	if err != nil || out != "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n" {
		t.Fatalf("resolv.conf of %s: %v\n%s", client, err, out)
	}

	for _, mode := range []string{proxier.ModeIPTables, proxier.ModeUserspace, proxier.ModeIPVS, proxier.ModeNFTables} {
		t.Run(mode, func(t *testing.T) {
			f := *f
			f.t = t
			if mode != proxier.ModeIPTables {
				f.switchMode(mode)
			}
			var out string
			// The first lookups may come before the kube-proxy has synced
			// the Service (or the coredns pod's endpoint).
			f.eventually(time.Minute, "nslookup web.default.svc.cluster.local in "+mode, func() (bool, error) {
				var err error
				out, err = execIn(ctx, &f, client, "nslookup", "web.default.svc.cluster.local")
				return err == nil && strings.Contains(out, "Address: "+web.Spec.ClusterIP+"\n"), err
			})
			// The reply came from the address the query went to: a
			// resolver drops one from anywhere else.
			if !strings.Contains(out, "Server:\t\t10.96.0.10\n") {
				t.Errorf("nslookup did not ask 10.96.0.10:\n%s", out)
			}
			for _, url := range []string{"http://web", "http://" + web.Spec.ClusterIP + "/"} {
				f.eventually(time.Minute, "wget "+url+" in "+mode, func() (bool, error) {
					var err error
					out, err = execIn(ctx, &f, client, "wget", "-qO-", url)
					return err == nil && (strings.Contains(out, pods[0].Name) || strings.Contains(out, pods[1].Name)), err
				})
			}
		})
	}
	// A partition disconnects the worker's pod sandboxes from the network,
	// and the kernel drops their route with the interface; heal sets it
	// again, so the pods reach the Service once more.
	if node := pods[0].Spec.NodeName; node != "worker-1" {
		t.Fatalf("pod %s runs on %s; want worker-1, the one worker", client, node)
	}
	if _, err := Chaos(ctx, name, ChaosRequest{Op: OpPartition, Targets: []string{"worker-1"}}); err != nil {
		t.Fatalf("partition: %v", err)
	}
	if _, err := Chaos(ctx, name, ChaosRequest{Op: OpHeal}); err != nil {
		t.Fatalf("heal: %v", err)
	}
	f.eventually(time.Minute, "nslookup after heal", func() (bool, error) {
		out, err := execIn(ctx, f, client, "nslookup", "web.default.svc.cluster.local")
		return err == nil && strings.Contains(out, "Address: "+web.Spec.ClusterIP+"\n"), err
	})

	// A container that asks the DNS the moment it starts finds the route
	// and resolv.conf in place: the sandbox set them up before the
	// kubelet created any container of the pod.
	early := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "early"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "app", Image: "klab/app:latest",
			Command: []string{"sh", "-c", "nslookup kubernetes.default && sleep 3600"},
		}}},
	}
	if _, err := f.client.CoreV1().Pods("default").Create(ctx, early, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var logs string
	f.eventually(2*time.Minute, "the early pod's lookup", func() (bool, error) {
		p, err := f.client.CoreV1().Pods("default").Get(ctx, "early", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodFailed {
			t.Fatalf("the early pod failed: its lookup found no DNS (%+v)", p.Status.ContainerStatuses)
		}
		if p.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		b, err := f.client.CoreV1().Pods("default").GetLogs("early", &corev1.PodLogOptions{}).DoRaw(ctx)
		logs = string(b)
		return err == nil && strings.Contains(logs, "Address: 10.96.0.1\n"), err
	})

	if _, err := Down(context.Background(), name, false, nil); err != nil {
		t.Errorf("Down: %v", err)
	}
	assertNoObjects(t, name)
}
