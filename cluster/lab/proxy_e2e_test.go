package lab

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
	"github.com/klab-dev/klab/cluster/proxy/traffic"
	"github.com/klab-dev/klab/internal/testenv"
)

// switchMode switches every kube-proxy of the cluster to mode.
func (f *loopFixture) switchMode(mode string) {
	f.t.Helper()
	if _, err := SetProxyMode(f.ctx, f.name, mode, ""); err != nil {
		f.t.Fatalf("switch to %s: %v", mode, err)
	}
	if _, err := WaitProxyMode(f.ctx, f.name, mode, 20*time.Second); err != nil {
		f.t.Fatalf("switch to %s: %v", mode, err)
	}
}

// proxyEndpoints returns how many endpoints, over every service port, the
// kube-proxy of node has synced.
func (f *loopFixture) proxyEndpoints(node string) (int, error) {
	all, err := ProxyStatuses(f.ctx, f.name)
	if err != nil {
		return 0, err
	}
	for _, np := range all {
		if np.Node == node {
			if np.Status == nil {
				return 0, fmt.Errorf("%s", np.Error)
			}
			return np.Status.Endpoints, nil
		}
	}
	return 0, fmt.Errorf("no node %s", node)
}

// waitProxyEndpoints waits until the kube-proxy of node has synced at least
// n endpoints.
func (f *loopFixture) waitProxyEndpoints(node string, n int) {
	f.t.Helper()
	f.eventually(20*time.Second, fmt.Sprintf("kube-proxy of %s to know %d endpoints", node, n), func() (bool, error) {
		got, err := f.proxyEndpoints(node)
		return err == nil && got >= n, fmt.Errorf("%d endpoints (%v)", got, err)
	})
}

// baseEndpoints is proxyEndpoints failing the test on an error.
func (f *loopFixture) baseEndpoints(node string) int {
	f.t.Helper()
	n, err := f.proxyEndpoints(node)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *loopFixture) traffic(o TrafficOptions) *traffic.Report {
	f.t.Helper()
	r, err := Traffic(f.ctx, f.name, o)
	if err != nil {
		f.t.Fatalf("traffic %+v: %v", o, err)
	}
	if r.Requests != o.Count {
		f.t.Fatalf("traffic sent %d requests, want %d", r.Requests, o.Count)
	}
	return r
}

func podCounts(r *traffic.Report) map[string]int {
	out := map[string]int{}
	for _, p := range r.Pods {
		out[p.Pod] = p.Count
	}
	return out
}

// TestKubeProxyModes runs the kube-proxy story on one cluster: a Deployment
// of three behind a NodePort Service, 300 requests through `klab traffic`
// in each of the four modes (round-robin exactly even, random choice even by
// a chi-square test), the rules each mode prints, a mode switch under
// traffic that fails no request, internalTrafficPolicy: Local, and a dead
// backend whose endpoint is still listed: userspace retries it away, the
// other modes let some connections fail.
func TestKubeProxyModes(t *testing.T) {
	testenv.EndToEnd(t)
	f := startLoopCluster(t, 1, 3, 10)
	ctx, client := f.ctx, f.client

	dep := deployment("web", 3, "klab/app:v1")
	if _, err := client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	svc, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := f.waitRunning("app=web", 3, 60*time.Second)
	f.eventually(20*time.Second, "kube-proxy of worker-1 to proxy to the three pods", func() (bool, error) {
		r, err := Traffic(ctx, f.name, TrafficOptions{Service: "web", Node: "worker-1", Count: 30, Concurrency: 1})
		if err != nil {
			return false, err
		}
		return len(r.Pods) == 3 && r.Failed == 0, fmt.Errorf("pods %v, failures %v", podCounts(r), r.Failures)
	})

	// Every kube-proxy starts in iptables mode, upstream's default.
	statuses, err := ProxyStatuses(ctx, f.name)
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 4 {
		t.Fatalf("%d kube-proxies answer, want one per node (4)", len(statuses))
	}
	for _, np := range statuses {
		if np.Status == nil || np.Status.Mode != proxier.ModeIPTables {
			t.Fatalf("kube-proxy of %s: %+v, want mode iptables", np.Node, np)
		}
	}

	const count = 300
	for _, mode := range []string{proxier.ModeUserspace, proxier.ModeIPTables, proxier.ModeIPVS, proxier.ModeNFTables} {
		f.switchMode(mode)
		r := f.traffic(TrafficOptions{Service: "web", Node: "worker-1", Count: count, Concurrency: 8})
		counts := podCounts(r)
		if r.Failed != 0 || len(counts) != 3 {
			t.Fatalf("%s: %d failed, pods %v, failures %v; want 0 failed and all 3 pods", mode, r.Failed, counts, r.Failures)
		}
		switch mode {
		case proxier.ModeUserspace, proxier.ModeIPVS:
			// Round-robin: exactly even.
			for pod, n := range counts {
				if n != count/3 {
					t.Errorf("%s: pod %s answered %d of %d, want exactly %d (round-robin)", mode, pod, n, count, count/3)
				}
			}
		default:
			// Random choice: even in distribution. With three pods a
			// p-value under 0.001 means the spread is not uniform.
			if r.ChiSquare.PValue < 0.001 {
				t.Errorf("%s: counts %v give chi-square %.2f (p=%.5f): not a uniform choice", mode, counts, r.ChiSquare.Statistic, r.ChiSquare.PValue)
			}
		}
		if r.Modes[mode] != count {
			t.Errorf("%s: the proxy reported modes %v", mode, r.Modes)
		}
		t.Logf("%s: %v (chi-square %.2f, p=%.3f), latency p50 %v p99 %v", mode, counts, r.ChiSquare.Statistic, r.ChiSquare.PValue, r.Latency.P50, r.Latency.P99)
		checkRules(t, f, mode, svc, pods)
	}

	// A mode switch under traffic fails no request: every endpoint is
	// alive, so no mode's semantics drop a connection.
	f.switchMode(proxier.ModeIPTables)
	var (
		wg     sync.WaitGroup
		report *traffic.Report
		runErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		report, runErr = Traffic(ctx, f.name, TrafficOptions{Service: "web", Node: "worker-2", Count: 3000, Concurrency: 4})
	}()
	for _, mode := range []string{proxier.ModeIPVS, proxier.ModeNFTables, proxier.ModeUserspace, proxier.ModeIPTables} {
		f.switchMode(mode)
	}
	wg.Wait()
	if runErr != nil {
		t.Fatal(runErr)
	}
	if report.Failed != 0 {
		t.Errorf("switching modes under traffic failed %d of %d requests: %v", report.Failed, report.Requests, report.Failures)
	}
	if len(report.Modes) < 2 {
		t.Errorf("the traffic saw only modes %v while the mode switched four times", report.Modes)
	}
	t.Logf("under switches: %d requests, modes seen %v", report.Requests, report.Modes)

	// The switch left an event on each Node.
	f.eventually(10*time.Second, "a mode-change event on worker-1", func() (bool, error) {
		evs, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			// Later switches of the same node join the first one's
			// event series (events.k8s.io), so its note names the
			// first switch.
			if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == "worker-1" && e.Reason == "ProxyModeChanged" && strings.Contains(e.Message, "restart") {
				return true, nil
			}
		}
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+" "+e.Reason)
		}
		return false, fmt.Errorf("%d events, none about worker-1's mode: %v", len(evs.Items), seen)
	})

	testInternalTrafficPolicyLocal(t, f, pods)
	testDeadBackend(t, f, pods)
}

// checkRules parses what `klab proxy rules` prints for mode and checks the
// structure the real tool would show for the web Service.
func checkRules(t *testing.T, f *loopFixture, mode string, svc *corev1.Service, pods []corev1.Pod) {
	t.Helper()
	rules, node, err := ProxyRules(f.ctx, f.name, "worker-1")
	if err != nil {
		t.Fatalf("%s: rules: %v", mode, err)
	}
	if node != "worker-1" {
		t.Errorf("rules came from %s, want worker-1", node)
	}
	nodePort := int(svc.Spec.Ports[0].NodePort)
	switch mode {
	case proxier.ModeIPTables:
		// KUBE-SVC-<hash> for default/web: three jumps to KUBE-SEP chains
		// with probabilities 1/3, 1/2 and none.
		svcChain := regexp.MustCompile(`-A KUBE-SERVICES .*-d ` + regexp.QuoteMeta(svc.Spec.ClusterIP) + ` --dport 80 -j (KUBE-SVC-[A-Z0-9]{16})`).FindStringSubmatch(rules)
		if svcChain == nil {
			t.Fatalf("iptables: no KUBE-SERVICES rule for %s:\n%s", svc.Spec.ClusterIP, rules)
		}
		jumps := regexp.MustCompile(`(?m)^-A `+svcChain[1]+` .*-j (KUBE-SEP-[A-Z0-9]{16})$`).FindAllString(rules, -1)
		if len(jumps) != 3 {
			t.Fatalf("iptables: %s has %d jumps to endpoints, want 3:\n%s", svcChain[1], len(jumps), rules)
		}
		for i, want := range []float64{1.0 / 3, 1.0 / 2} {
			m := regexp.MustCompile(`--probability ([0-9.]+)`).FindStringSubmatch(jumps[i])
			if m == nil {
				t.Fatalf("iptables: jump %d has no probability: %s", i, jumps[i])
			}
			p, _ := strconv.ParseFloat(m[1], 64)
			if d := p - want; d > 1e-6 || d < -1e-6 {
				t.Errorf("iptables: jump %d has probability %v, want %v", i, p, want)
			}
		}
		if strings.Contains(jumps[2], "--probability") {
			t.Errorf("iptables: the last jump has a probability: %s", jumps[2])
		}
		// The kubernetes Service has the API server as its endpoint (the
		// lease reconciler's), so it is forwarded, not rejected.
		if !regexp.MustCompile(`-A KUBE-SERVICES .*-d 10\.96\.0\.1(/32)? .*--dport 443 -j KUBE-SVC-`).MatchString(rules) ||
			strings.Contains(rules, "default/kubernetes:https has no endpoints") {
			t.Errorf("iptables: 10.96.0.1:443 is not forwarded to the API server:\n%s", rules)
		}
		if !strings.Contains(rules, "-A KUBE-NODEPORTS") || !strings.Contains(rules, "--dport "+strconv.Itoa(nodePort)) {
			t.Errorf("iptables: no KUBE-NODEPORTS rule for port %d", nodePort)
		}
	case proxier.ModeIPVS:
		// A virtual server at ClusterIP:80 with rr and the three pods.
		vs := regexp.MustCompile(`(?m)^TCP  ` + regexp.QuoteMeta(svc.Spec.ClusterIP) + `:80 rr\n((?:  -> .*\n)+)`).FindStringSubmatch(rules)
		if vs == nil {
			t.Fatalf("ipvs: no virtual server %s:80 rr:\n%s", svc.Spec.ClusterIP, rules)
		}
		for _, p := range pods {
			if !strings.Contains(vs[1], "-> "+p.Status.PodIP+":8080") {
				t.Errorf("ipvs: pod %s (%s) is not a real server of %s:80:\n%s", p.Name, p.Status.PodIP, svc.Spec.ClusterIP, vs[1])
			}
		}
		if strings.Contains(rules, "KUBE-SVC-") {
			t.Errorf("ipvs: the iptables mode's service chains are still there")
		}
	case proxier.ModeNFTables:
		if !strings.Contains(rules, "table ip kube-proxy") || !strings.Contains(rules, "numgen random mod 3 vmap") {
			t.Errorf("nftables: no kube-proxy table with a 3-way numgen:\n%s", rules)
		}
		if !strings.Contains(rules, svc.Spec.ClusterIP+" . tcp . 80") {
			t.Errorf("nftables: no service-ips element for %s:80", svc.Spec.ClusterIP)
		}
	}
}

// testInternalTrafficPolicyLocal checks that a Service with
// internalTrafficPolicy: Local, reached at its ClusterIP from a node, only
// answers from that node's pods.
func testInternalTrafficPolicyLocal(t *testing.T, f *loopFixture, pods []corev1.Pod) {
	local := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-local"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"}, InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyLocal),
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	node := pods[0].Spec.NodeName
	base := f.baseEndpoints(node)
	if _, err := f.client.CoreV1().Services("default").Create(f.ctx, local, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var onNode []string
	for _, p := range pods {
		if p.Spec.NodeName == node {
			onNode = append(onNode, p.Name)
		}
	}
	f.waitProxyEndpoints(node, base+3)
	for _, mode := range []string{proxier.ModeIPTables, proxier.ModeUserspace} {
		f.switchMode(mode)
		r := f.traffic(TrafficOptions{Service: "web-local", Node: node, Count: 60, Concurrency: 4})
		if r.Succeeded != 60 {
			t.Errorf("%s: internalTrafficPolicy Local from %s: %d of 60 succeeded: %v", mode, node, r.Succeeded, r.Failures)
		}
		for pod := range podCounts(r) {
			if !slices.Contains(onNode, pod) {
				t.Errorf("%s: internalTrafficPolicy Local from %s reached %s, which runs elsewhere (local pods %v)", mode, node, pod, onNode)
			}
		}
	}
}

// testDeadBackend kills one backend's process while its endpoint is still
// listed. The Service has no selector and the test writes its
// EndpointSlice itself, so nothing removes the dead endpoint: the window
// between a process dying and the control loop noticing, held open.
func testDeadBackend(t *testing.T, f *loopFixture, pods []corev1.Pod) {
	ctx, client := f.ctx, f.client
	base := f.baseEndpoints("worker-1")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-stale"},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeNodePort,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Three stand-alone pods that are not restarted once they exit.
	var ips []string
	for i := range 3 {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("stale-%d", i), Labels: map[string]string{"app": "stale"}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
				Name: "app", Image: "klab/app:v1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
			}}},
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range f.waitRunning("app=stale", 3, 60*time.Second) {
		ips = append(ips, p.Status.PodIP)
	}
	slices.Sort(ips)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-stale-manual", Labels: map[string]string{
			discoveryv1.LabelServiceName: "web-stale", discoveryv1.LabelManagedBy: "klab-test",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	if _, err := client.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitProxyEndpoints("worker-1", base+3)

	// Kill the process behind the first endpoint.
	resp, err := http.Post("http://"+ips[0]+":8080/crash", "text/plain", nil)
	if err == nil {
		resp.Body.Close()
	}
	f.eventually(10*time.Second, "the crashed backend to refuse connections", func() (bool, error) {
		r, err := http.Get("http://" + ips[0] + ":8080/")
		if err != nil {
			return true, nil
		}
		r.Body.Close()
		return false, fmt.Errorf("still answers")
	})

	for _, mode := range []string{proxier.ModeUserspace, proxier.ModeIPTables, proxier.ModeIPVS, proxier.ModeNFTables} {
		f.switchMode(mode)
		r := f.traffic(TrafficOptions{Service: "web-stale", Node: "worker-1", Count: 90, Concurrency: 4})
		t.Logf("dead backend, %s: %d of %d failed, pods %v, failures %v", mode, r.Failed, r.Requests, podCounts(r), r.Failures)
		if mode == proxier.ModeUserspace {
			if r.Failed != 0 {
				t.Errorf("userspace retries the next endpoint, yet %d of %d requests failed: %v", r.Failed, r.Requests, r.Failures)
			}
			continue
		}
		if r.Failed == 0 {
			t.Errorf("%s does not retry, yet no request to the dead backend failed (pods %v)", mode, podCounts(r))
		}
		if len(podCounts(r)) != 2 {
			t.Errorf("%s: answers came from %v, want the two live pods", mode, podCounts(r))
		}
	}
	// The slice was the test's own: the endpoint stayed listed throughout.
	if got, err := client.DiscoveryV1().EndpointSlices("default").Get(ctx, "web-stale-manual", metav1.GetOptions{}); err != nil || len(got.Endpoints) != 3 {
		t.Errorf("the manual EndpointSlice changed: %v, %v", got, err)
	}
}
