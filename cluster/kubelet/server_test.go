package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
)

// stubAuthenticator knows three tokens and counts the reviews it answers.
func stubAuthenticator(fx *fixture, reviews *int) *tokenAuthenticator {
	a := newTokenAuthenticator(fx.k.cfg.REST, fx.clock)
	a.review = func(_ context.Context, token string) (authenticationv1.UserInfo, error) {
		*reviews++
		switch token {
		case "admin-token":
			return authenticationv1.UserInfo{Username: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}, nil
		case "viewer-token":
			return authenticationv1.UserInfo{Username: "klab-viewer", Groups: []string{"klab:viewers", "system:authenticated"}}, nil
		case "down":
			return authenticationv1.UserInfo{}, errors.New("connection refused")
		}
		return authenticationv1.UserInfo{}, errUnauthenticated
	}
	return a
}

// stubAuthorizer allows system:masters alone, as the default policy's
// cluster-admin binding would, and records what it was asked.
func stubAuthorizer(fx *fixture, asked *[]accessAttributes) *accessAuthorizer {
	a := newAccessAuthorizer(fx.k.cfg.REST, fx.k.cfg.NodeName, fx.clock)
	a.review = func(_ context.Context, attrs accessAttributes) (bool, string, error) {
		*asked = append(*asked, attrs)
		return slices.Contains(attrs.user.Groups, "system:masters"), "", nil
	}
	return a
}

func serve(h http.Handler, token, target string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestAuthentication(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	reviews := 0
	fx.k.authn = stubAuthenticator(fx, &reviews)
	var asked []accessAttributes
	fx.k.authz = stubAuthorizer(fx, &asked)
	h := fx.k.handler()
	tests := []struct {
		name, token string
		code        int
		body        string
	}{
		{"no token", "", http.StatusUnauthorized, "Unauthorized"},
		{"unknown token", "guess", http.StatusUnauthorized, "Unauthorized"},
		{"API server unreachable", "down", http.StatusUnauthorized, "Unauthorized"},
		{"not in system:masters", "viewer-token", http.StatusForbidden, "Forbidden (user=klab-viewer, verb=get, resource=nodes, subresource(s)=[healthz])"},
		{"system:masters", "admin-token", http.StatusOK, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(h, tt.token, "/healthz")
			if rec.Code != tt.code || strings.TrimSpace(rec.Body.String()) != tt.body {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tt.code, tt.body)
			}
		})
	}

	t.Run("asks for nodes/<subresource> by method", func(t *testing.T) {
		asked = nil
		fx.clock.Step(time.Minute)
		serve(h, "viewer-token", "/containerLogs/default/p/c")
		if len(asked) != 1 || asked[0].verb != "get" || asked[0].subresource != "proxy" || asked[0].user.Username != "klab-viewer" {
			t.Errorf("asked %+v, want one get nodes/proxy for klab-viewer", asked)
		}
	})

	t.Run("answers are cached briefly", func(t *testing.T) {
		reviews = 0
		fx.clock.Step(time.Minute)
		for range 3 {
			serve(h, "admin-token", "/healthz")
			serve(h, "guess", "/healthz")
		}
		if reviews != 2 {
			t.Errorf("%d reviews for two tokens, want 2", reviews)
		}
		fx.clock.Step(authFailCacheTTL + time.Millisecond)
		serve(h, "admin-token", "/healthz")
		serve(h, "guess", "/healthz")
		if reviews != 3 {
			t.Errorf("%d reviews, want the failure re-checked only (3)", reviews)
		}
		fx.clock.Step(authCacheTTL)
		serve(h, "admin-token", "/healthz")
		if reviews != 4 {
			t.Errorf("%d reviews, want the success re-checked (4)", reviews)
		}
	})
}

// logFixture is a pod whose container wrote three lines a second apart.
type logFixture struct {
	*fixture
	pod *v1.Pod
	h   http.Handler
}

func newLogFixture(t *testing.T) *logFixture {
	fx := newFixture(t, critest.Options{})
	reviews := 0
	fx.k.authn = stubAuthenticator(fx, &reviews)
	var asked []accessAttributes
	fx.k.authz = stubAuthorizer(fx, &asked)
	fx.k.podInformer = newPodInformer(fx.client, testNode)
	pod := fx.create(testPod("web", appImage, nil))
	fx.k.podInformer.GetStore().Add(pod)
	w := &podWorker{}
	fx.sync(w, pod)
	c := fx.latest(pod)
	for i, line := range []string{"one", "two", "three"} {
		fx.rt.WriteLogAt(c.ID, fixtureStart.Add(time.Duration(i)*time.Second), line)
	}
	return &logFixture{fixture: fx, pod: pod, h: fx.k.handler()}
}

func (lf *logFixture) logs(query url.Values) (int, string) {
	target := "/containerLogs/default/web/app"
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	rec := serve(lf.h, "admin-token", target)
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		var st metav1.Status
		if json.Unmarshal(rec.Body.Bytes(), &st) == nil {
			body = st.Message
		}
	}
	return rec.Code, body
}

func TestContainerLogsOptions(t *testing.T) {
	lf := newLogFixture(t)
	lf.clock.SetTime(fixtureStart.Add(2 * time.Second))
	q := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	tests := []struct {
		name  string
		query url.Values
		code  int
		body  string
	}{
		{"everything", nil, 200, "one\ntwo\nthree\n"},
		{"tailLines", q("tailLines", "2"), 200, "two\nthree\n"},
		{"tailLines 0", q("tailLines", "0"), 200, ""},
		{"limitBytes", q("limitBytes", "6"), 200, "one\ntw"},
		{"sinceTime", q("sinceTime", fixtureStart.Add(time.Second).Format(time.RFC3339)), 200, "two\nthree\n"},
		{"sinceSeconds", q("sinceSeconds", "1"), 200, "two\nthree\n"},
		{"timestamps", q("timestamps", "true", "tailLines", "1"), 200, "2026-03-01T12:00:02Z three\n"},
		{"tail and limit", q("tailLines", "2", "limitBytes", "5"), 200, "two\nt"},
		{"no previous container", q("previous", "true"), 400, `previous terminated container "app" in pod "web" not found`},
		{"sinceTime and sinceSeconds", q("sinceSeconds", "5", "sinceTime", fixtureStart.Format(time.RFC3339)), 400, "at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{"negative tailLines", q("tailLines", "-1"), 400, "tailLines: Invalid value: must be greater than or equal to 0"},
		{"bad follow", q("follow", "maybe"), 400, `follow: invalid value "maybe": must be true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := lf.logs(tt.query)
			if code != tt.code || body != tt.body {
				t.Errorf("got %d %q, want %d %q", code, body, tt.code, tt.body)
			}
		})
	}

	t.Run("unknown pod and container", func(t *testing.T) {
		if rec := serve(lf.h, "admin-token", "/containerLogs/default/nope/app"); rec.Code != http.StatusNotFound {
			t.Errorf("unknown pod: %d %s", rec.Code, rec.Body)
		}
		if rec := serve(lf.h, "admin-token", "/containerLogs/default/web/nope"); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `container \"nope\" not found in pod \"web\"`) {
			t.Errorf("unknown container: %d %s", rec.Code, rec.Body)
		}
	})
}

func TestContainerLogsPrevious(t *testing.T) {
	lf := newLogFixture(t)
	first := lf.latest(lf.pod)
	lf.rt.Exit(first.ID, 1)
	w := &podWorker{admitted: true}
	lf.sync(w, lf.pod) // restarts at once
	second := lf.latest(lf.pod)
	lf.rt.WriteLog(second.ID, "after restart")
	if code, body := lf.logs(url.Values{"previous": {"true"}}); code != 200 || body != "one\ntwo\nthree\n" {
		t.Errorf("previous: %d %q", code, body)
	}
	if code, body := lf.logs(nil); code != 200 || body != "after restart\n" {
		t.Errorf("current: %d %q", code, body)
	}
	// In CrashLoopBackOff the current log is the crashed container's.
	lf.rt.Exit(second.ID, 1)
	lf.sync(w, lf.pod)
	if cs := lf.container(lf.pod); cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonCrashLoopBackOff {
		t.Fatalf("not backing off: %+v", cs.State)
	}
	if code, body := lf.logs(nil); code != 200 || body != "after restart\n" {
		t.Errorf("during back-off: %d %q", code, body)
	}
}

func TestContainerLogsWaiting(t *testing.T) {
	fx := newFixture(t, critest.Options{})
	reviews := 0
	fx.k.authn = stubAuthenticator(fx, &reviews)
	var asked []accessAttributes
	fx.k.authz = stubAuthorizer(fx, &asked)
	fx.k.podInformer = newPodInformer(fx.client, testNode)
	pod := fx.create(testPod("web", "remote/app:v2", nil))
	fx.k.podInformer.GetStore().Add(pod)
	fx.sync(&podWorker{}, pod)
	rec := serve(fx.k.handler(), "admin-token", "/containerLogs/default/web/app")
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `container \"app\" in pod \"web\" is waiting to start: image can't be pulled`) {
		t.Errorf("got %d %s", rec.Code, rec.Body)
	}
}

func TestContainerLogsFollow(t *testing.T) {
	lf := newLogFixture(t)
	srv := httptest.NewServer(lf.h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/containerLogs/default/web/app?follow=true&tailLines=1", nil)
	req.Header.Set("Authorization", "Bearer admin-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	read := func(n int) string {
		buf := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		return string(buf)
	}
	if got := read(len("three\n")); got != "three\n" {
		t.Fatalf("first read %q", got)
	}
	c := lf.latest(lf.pod)
	lf.rt.WriteLog(c.ID, "four")
	if got := read(len("four\n")); got != "four\n" {
		t.Fatalf("followed line %q", got)
	}
	lf.rt.Exit(c.ID, 0)
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) != 0 {
		t.Errorf("after exit: %q %v", rest, err)
	}
}

func TestDebugStatusAndEvents(t *testing.T) {
	lf := newLogFixture(t)
	lf.k.workers.update(lf.get(lf.pod))
	rec := serve(lf.h, "admin-token", "/debug/klab/status")
	var st Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Node != testNode || len(st.Pods) != 1 || st.Pods[0].Name != "web" || st.Pods[0].Phase != v1.PodRunning ||
		len(st.Pods[0].Containers) != 1 || st.Pods[0].Containers[0].State != "running" {
		t.Errorf("status = %+v", st)
	}

	srv := httptest.NewServer(lf.h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/debug/klab/events", nil)
	req.Header.Set("Authorization", "Bearer admin-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	var steps []string
	for {
		var ev LifecycleEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("after %v: %v", steps, err)
		}
		steps = append(steps, ev.Step+" "+ev.Reason)
		if ev.Step == StepEvent && ev.Reason == eventStarted {
			if ev.Pod != "web" || ev.Container != "app" || ev.Message != "Container started" {
				t.Errorf("started event = %+v", ev)
			}
			break
		}
	}
}

// TestSubresource: the kubelet's paths map to the nodes subresources
// upstream's kubelet authorizes them as.
func TestSubresource(t *testing.T) {
	for path, want := range map[string]string{
		"/healthz": "healthz", "/logs/": "log", "/stats/summary": "stats", "/metrics": "metrics",
		"/metrics/cadvisor": "metrics", "/configz": "configz", "/spec/": "spec",
		"/exec/ns/pod/c": "proxy", "/containerLogs/ns/pod/c": "proxy", "/statsx": "proxy",
	} {
		if got := subresource(path); got != want {
			t.Errorf("subresource(%q) = %q, want %q", path, got, want)
		}
	}
}
