package kubelet

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
)

// TestImagePullBackOff: a failing pull shows ErrImagePull, then
// ImagePullBackOff until the back-off ends, doubling each time.
func TestImagePullBackOff(t *testing.T) {
	const image = "remote/app:v2"
	fx := newFixture(t, critest.Options{})
	pod := fx.create(testPod("pull", image, nil))
	w := &podWorker{}

	res := fx.sync(w, pod)
	cs := fx.container(pod)
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonErrImagePull || !strings.Contains(cs.State.Waiting.Message, "klab runs offline") {
		t.Fatalf("after the first pull: %+v", cs.State)
	}
	if res.requeue != 10*time.Second {
		t.Errorf("retry in %v, want 10s", res.requeue)
	}
	events := fx.drain()
	for _, want := range []string{
		`Normal Pulling Pulling image "remote/app:v2"`,
		`Warning Failed Failed to pull image "remote/app:v2": pull image "remote/app:v2": klab runs offline`,
		`Warning Failed Error: ErrImagePull`,
	} {
		if !hasEvent(events, want) {
			t.Errorf("no event %q in %v", want, events)
		}
	}

	fx.clock.Step(time.Second)
	res = fx.sync(w, pod)
	cs = fx.container(pod)
	wantMsg := `Back-off pulling image "remote/app:v2": ErrImagePull: pull image "remote/app:v2": klab runs offline`
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonImagePullBackOff || !strings.HasPrefix(cs.State.Waiting.Message, wantMsg) {
		t.Fatalf("during the back-off: %+v", cs.State)
	}
	if res.requeue != 9*time.Second {
		t.Errorf("retry in %v, want 9s", res.requeue)
	}
	events = fx.drain()
	if !hasEvent(events, `Normal BackOff Back-off pulling image "remote/app:v2"`) || !hasEvent(events, "Warning Failed Error: ImagePullBackOff") {
		t.Errorf("events during back-off: %v", events)
	}
	if pulls := countCalls(fx.rt.Calls(), "PullImage"); pulls != 1 {
		t.Errorf("%d pulls during the back-off, want 1", pulls)
	}

	fx.clock.Step(9 * time.Second)
	res = fx.sync(w, pod)
	if res.requeue != 20*time.Second || fx.container(pod).State.Waiting.Reason != reasonErrImagePull {
		t.Errorf("second failure: retry in %v, state %+v", res.requeue, fx.container(pod).State)
	}

	fx.rt.SetPullable(image, true, nil)
	fx.clock.Step(20 * time.Second)
	fx.sync(w, pod)
	if cs := fx.container(pod); cs.State.Running == nil {
		t.Fatalf("after a good pull: %+v", cs.State)
	}
	if events := fx.drain(); !hasEvent(events, `Normal Pulled Successfully pulled image "remote/app:v2" in `) {
		t.Errorf("no Pulled event in %v", events)
	}
}

func countCalls(calls []string, op string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, op+" ") || c == op {
			n++
		}
	}
	return n
}

func TestPullPolicy(t *testing.T) {
	tests := []struct {
		name    string
		image   string
		policy  v1.PullPolicy
		present bool
		pulls   int
		reason  string // waiting reason, "" when it runs
		event   string
	}{
		{"IfNotPresent uses the node's image", "app:v1", v1.PullIfNotPresent, true, 0, "", `Normal Pulled Container image "app:v1" already present on machine`},
		{"Always pulls even when present", "app:v1", v1.PullAlways, true, 1, "", `Normal Pulling Pulling image "app:v1"`},
		{"Never with the image runs", "app:v1", v1.PullNever, true, 0, "", `Normal Pulled Container image "app:v1" already present on machine`},
		{"Never without the image", "app:v1", v1.PullNever, false, 0, reasonErrImageNeverPull, `Warning ErrImageNeverPull Container image "app:v1" is not present with pull policy of Never`},
		{"default for latest is Always", "app:latest", "", true, 1, "", `Normal Pulling`},
		{"default for an untagged image is Always", "app", "", true, 1, "", `Normal Pulling`},
		{"default for a tag is IfNotPresent", "registry:5000/app:v1", "", true, 0, "", `Normal Pulled Container image`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var images []string
			if tt.present {
				images = []string{tt.image}
			}
			fx := newFixture(t, critest.Options{Images: append(images, "unused"), Pullable: images})
			pod := fx.create(testPod("p", tt.image, func(p *v1.Pod) { p.Spec.Containers[0].ImagePullPolicy = tt.policy }))
			fx.sync(&podWorker{}, pod)
			cs := fx.container(pod)
			reason := ""
			if cs.State.Waiting != nil {
				reason = cs.State.Waiting.Reason
			}
			if reason != tt.reason {
				t.Errorf("waiting reason %q, want %q", reason, tt.reason)
			}
			if got := countCalls(fx.rt.Calls(), "PullImage"); got != tt.pulls {
				t.Errorf("%d pulls, want %d", got, tt.pulls)
			}
			if events := fx.drain(); !hasEvent(events, tt.event) {
				t.Errorf("no event %q in %v", tt.event, events)
			}
		})
	}
}

// TestStandIn: a tutorial image that cannot be pulled runs as klab's
// stand-in, announced by an event; the container runs, with no back-off.
func TestStandIn(t *testing.T) {
	for _, tt := range []struct{ image, what string }{
		{"nginx", "it serves a welcome page on port 80"},
		{"busybox:1.36", "it runs the container's command in klab's shell"},
	} {
		t.Run(tt.image, func(t *testing.T) {
			fx := newFixture(t, critest.Options{})
			pod := fx.create(testPod("p", tt.image, func(p *v1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "" }))
			fx.sync(&podWorker{}, pod)
			if cs := fx.container(pod); cs.State.Running == nil {
				t.Fatalf("state %+v, want running", cs.State)
			}
			events := fx.drain()
			want := `Normal StandIn Running klab's stand-in for image "` + tt.image + `" (` + tt.what + `), because the image could not be pulled: `
			if !hasEvent(events, want) || !hasEvent(events, `Normal Pulling Pulling image "`+tt.image+`"`) {
				t.Errorf("no StandIn event %q in %v", want, events)
			}
			if hasEvent(events, "Warning Failed") {
				t.Errorf("a stand-in is no failure: %v", events)
			}
		})
	}
}
