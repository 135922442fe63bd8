package apiserver_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

func resourceList(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// TestResourceQuotasWithKubectl: `kubectl create quota`, `get quota` with
// upstream's REQUEST and LIMIT columns, `describe quota`, and the
// ResourceQuota admission once the quota's status is known (here written
// as the resourcequota controller would; the controller's own test runs
// it against this server).
func TestResourceQuotasWithKubectl(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	cs := adminClient(t, c)
	k := newKubectl(t, c, auth.AdminUser)
	const ns = "quota"
	createNamespace(ctx, t, cs, ns)

	wantLines(t, "kubectl create quota", k.ok(ctx, t, "create", "quota", "team", "-n", ns, "--hard=pods=2,requests.cpu=1,limits.cpu=2,count/deployments.apps=1"),
		"resourcequota/team created")
	// Before the controller has counted, the quota constrains nothing.
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod(ns, "early", ""), metav1.CreateOptions{}); err != nil {
		t.Fatalf("pod before the quota's status is known: %v", err)
	}
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "early", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: resourceList("pods", "0", "requests.cpu", "0", "limits.cpu", "0", "count/deployments.apps", "0")}
	if _, err := cs.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A container that states no cpu is refused; one that does is charged.
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod(ns, "bare", ""), metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods "bare" is forbidden: failed quota: team: must specify limits.cpu for: app; requests.cpu for: app`)
	sized := func(name, cpu string) *corev1.Pod {
		p := pod(ns, name, "")
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: resourceList("cpu", cpu)}
		return p
	}
	for _, name := range []string{"one", "two"} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, sized(name, "500m"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("pod %s within the quota: %v", name, err)
		}
	}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, sized("three", "100m"), metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods "three" is forbidden: exceeded quota: team, requested: pods=1,requests.cpu=100m, used: pods=2,requests.cpu=1, limited: pods=2,requests.cpu=1`)
	// kubectl shows the same words.
	res := k.run(ctx, t, nil, "run", "four", "-n", ns, "--image=nginx", "--restart=Never")
	wantLines(t, "kubectl run over quota", res.stderr, `Error from server (Forbidden): pods "four" is forbidden: failed quota: team: must specify limits.cpu for: four; requests.cpu for: four`)

	tables := parseTables(k.ok(ctx, t, "get", "quota", "-n", ns))
	if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"NAME", "AGE", "REQUEST", "LIMIT"}) {
		t.Fatalf("get quota: %+v", tables)
	}
	r := tables[0].row("team")
	if got := tables[0].column(r, "REQUEST"); got != "count/deployments.apps: 0/1, pods: 2/2, requests.cpu: 1/1" {
		t.Errorf("REQUEST = %q", got)
	}
	if got := tables[0].column(r, "LIMIT"); got != "limits.cpu: 1/2" {
		t.Errorf("LIMIT = %q", got)
	}
	out := k.ok(ctx, t, "describe", "quota", "team", "-n", ns)
	wantMatch(t, "kubectl describe quota", out, `(?m)^Name:\s+team$`, `(?m)^Namespace:\s+quota$`, `(?m)^Resource\s+Used\s+Hard$`,
		`(?m)^limits\.cpu\s+1\s+2$`, `(?m)^pods\s+2\s+2$`, `(?m)^requests\.cpu\s+1\s+1$`)

	// Validation, with upstream's words.
	_, err = cs.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: corev1.ResourceQuotaSpec{Hard: resourceList("pods", "-1", "widgets", "1")}}, metav1.CreateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, "")
	for _, want := range []string{`spec.hard[widgets]: Invalid value: "widgets": must be a standard resource for quota`, `spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("invalid quota: %v\nwant it to say %s", err, want)
		}
	}
}

// TestLimitRangesWithKubectl: the LimitRanger gives containers the
// namespace's default requests and limits, refuses what is outside
// min/max with upstream's messages; `kubectl get limits` and `describe
// limitrange` work.
func TestLimitRangesWithKubectl(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	cs := adminClient(t, c)
	k := newKubectl(t, c, auth.AdminUser)
	const ns = "limits"
	createNamespace(ctx, t, cs, ns)

	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:           corev1.LimitTypeContainer,
		Max:            resourceList("cpu", "1", "memory", "512Mi"),
		Min:            resourceList("cpu", "50m"),
		Default:        resourceList("cpu", "500m"),
		DefaultRequest: resourceList("cpu", "250m"),
	}}}}
	created, err := cs.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Defaulted as upstream: memory's default limit and request from its max.
	item := created.Spec.Limits[0]
	if d, r := item.Default[corev1.ResourceMemory], item.DefaultRequest[corev1.ResourceMemory]; d.String() != "512Mi" || r.String() != "512Mi" {
		t.Errorf("memory default %s defaultRequest %s; want 512Mi from max", d.String(), r.String())
	}

	got, err := cs.CoreV1().Pods(ns).Create(ctx, pod(ns, "plain", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := got.Spec.Containers[0].Resources
	if res.Requests.Cpu().String() != "250m" || res.Limits.Cpu().String() != "500m" || res.Limits.Memory().String() != "512Mi" {
		t.Errorf("defaulted resources: %+v", res)
	}
	if a := got.Annotations["kubernetes.io/limit-ranger"]; a != "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app" {
		t.Errorf("annotation: %q", a)
	}
	if got.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("QoS class %s, want Burstable after the defaults", got.Status.QOSClass)
	}

	big := pod(ns, "big", "")
	big.Spec.Containers[0].Resources.Limits = resourceList("cpu", "2")
	_, err = cs.CoreV1().Pods(ns).Create(ctx, big, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods "big" is forbidden: Maximum cpu usage per Container is 1, but limit is 2.`)
	tiny := pod(ns, "tiny", "")
	tiny.Spec.Containers[0].Resources.Requests = resourceList("cpu", "10m", "memory", "1Gi")
	_, err = cs.CoreV1().Pods(ns).Create(ctx, tiny, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden, `pods "tiny" is forbidden: [Minimum cpu usage per Container is 50m, but request is 10m., Maximum memory usage per Container is 512Mi, but request is 1Gi.]`)

	tables := parseTables(k.ok(ctx, t, "get", "limits", "-n", ns))
	if len(tables) != 1 || !slices.Equal(tables[0].header, []string{"NAME", "CREATED AT"}) {
		t.Fatalf("get limits: %+v", tables)
	}
	out := k.ok(ctx, t, "describe", "limitrange", "defaults", "-n", ns)
	wantMatch(t, "kubectl describe limitrange", out, `(?m)^Name:\s+defaults$`,
		`(?m)^Type\s+Resource\s+Min\s+Max\s+Default Request\s+Default Limit\s+Max Limit/Request Ratio$`,
		`(?m)^Container\s+cpu\s+50m\s+1\s+250m\s+500m\s+-$`)

	// Validation, with upstream's words.
	lr = &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "upside-down"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Max: resourceList("cpu", "100m"), Min: resourceList("cpu", "1"),
	}}}}
	_, err = cs.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, "")
	if want := `spec.limits[0].min[cpu]: Invalid value: "1": min value 1 is greater than max value 100m`; !strings.Contains(err.Error(), want) {
		t.Errorf("min above max: %v\nwant it to say %s", err, want)
	}
}
