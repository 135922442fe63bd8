package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// The write paths other than create: PATCH in each of the four patch
// types, and PUT, each with an arbitrary query string, against objects
// that exist. Like FuzzDecodeCreate, the handler is called in-process and
// the answer must be a 2xx with an object of the target's kind or a 4xx
// Status: never a panic, never a 5xx, never a body that is not JSON.

// fuzzWriteTargets are the objects the write fuzzers patch and replace;
// fuzzWriteFixtures creates them.
var fuzzWriteTargets = []struct{ path, apiVersion, kind string }{
	{"/api/v1/namespaces/default/configmaps/fuzz-cm", "v1", "ConfigMap"},
	{"/api/v1/namespaces/default/pods/fuzz-wpod", "v1", "Pod"},
	{"/api/v1/namespaces/default/services/fuzz-svc", "v1", "Service"},
	{"/apis/apps/v1/namespaces/default/deployments/fuzz-dep", "apps/v1", "Deployment"},
	{"/apis/apps/v1/namespaces/default/deployments/fuzz-dep/scale", "autoscaling/v1", "Scale"},
	{"/api/v1/namespaces/default/pods/fuzz-wpod/status", "v1", "Pod"},
}

// fuzzPatchTypes are the media types of PATCH bodies; the last ones the
// server must refuse with 415.
var fuzzPatchTypes = []string{
	"application/json-patch+json",
	"application/merge-patch+json",
	"application/strategic-merge-patch+json",
	"application/apply-patch+yaml",
	"application/json",
	"",
	"application/strategic-merge-patch+json; charset", // malformed parameters
}

// fuzzWriteServer starts a server with the objects the write fuzzers
// target and returns a function that sends one request to it.
func fuzzWriteServer(f *testing.F) func(method, path, query, contentType string, body []byte) (int, []byte) {
	c := apiservertest.New(f, apiservertest.Options{})
	token, ok := c.PKI.Token(auth.AdminUser)
	if !ok {
		f.Fatal("no admin token")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := adminClient(f, c)
	labels := map[string]string{"app": "fuzz"}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", "fuzz-cm", map[string]string{"a": "1", "b": "2"}), metav1.CreateOptions{}); err != nil {
		f.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("default", "fuzz-wpod", ""), metav1.CreateOptions{}); err != nil {
		f.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "fuzz-svc"}, Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		f.Fatal(err)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "fuzz-dep"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("")}}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		f.Fatal(err)
	}
	return func(method, path, query, contentType string, body []byte) (int, []byte) {
		reqCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(reqCtx, method, path, bytes.NewReader(body))
		// The query goes in raw, as a client's bytes would arrive.
		req.URL.RawQuery = query
		req.RequestURI = req.URL.RequestURI()
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/json")
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		c.Servers[0].ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes()
	}
}

// checkWriteAnswer fails the test unless the answer is a 2xx object of the
// target's kind or a well-formed 4xx Status.
func checkWriteAnswer(t *testing.T, what string, code int, resp []byte, apiVersion, kind string) {
	t.Helper()
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(resp, &head); err != nil {
		t.Fatalf("%s: %d with a body that is not JSON: %v\n%q", what, code, err, resp)
	}
	if code == http.StatusInternalServerError && upstreamApply500(resp) {
		return
	}
	if code >= 500 || code < 200 || (code >= 300 && code < 400) {
		t.Fatalf("%s: %d; want 2xx or 4xx\nanswer %s", what, code, resp)
	}
	if isSuccess(code) {
		if head.APIVersion != apiVersion || head.Kind != kind {
			t.Fatalf("%s: %d with %s %s; want %s %s", what, code, head.APIVersion, head.Kind, apiVersion, kind)
		}
		return
	}
	var st metav1.Status
	if err := json.Unmarshal(resp, &st); err != nil {
		t.Fatalf("%s: %d answer is not a Status: %v\n%s", what, code, err, resp)
	}
	if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || int(st.Code) != code || st.Reason == "" || st.Message == "" {
		t.Fatalf("%s: %d with Status %+v; want kind Status, Failure, code %d, a reason and a message", what, code, st, code)
	}
}

// upstreamApply500 reports whether a 500 is the one upstream answers a
// server-side apply whose body does not fit the kind's schema with (a field
// of the wrong type, say): the structured-merge type converter's error
// reaches the handler unwrapped (k8s.io/apimachinery managedfields
// structuredmerge.go, "failed to create typed patch object"), so upstream's
// API server answers 500 with no reason, and klab keeps that answer.
func upstreamApply500(resp []byte) bool {
	var st metav1.Status
	if err := json.Unmarshal(resp, &st); err != nil {
		return false
	}
	return st.Kind == "Status" && st.Code == http.StatusInternalServerError && st.Reason == "" &&
		(strings.HasPrefix(st.Message, "failed to create typed patch object (") || strings.HasPrefix(st.Message, "failed to create typed live object ("))
}

// fuzzQuery turns the fuzzer's query string into one that always carries
// dryRun=All unless real is set, so that most inputs leave the targets as
// they are and the corpus stays meaningful across runs. A query with bytes
// no HTTP request line can carry (controls, spaces, a fragment) is skipped:
// the server's request parser refuses those before any handler runs.
func fuzzQuery(t *testing.T, query string, real bool) string {
	for _, r := range query {
		if r <= ' ' || r == 0x7f || r == '#' {
			t.Skip("query cannot be sent in a request line")
		}
	}
	if !real {
		if query != "" {
			query += "&"
		}
		query += "dryRun=All"
	}
	return query
}

// FuzzPatch sends arbitrary patch bodies of each patch type, with
// arbitrary query parameters, to existing objects and subresources.
func FuzzPatch(f *testing.F) {
	send := fuzzWriteServer(f)
	const (
		cm, pd, svc, dep, scale, podStatus = 0, 1, 2, 3, 4, 5
		jsonPatch, merge, smp, apply       = 0, 1, 2, 3
	)
	seeds := []struct {
		target, patchType uint8
		query             string
		real              bool
		body              string
	}{
		{cm, jsonPatch, "", false, `[{"op":"add","path":"/data/c","value":"3"}]`},
		{cm, jsonPatch, "", true, `[{"op":"replace","path":"/data/a","value":"x"}]`},
		{cm, jsonPatch, "", false, `[{"op":"remove","path":"/data"}]`},
		{cm, jsonPatch, "", false, `[{"op":"test","path":"/data/a","value":"nope"}]`},
		{cm, jsonPatch, "", false, `[{"op":"move","from":"/data/a","path":"/data/z"}]`},
		{cm, jsonPatch, "", false, `[{"op":"copy","from":"/data","path":"/data/d"}]`},
		{cm, jsonPatch, "", false, `[{"op":"copy","from":"/metadata","path":"/data/m"},{"op":"copy","from":"/data","path":"/data/n"}]`},
		{cm, jsonPatch, "", false, `[{"op":"add","path":"/data/-","value":1}]`},
		{cm, jsonPatch, "", false, `[{"op":"add","path":"","value":{}}]`},
		{cm, jsonPatch, "", false, `[{"op":"replace","path":"/metadata/name","value":"other"}]`},
		{cm, jsonPatch, "", false, `[{"op":"bogus"}]`},
		{cm, jsonPatch, "", false, `[{"op":"add"}]`},
		{cm, jsonPatch, "", false, `[{"op":"add","path":"/data/~2","value":"x"}]`},
		{cm, jsonPatch, "", false, `{}`},
		{cm, jsonPatch, "", false, `[]`},
		{cm, jsonPatch, "", false, `null`},
		{cm, jsonPatch, "", false, ``},
		{cm, jsonPatch, "", false, `[` + strings.Repeat(`{"op":"test","path":"/data/a","value":"1"},`, 10000) + `{"op":"test","path":"/data/a","value":"1"}]`},
		{dep, jsonPatch, "", false, `[{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"b","image":"b"}}]`},
		{dep, jsonPatch, "", false, `[{"op":"remove","path":"/spec/template/spec/containers/5"}]`},
		{dep, jsonPatch, "", false, `[{"op":"add","path":"/spec/template/spec/containers/-1","value":{}}]`},
		{dep, jsonPatch, "", false, `[{"op":"replace","path":"/spec/replicas","value":1e100}]`},
		{cm, merge, "", false, `{"data":{"a":null,"c":"3"}}`},
		{cm, merge, "", false, `{"metadata":{"labels":{"x":"y"}}}`},
		{cm, merge, "", false, `{"data":null}`},
		{cm, merge, "", false, `null`},
		{cm, merge, "", false, `[1,2]`},
		{cm, merge, "", false, `{"metadata":{"resourceVersion":"1"}}`},
		{cm, merge, "", false, `{"apiVersion":"apps/v1"}`},
		{cm, merge, "", false, `{"kind":"Secret"}`},
		{dep, merge, "", false, `{"spec":{"replicas":3}}`},
		{dep, merge, "", false, `{"spec":{"replicas":-1}}`},
		{dep, merge, "", false, `{"spec":{"template":{"spec":{"containers":[]}}}}`},
		{svc, merge, "", false, `{"spec":{"ports":[{"port":0}]}}`},
		{svc, merge, "", false, `{"spec":{"clusterIP":"None"}}`},
		{scale, merge, "", false, `{"spec":{"replicas":2}}`},
		{scale, merge, "", false, `{"spec":{"replicas":"two"}}`},
		{podStatus, merge, "", false, `{"status":{"phase":"Running"}}`},
		{pd, smp, "", false, `{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}`},
		{pd, smp, "", false, `{"spec":{"containers":[{"name":"app","$patch":"delete"}]}}`},
		{pd, smp, "", false, `{"spec":{"containers":[{"$patch":"delete"}]}}`},
		{pd, smp, "", false, `{"spec":{"$setElementOrder/containers":[{"name":"x"}],"containers":[{"name":"x","image":"x"}]}}`},
		{pd, smp, "", false, `{"spec":{"$retainKeys":["containers"],"containers":null}}`},
		{pd, smp, "", false, `{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}`},
		{pd, smp, "", false, `{"$patch":"replace"}`},
		{pd, smp, "", false, `{"$patch":"delete"}`},
		{pd, smp, "", false, `{"spec":{"containers":{"name":"notalist"}}}`},
		{pd, smp, "", false, `{"spec":{"containers":[1]}}`},
		{pd, smp, "", false, `{"spec":{"tolerations":[{"$patch":"merge"}]}}`},
		{dep, smp, "", false, `{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"A","value":"1"}]}]}}}}`},
		{svc, smp, "", false, `{"spec":{"ports":[{"port":80,"$patch":"delete"}]}}`},
		{scale, smp, "", false, `{"spec":{"replicas":0}}`},
		{cm, apply, "fieldManager=fuzz", false, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fuzz-cm\ndata:\n  a: applied\n"},
		{cm, apply, "fieldManager=fuzz&force=true", false, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fuzz-cm\ndata:\n  a: applied\n"},
		{cm, apply, "", false, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fuzz-cm\n"},
		{cm, apply, "fieldManager=fuzz", false, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n"},
		{cm, apply, "fieldManager=fuzz", false, "kind: ConfigMap\n"},
		{cm, apply, "fieldManager=fuzz", false, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fuzz-cm"},"data":{"a":1}}`},
		{dep, apply, "fieldManager=fuzz", false, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: fuzz-dep\nspec:\n  replicas: 2\n"},
		{scale, apply, "fieldManager=fuzz", false, "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: fuzz-dep\n"},
		{cm, merge, "fieldValidation=Strict", false, `{"bogus":1}`},
		{cm, merge, "fieldValidation=Warn", false, `{"bogus":1}`},
		{cm, merge, "fieldValidation=Bogus", false, `{}`},
		{cm, merge, "dryRun=Bogus", false, `{}`},
		{cm, merge, "fieldManager=" + strings.Repeat("m", 200), false, `{}`},
		{cm, merge, "%zz=1&;;", false, `{}`},
		{cm, 4, "", false, `{}`},
		{cm, 5, "", false, `{}`},
		{cm, 6, "", false, `{}`},
	}
	for _, s := range seeds {
		f.Add(s.target, s.patchType, s.query, s.real, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, target, patchType uint8, query string, real bool, body []byte) {
		tg := fuzzWriteTargets[int(target)%len(fuzzWriteTargets)]
		ct := fuzzPatchTypes[int(patchType)%len(fuzzPatchTypes)]
		q := fuzzQuery(t, query, real)
		code, resp := send(http.MethodPatch, tg.path, q, ct, body)
		what := "PATCH " + tg.path + "?" + q + " as " + ct
		checkWriteAnswer(t, what, code, resp, tg.apiVersion, tg.kind)
		if int(patchType)%len(fuzzPatchTypes) >= 4 && code != http.StatusUnsupportedMediaType {
			t.Fatalf("%s: %d; want 415", what, code)
		}
	})
}

// FuzzUpdate replaces existing objects with arbitrary bodies, as JSON,
// YAML or protobuf, with arbitrary query parameters.
func FuzzUpdate(f *testing.F) {
	send := fuzzWriteServer(f)
	seeds := []struct {
		target, contentType uint8
		query               string
		real                bool
		body                string
	}{
		{0, 0, "", false, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fuzz-cm"},"data":{"a":"x"}}`},
		{0, 0, "", true, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fuzz-cm"},"data":{"a":"y"}}`},
		{0, 0, "", false, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fuzz-cm","resourceVersion":"1"}}`},
		{0, 0, "", false, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fuzz-cm","resourceVersion":"x"}}`},
		{0, 0, "", false, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`},
		{0, 0, "", false, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fuzz-cm","namespace":"kube-system"}}`},
		{0, 0, "", false, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fuzz-cm","uid":"nope"}}`},
		{0, 0, "fieldValidation=Strict", false, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fuzz-cm"},"bogus":1}`},
		{0, 1, "", false, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fuzz-cm\ndata:\n  a: yaml\n"},
		{0, 2, "", false, "k8s\x00\x0a\x04\x0a\x02v1"},
		{0, 0, "", false, `null`},
		{0, 0, "", false, ``},
		{1, 0, "", false, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fuzz-wpod"},"spec":{"containers":[{"name":"app","image":"other"}]}}`},
		{1, 0, "", false, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fuzz-wpod"},"spec":{"containers":null}}`},
		{2, 0, "", false, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"fuzz-svc"},"spec":{"ports":[{"port":81}]}}`},
		{3, 0, "", false, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"fuzz-dep"},"spec":{"replicas":0}}`},
		{4, 0, "", false, `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"fuzz-dep"},"spec":{"replicas":3}}`},
		{4, 0, "", false, `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"fuzz-dep"},"spec":{"replicas":-3}}`},
		{5, 0, "", false, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fuzz-wpod"},"status":{"phase":"Bogus"}}`},
		{0, 3, "", false, `{}`},
	}
	contentTypes := []string{"application/json", "application/yaml", protobufType, "text/plain"}
	for _, s := range seeds {
		f.Add(s.target, s.contentType, s.query, s.real, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, target, contentType uint8, query string, real bool, body []byte) {
		tg := fuzzWriteTargets[int(target)%len(fuzzWriteTargets)]
		ct := contentTypes[int(contentType)%len(contentTypes)]
		q := fuzzQuery(t, query, real)
		code, resp := send(http.MethodPut, tg.path, q, ct, body)
		what := "PUT " + tg.path + "?" + q + " as " + ct
		checkWriteAnswer(t, what, code, resp, tg.apiVersion, tg.kind)
		if ct == "text/plain" && code != http.StatusUnsupportedMediaType {
			t.Fatalf("%s: %d; want 415", what, code)
		}
	})
}
