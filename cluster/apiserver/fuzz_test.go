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
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// fuzzTargets are the collections FuzzDecodeCreate posts to, with the
// kind a successful create returns.
var fuzzTargets = []struct{ path, apiVersion, kind string }{
	{"/api/v1/namespaces/default/configmaps", "v1", "ConfigMap"},
	{"/api/v1/namespaces/default/pods", "v1", "Pod"},
	{"/api/v1/namespaces/default/services", "v1", "Service"},
	{"/apis/apps/v1/namespaces/default/deployments", "apps/v1", "Deployment"},
	{"/apis/events.k8s.io/v1/namespaces/default/events", "events.k8s.io/v1", "Event"},
	{"/api/v1/namespaces", "v1", "Namespace"},
	{"/api/v1/namespaces/default/pods/fuzz-pod/binding", "v1", "Status"},
	{"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "authorization.k8s.io/v1", "SelfSubjectAccessReview"},
}

// fuzzContentTypes are the media types bodies are sent as; the last ones
// the server must refuse with 415.
var fuzzContentTypes = []string{
	"application/json",
	"application/yaml",
	"application/vnd.kubernetes.protobuf",
	"application/json; charset=utf-8",
	"",
	"text/plain",
	"application/merge-patch+json",
	"application/json; charset", // malformed parameters
}

const protobufType = "application/vnd.kubernetes.protobuf"

// FuzzDecodeCreate posts arbitrary bodies, as arbitrary media types, to
// create endpoints of a running server, calling its handler in-process (no
// TLS per request). Whatever the body, the answer is a 2xx with an object
// of the collection's kind or a 4xx Status: never a panic, never a 5xx.
func FuzzDecodeCreate(f *testing.F) {
	c := apiservertest.New(f, apiservertest.Options{})
	token, ok := c.PKI.Token(auth.AdminUser)
	if !ok {
		f.Fatal("no admin token")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The pod the binding target binds, and the service account pods need.
	if _, err := adminClient(f, c).CoreV1().Pods("default").Create(ctx, pod("default", "fuzz-pod", ""), metav1.CreateOptions{}); err != nil {
		f.Fatal(err)
	}
	for _, s := range fuzzSeeds(f) {
		f.Add(s.target, s.contentType, s.strict, s.dryRun, s.body)
	}

	f.Fuzz(func(t *testing.T, target, contentType uint8, strict, dryRun bool, body []byte) {
		tg := fuzzTargets[int(target)%len(fuzzTargets)]
		ct := fuzzContentTypes[int(contentType)%len(fuzzContentTypes)]
		url := tg.path
		var query []string
		if strict {
			query = append(query, "fieldValidation=Strict")
		}
		if dryRun {
			query = append(query, "dryRun=All")
		}
		if len(query) > 0 {
			url += "?" + strings.Join(query, "&")
		}
		reqCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(reqCtx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/json")
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		rec := httptest.NewRecorder()
		c.Servers[0].ServeHTTP(rec, req)

		code := rec.Code
		resp := rec.Body.Bytes()
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(resp, &head); err != nil {
			t.Fatalf("POST %s as %q: %d with a body that is not JSON: %v\n%q", url, ct, code, err, resp)
		}
		if code >= 500 || code < 200 || (code >= 300 && code < 400) {
			t.Fatalf("POST %s as %q: %d; want 2xx or 4xx\nbody %q\nanswer %s", url, ct, code, body, resp)
		}
		if isSuccess(code) {
			if head.APIVersion != tg.apiVersion || head.Kind != tg.kind {
				t.Fatalf("POST %s: %d with %s %s; want %s %s", url, code, head.APIVersion, head.Kind, tg.apiVersion, tg.kind)
			}
			return
		}
		var st metav1.Status
		if err := json.Unmarshal(resp, &st); err != nil {
			t.Fatalf("POST %s: %d answer is not a Status: %v\n%s", url, code, err, resp)
		}
		if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || int(st.Code) != code || st.Reason == "" || st.Message == "" {
			t.Fatalf("POST %s: %d with Status %+v; want kind Status, Failure, code %d, a reason and a message", url, code, st, code)
		}
		if (ct == "text/plain" || ct == "application/merge-patch+json") && code != http.StatusUnsupportedMediaType {
			t.Fatalf("POST %s as %q: %d %s; want 415", url, ct, code, st.Message)
		}
	})
}

type fuzzSeed struct {
	target, contentType uint8
	strict, dryRun      bool
	body                []byte
}

// fuzzSeeds are valid manifests of each target, in each encoding, and
// broken ones.
func fuzzSeeds(t testing.TB) []fuzzSeed {
	t.Helper()
	labels := map[string]string{"app": "fuzz"}
	objects := []runtime.Object{
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "seed"}, Data: map[string]string{"k": "v"}},
		&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "seed"}, Spec: podSpec("")},
		&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Name: "seed"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}},
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: "seed"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("")}}},
		newEvent("default", "seed"),
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "seed"}},
		&corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"}, ObjectMeta: metav1.ObjectMeta{Name: "fuzz-pod"},
			Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}},
	}
	objects[4].(*eventsv1.Event).TypeMeta = metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"}

	protobuf, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), protobufType)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	var seeds []fuzzSeed
	for i, obj := range objects {
		target := uint8(i)
		js, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		ym, err := yaml.JSONToYAML(js)
		if err != nil {
			t.Fatal(err)
		}
		gv := obj.GetObjectKind().GroupVersionKind().GroupVersion()
		pb, err := runtime.Encode(scheme.Codecs.EncoderForVersion(protobuf.Serializer, gv), obj)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds,
			fuzzSeed{target: target, contentType: 0, body: js},
			fuzzSeed{target: target, contentType: 0, dryRun: true, strict: true, body: js},
			fuzzSeed{target: target, contentType: 1, dryRun: true, body: ym},
			fuzzSeed{target: target, contentType: 2, dryRun: true, body: pb},
			fuzzSeed{target: target, contentType: 2, body: pb[:len(pb)/2]},              // truncated protobuf
			fuzzSeed{target: target, contentType: 0, body: js[:len(js)/2]},              // truncated JSON
			fuzzSeed{target: target, contentType: 1, body: ym[:len(ym)/3]},              // truncated YAML
			fuzzSeed{target: target, contentType: 5, body: js},                          // text/plain
			fuzzSeed{target: target, contentType: 0, strict: true, body: withExtra(js)}, // unknown field, strict
			fuzzSeed{target: target, contentType: 0, body: withExtra(js)},               // unknown field, warned
		)
	}
	const (
		configMaps, pods, services, deployments = 0, 1, 2, 3
	)
	for _, broken := range []struct {
		target uint8
		body   string
	}{
		{configMaps, ``},
		{configMaps, `null`},
		{configMaps, `[]`},
		{configMaps, `{}`},
		{configMaps, `"a string"`},
		{configMaps, `{"apiVersion":"v1"}`},
		{configMaps, `{"kind":"ConfigMap"}`},
		// apiVersion and kind may be left out: the URL says them.
		{configMaps, `{"metadata":{"name":"bare"}}`},
		{configMaps, `{"apiVersion":"v1","metadata":{"name":"no-kind"}}`},
		{configMaps, `{"kind":"ConfigMap","metadata":{"name":"no-version"}}`},
		{pods, `{"apiVersion":"v1","metadata":{"name":"0"},"spec":{"containers":[{"name":"0","image":0A}]}}`},
		{configMaps, `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"wrong"}}`},
		{configMaps, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"other-kind"}}`},
		{configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":null}`},
		{configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":""}}`},
		{configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"gen-"}}`},
		{configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"UPPER_case!"}}`},
		{configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rv","resourceVersion":"12"}}`},
		{configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ns","namespace":"elsewhere"}}`},
		{configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","name":"dup2"}}`},
		{configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"data"},"data":{"k":1}}`},
		{configMaps, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"\xff\xfe\"}}"},
		{deployments, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"big"},"spec":{"replicas":1e100}}`},
		{deployments, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"neg"},"spec":{"replicas":-3,"selector":{}}}`},
		{pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{}]}}`},
		{pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":null,"nodeName":"n"}}`},
		{services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"clusterIP":"999.1.1.1","ports":[{"port":0}]}}`},
		{services, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":99999}]}}`},
		{configMaps, strings.Repeat(`{"a":`, 10000) + strings.Repeat(`}`, 10000)},
		{configMaps, "a: &a [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"},
		{configMaps, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tabs\n\tdata: x\n"},
		{configMaps, "---\n---\n"},
		{configMaps, "\x0a\x02\x08\x01"}, // a protobuf-looking body without the k8s magic
		{configMaps, "k8s\x00\x0a\x04\x0a\x02v1"},
	} {
		for _, ct := range []uint8{0, 1, 2} {
			seeds = append(seeds,
				fuzzSeed{target: broken.target, contentType: ct, body: []byte(broken.body)},
				fuzzSeed{target: broken.target, contentType: ct, dryRun: true, body: []byte(broken.body)})
		}
	}
	return seeds
}

// withExtra adds a field no kind has to a JSON object.
func withExtra(js []byte) []byte {
	return append([]byte(`{"spec.foo":1,"bogus":{"x":1},`), js[1:]...)
}
