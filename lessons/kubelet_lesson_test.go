package lessons

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/assets/i18n"
)

// The kubelet lesson's readiness steps, judged on the observations the
// live feed makes of them. A pod with a readiness probe is among its
// Service's notReadyAddresses from the moment it starts until its first
// probe succeeds, so "ready is not ready" alone would pass the readiness
// step before the student made the app fail, and leave the next step
// (back in the endpoints) passing with nothing done. klab lessons check
// caught that; these cases keep it caught without a cluster.

var endpointsGR = schema.GroupResource{Resource: "endpoints"}

// webEndpoints is Service web's Endpoints with the named pods ready and
// not ready.
func webEndpoints(ready, notReady []string) ObjectObserved {
	addresses := func(names []string) []any {
		var out []any
		for _, n := range names {
			out = append(out, map[string]any{"ip": "10.0.0.1", "targetRef": map[string]any{"kind": "Pod", "name": n}})
		}
		return out
	}
	subset := map[string]any{"ports": []any{map[string]any{"port": int64(8080)}}}
	if len(ready) > 0 {
		subset["addresses"] = addresses(ready)
	}
	if len(notReady) > 0 {
		subset["notReadyAddresses"] = addresses(notReady)
	}
	return ObjectObserved{Resource: endpointsGR, Namespace: "default", Name: "web", Object: map[string]any{
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"subsets":  []any{subset},
	}}
}

// readyPod is pod ready, labelled app=web, with its container's restarts.
func readyPod(restarts int64) ObjectObserved {
	o := podObject("ready", "worker-1", "Running", web)
	o.Object["status"].(map[string]any)["containerStatuses"] = []any{map[string]any{"name": "ready", "restartCount": restarts}}
	return o
}

// probeFailed is the Event the kubelet records for a failed readiness
// probe; code 503 is what the app's POST /fail makes /readyz answer.
func probeFailed(message string) EventObserved {
	return EventObserved{Namespace: "default", Reason: "Unhealthy", Type: "Warning", Kind: "Pod", Name: "ready", Message: message}
}

func TestKubeletLessonReadinessSteps(t *testing.T) {
	all, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var lesson *Lesson
	for _, l := range all {
		if l.ID == "kubelet" {
			lesson = l
		}
	}
	if lesson == nil {
		t.Fatal("no kubelet lesson")
	}
	step := func(id string) *Step {
		s, _ := lesson.Step(id)
		if s == nil {
			t.Fatalf("kubelet lesson has no step %s", id)
		}
		return s
	}
	readiness, again := step("readiness"), step("ready-again")
	starting := webEndpoints([]string{"web-1", "web-2"}, []string{"ready"})
	serving := webEndpoints([]string{"web-1", "web-2", "ready"}, nil)

	cases := []struct {
		name   string
		step   *Step
		before []Observation
		after  []Observation
		pass   bool
	}{
		{name: "a pod not ready yet is not the act", step: readiness,
			after: []Observation{readyPod(0), starting, probeFailed(`Readiness probe failed: Get "http://10.0.0.1:8080/readyz": dial tcp: connection refused`)}},
		{name: "ready again before the app failed", step: readiness,
			after: []Observation{readyPod(0), starting, serving}},
		{name: "the app made to fail", step: readiness, before: []Observation{readyPod(0), serving},
			after: []Observation{probeFailed("Readiness probe failed: HTTP probe failed with statuscode: 503"), starting}, pass: true},
		{name: "a restarted container is a liveness answer", step: readiness, before: []Observation{serving},
			after: []Observation{readyPod(1), probeFailed("Readiness probe failed: HTTP probe failed with statuscode: 503"), starting}},
		{name: "still not ready when the recovery step begins", step: again, before: []Observation{readyPod(0), starting}},
		{name: "recovered", step: again, before: []Observation{readyPod(0), starting}, after: []Observation{serving}, pass: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewEvaluator()
			for _, o := range c.before {
				e.Observe(o)
			}
			e.Begin(c.step.Check)
			for _, o := range c.after {
				e.Observe(o)
			}
			if v := e.Verdict(); v.Passed != c.pass {
				t.Errorf("passed = %v, want %v; the check saw:\n%s", v.Passed, c.pass, v.Text(i18n.English))
			}
		})
	}
}
