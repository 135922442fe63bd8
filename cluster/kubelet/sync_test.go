package kubelet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
	"github.com/klab-dev/klab/cluster/timing"
)

// TestCrashLoopBackOffSequence: the first restart is immediate, then the
// kubelet waits 10 s, 20 s, 40 s ... up to 5 min, each wait shown in the
// CrashLoopBackOff message.
func TestCrashLoopBackOffSequence(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	pod := fx.create(testPod("crash", appImage, nil))
	w := &podWorker{}
	fx.sync(w, pod)
	if c := fx.latest(pod); c.State != cri.StateRunning || c.Attempt != 0 {
		t.Fatalf("first container = %+v", c)
	}
	var waits []string
	for range 8 {
		fx.rt.Exit(fx.latest(pod).ID, 1)
		res := fx.sync(w, pod)
		if c := fx.latest(pod); c.State == cri.StateRunning {
			waits = append(waits, "0s") // restarted at once
			continue
		}
		cs := fx.container(pod)
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonCrashLoopBackOff {
			t.Fatalf("container state = %+v", cs.State)
		}
		wait, _, _ := strings.Cut(strings.TrimPrefix(cs.State.Waiting.Message, "back-off "), " ")
		waits = append(waits, wait)
		if want := fmt.Sprintf("back-off %s restarting failed container=app pod=crash_default(crash-uid)", res.requeue); cs.State.Waiting.Message != want {
			t.Errorf("message = %q, want %q", cs.State.Waiting.Message, want)
		}
		if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
			t.Errorf("last state = %+v", cs.LastTerminationState)
		}
		fx.clock.Step(res.requeue - time.Millisecond)
		fx.sync(w, pod)
		if fx.latest(pod).State == cri.StateRunning {
			t.Fatalf("restarted before the back-off of %v ended", res.requeue)
		}
		fx.clock.Step(time.Millisecond)
		fx.sync(w, pod)
		if c := fx.latest(pod); c.State != cri.StateRunning {
			t.Fatalf("not restarted after the back-off: %+v", c)
		}
	}
	want := []string{"0s", "10s", "20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s"}
	if diff := cmp.Diff(want, waits); diff != "" {
		t.Errorf("back-off sequence (-want +got):\n%s", diff)
	}
	if got := fx.container(pod).RestartCount; got != 8 {
		t.Errorf("restart count = %d, want 8", got)
	}
	events := fx.drain()
	if !hasEvent(events, "Warning BackOff Back-off restarting failed container app in pod crash_default(crash-uid)") {
		t.Errorf("no BackOff event in %v", events)
	}
}

// TestBackOffScalesWithSpeed: the lab's speed divides the back-off.
func TestBackOffScalesWithSpeed(t *testing.T) {
	tests := []struct {
		speed timing.Speed
		want  time.Duration
	}{{1, 10 * time.Second}, {10, time.Second}, {100, 100 * time.Millisecond}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.speed), func(t *testing.T) {
			fx := newFixture(t, critest.Options{})
			fx.k.cfg.Speed = tt.speed
			k := newKubelet(fx.k.cfg, fx.client, fx.clock)
			k.rec.events = fx.events
			k.services = fx.k.services // synced by the fixture
			t.Cleanup(k.cancel)
			pod := fx.create(testPod("crash", appImage, nil))
			w := &podWorker{}
			for range 2 {
				if _, err := k.syncPod(context.Background(), w, fx.get(pod)); err != nil {
					t.Fatal(err)
				}
				fx.rt.Exit(fx.latest(pod).ID, 1)
			}
			res, err := k.syncPod(context.Background(), w, fx.get(pod))
			if err != nil {
				t.Fatal(err)
			}
			if res.requeue != tt.want {
				t.Errorf("first back-off = %v, want %v", res.requeue, tt.want)
			}
		})
	}
}

func TestRestartPolicy(t *testing.T) {
	tests := []struct {
		policy   v1.RestartPolicy
		exitCode int
		restart  bool
		phase    v1.PodPhase
	}{
		{v1.RestartPolicyAlways, 0, true, v1.PodRunning},
		{v1.RestartPolicyAlways, 1, true, v1.PodRunning},
		{v1.RestartPolicyOnFailure, 0, false, v1.PodSucceeded},
		{v1.RestartPolicyOnFailure, 1, true, v1.PodRunning},
		{v1.RestartPolicyNever, 0, false, v1.PodSucceeded},
		{v1.RestartPolicyNever, 1, false, v1.PodFailed},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s exit %d", tt.policy, tt.exitCode), func(t *testing.T) {
			fx := newFixture(t, critest.Options{})
			pod := fx.create(testPod("p", appImage, func(p *v1.Pod) { p.Spec.RestartPolicy = tt.policy }))
			w := &podWorker{}
			fx.sync(w, pod)
			first := fx.latest(pod)
			fx.rt.Exit(first.ID, tt.exitCode)
			res := fx.sync(w, pod)
			restarted := fx.latest(pod).ID != first.ID
			if restarted != tt.restart {
				t.Errorf("restarted = %v, want %v", restarted, tt.restart)
			}
			if got := fx.get(pod).Status.Phase; got != tt.phase {
				t.Errorf("phase = %s, want %s", got, tt.phase)
			}
			if res.terminal != isTerminal(tt.phase) {
				t.Errorf("terminal = %v", res.terminal)
			}
			if res.terminal {
				pods, _ := listRuntimePods(context.Background(), fx.rt)
				if pods[pod.UID].readySandbox() != nil {
					t.Error("a finished pod keeps its sandbox")
				}
			}
		})
	}
}

func TestInitContainersRunInOrder(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	pod := fx.create(testPod("init", appImage, func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "first", Image: appImage}, {Name: "second", Image: appImage}}
	}))
	w := &podWorker{}
	step := func() []string {
		fx.sync(w, pod)
		var running []string
		for _, name := range []string{"first", "second", "app"} {
			if c, ok := fx.rt.Find(string(pod.UID), name); ok && c.State == cri.StateRunning {
				running = append(running, name)
			}
		}
		return running
	}
	if got := step(); !cmp.Equal(got, []string{"first"}) {
		t.Fatalf("running %v, want [first]", got)
	}
	if fx.get(pod).Status.Phase != v1.PodPending {
		t.Errorf("phase while initialising = %s", fx.get(pod).Status.Phase)
	}
	c, _ := fx.rt.Find(string(pod.UID), "first")
	fx.rt.Exit(c.ID, 0)
	if got := step(); !cmp.Equal(got, []string{"second"}) {
		t.Fatalf("running %v, want [second]", got)
	}
	c, _ = fx.rt.Find(string(pod.UID), "second")
	fx.rt.Exit(c.ID, 0)
	if got := step(); !cmp.Equal(got, []string{"app"}) {
		t.Fatalf("running %v, want [app]", got)
	}
	st := fx.get(pod).Status
	if st.Phase != v1.PodRunning || condition(st, v1.PodInitialized).Status != v1.ConditionTrue || !st.InitContainerStatuses[1].Ready {
		t.Errorf("status after init = %+v", st)
	}
}

func TestGracefulTermination(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	pod := fx.create(testPod("web", appImage, nil))
	fx.sync(&podWorker{}, pod)
	c := fx.latest(pod)

	deleting := fx.get(pod)
	now := metav1.NewTime(fx.clock.Now())
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &now, ptr.To[int64](7)
	if _, err := fx.client.CoreV1().Pods("default").Update(context.Background(), deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.client.ClearActions()
	if err := fx.k.terminatePod(context.Background(), fx.get(pod), false); err != nil {
		t.Fatal(err)
	}
	if !containsCall(fx.rt.Calls(), fmt.Sprintf("StopContainer [%s 7s]", c.ID)) {
		t.Errorf("not stopped with the deletion's grace period: %v", fx.rt.Calls())
	}
	var statusPatched, deleted bool
	for _, a := range fx.client.Actions() {
		switch a := a.(type) {
		case k8stesting.PatchAction:
			statusPatched = a.GetSubresource() == "status" && strings.Contains(string(a.GetPatch()), `"phase":"Succeeded"`)
		case k8stesting.DeleteAction:
			opts := a.GetDeleteOptions()
			deleted = statusPatched && opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds == 0 &&
				opts.Preconditions != nil && *opts.Preconditions.UID == pod.UID
		}
	}
	if !statusPatched || !deleted {
		t.Errorf("want a final status patch, then a delete with grace 0 and the UID precondition; actions: %v", fx.client.Actions())
	}
	if pods, _ := listRuntimePods(context.Background(), fx.rt); pods[pod.UID] != nil {
		t.Error("sandbox and containers were not removed")
	}
	if events := fx.drain(); !hasEvent(events, "Normal Killing Stopping container app") {
		t.Errorf("no Killing event in %v", events)
	}
}

func TestAdmission(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("3")}
	req := func(cpu, mem string) *v1.Pod {
		return testPod("p", appImage, func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
		})
	}
	tests := []struct {
		name   string
		pod    *v1.Pod
		others []*v1.Pod
		want   *admissionFailure
	}{
		{"fits", req("1", "512Mi"), []*v1.Pod{req("500m", "256Mi")}, nil},
		{"out of cpu", req("1500m", "1Mi"), []*v1.Pod{req("1", "1Mi")}, &admissionFailure{"OutOfcpu", "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"}},
		{"out of memory", req("1m", "1Gi"), []*v1.Pod{req("1m", "1Mi")}, &admissionFailure{"OutOfmemory", "Node didn't have enough resource: memory, requested: 1073741824, used: 1048576, capacity: 1073741824"}},
		{"out of pods", req("1m", "1Mi"), []*v1.Pod{req("0", "0"), req("0", "0"), req("0", "0")}, &admissionFailure{"OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"}},
		{"an init container asks more than the containers", testPod("p", appImage, func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}}}}
		}), nil, &admissionFailure{"OutOfcpu", "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, admit(tt.pod, tt.others, alloc)); diff != "" {
				t.Errorf("admit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRejectedPodFails(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	pod := fx.create(testPod("big", appImage, func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")}
	}))
	res := fx.sync(&podWorker{}, pod)
	st := fx.get(pod).Status
	if !res.terminal || st.Phase != v1.PodFailed || st.Reason != "OutOfcpu" ||
		st.Message != "Pod was rejected: Node didn't have enough resource: cpu, requested: 8000, used: 0, capacity: 2000" {
		t.Errorf("status = %+v", st)
	}
	if len(fx.rt.Calls()) != 0 && containsCall(fx.rt.Calls(), "RunPodSandbox") {
		t.Errorf("a rejected pod got a sandbox: %v", fx.rt.Calls())
	}
}

func TestSandboxFailure(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	fx.rt.Fail(critest.OpRunPodSandbox, errors.New("no IPs left"))
	pod := fx.create(testPod("p", appImage, nil))
	_, err := fx.k.syncPod(context.Background(), &podWorker{}, fx.get(pod))
	if err == nil {
		t.Fatal("sync succeeded without a sandbox")
	}
	if events := fx.drain(); !hasEvent(events, "Warning FailedCreatePodSandBox Failed to create pod sandbox: no IPs left") {
		t.Errorf("events = %v", events)
	}
	st := fx.get(pod).Status
	if st.Phase != v1.PodPending || condition(st, v1.PodReadyToStartContainers).Status != v1.ConditionFalse {
		t.Errorf("status = %+v", st)
	}
}

func TestStatusWrittenOnlyOnChange(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	pod := fx.create(testPod("p", appImage, nil))
	w := &podWorker{}
	fx.sync(w, pod)
	fx.client.ClearActions()
	fx.sync(w, pod)
	fx.sync(w, pod)
	for _, a := range fx.client.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("an unchanged pod's status was written: %v", a)
		}
	}
	fx.rt.Exit(fx.latest(pod).ID, 3)
	fx.sync(w, pod)
	patches := 0
	for _, a := range fx.client.Actions() {
		if a.GetVerb() == "patch" {
			patches++
		}
	}
	if patches != 1 {
		t.Errorf("%d status writes after a restart, want 1", patches)
	}
}

func TestContainerConfig(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	var got cri.ContainerConfig
	fx.rt = critest.New(critest.Options{Images: []string{appImage}, Now: fx.clock.Now, Behave: func(c cri.ContainerConfig) critest.Behavior {
		got = c
		return critest.Behavior{}
	}})
	fx.k.runtime = fx.rt
	pod := fx.create(testPod("cfg", appImage, func(p *v1.Pod) {
		c := &p.Spec.Containers[0]
		c.Command = []string{"/app", "--name=$(POD_NAME)"}
		c.Args = []string{"$(GREETING) $$(GREETING) $(MISSING)"}
		c.Env = []v1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "GREETING", Value: "hi $(POD_NAME)"},
		}
		c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi"), v1.ResourceCPU: resource.MustParse("250m")}
	}))
	fx.sync(&podWorker{}, pod)
	want := cri.ContainerConfig{
		Name: "app", Image: appImage,
		Command: []string{"/app", "--name=cfg"}, Args: []string{"hi cfg $(GREETING) $(MISSING)"},
		Env:         []cri.KeyValue{{Key: "POD_NAME", Value: "cfg"}, {Key: "GREETING", Value: "hi cfg"}},
		MemoryLimit: 64 << 20, MilliCPULimit: 250,
	}
	got.Labels = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("container config (-want +got):\n%s", diff)
	}
}
