package main

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
)

func TestDecodeSpec(t *testing.T) {
	i18n.SetLang(i18n.English)
	required := []string{"apiServer", "pkiDir", "listen"}
	tests := []struct {
		name    string
		json    string
		want    runtime.KubeletSpec
		wantKey string   // the error's catalogue key, "" for success
		wantMsg []string // fragments of the English message
	}{
		{
			name: "every kind of field",
			json: `{"cluster":"c","apiServer":"https://10.0.0.2:6443","pkiDir":"/pki","speed":2,"listen":"10.0.0.3:10250",
				"controlPlane":true,"cpu":"2","pods":17,"staticPods":[{"name":"etcd","image":"klab/node","healthURL":"http://x"}]}`,
			want: runtime.KubeletSpec{
				ClientSpec: runtime.ClientSpec{Cluster: "c", APIServer: "https://10.0.0.2:6443", PKIDir: "/pki", Speed: 2},
				Listen:     "10.0.0.3:10250", ControlPlane: true, CPU: "2", Pods: 17,
				StaticPods: []runtime.StaticPodSpec{{Name: "etcd", Image: "klab/node", HealthURL: "http://x"}},
			},
		},
		{
			name: "names in another case, as encoding/json allows",
			json: `{"APIServer":"https://a:6443","PKIDIR":"/pki","Listen":"a:1"}`,
			want: runtime.KubeletSpec{ClientSpec: runtime.ClientSpec{APIServer: "https://a:6443", PKIDir: "/pki"}, Listen: "a:1"},
		},
		{
			name: "unknown field", json: `{"apiServer":"x","pkiDir":"/p","listen":"a:1","podCidr2":"10.0.0.0/24"}`,
			wantKey: "component.err.spec-unknown-field",
			wantMsg: []string{`--spec for kubelet has an unknown field "podCidr2"`, "apiServer, pkiDir, speed, listen, nodeIP, podCIDR,"},
		},
		{
			name: "unknown field in a nested object", json: `{"apiServer":"x","pkiDir":"/p","listen":"a:1","staticPods":[{"name":"etcd","port":1}]}`,
			wantKey: "component.err.spec-unknown-nested-field",
			wantMsg: []string{`unknown field "port" in one of its nested objects`},
		},
		{
			name: "wrong type", json: `{"apiServer":"x","pkiDir":"/p","listen":"a:1","pods":"17"}`,
			wantKey: "component.err.spec-type", wantMsg: []string{`field "pods" must be a JSON number (got string)`},
		},
		{
			name: "not an object", json: `["apiServer"]`,
			wantKey: "component.err.spec-not-object", wantMsg: []string{`--spec for kubelet must be a JSON object (got array)`},
		},
		{
			name: "syntax error", json: `{"apiServer" "x"}`,
			wantKey: "component.err.spec-syntax", wantMsg: []string{"is not valid JSON (at byte 14)"},
		},
		{
			name: "cut short", json: `{"apiServer":"x",`,
			wantKey: "component.err.spec-truncated", wantMsg: []string{"ends before its JSON object does"},
		},
		{
			name: "two values", json: `{"apiServer":"x","pkiDir":"/p","listen":"a:1"} {}`,
			wantKey: "component.err.spec-trailing", wantMsg: []string{"more than one JSON value"},
		},
		{
			name: "missing required field", json: `{"apiServer":"x","listen":"a:1"}`,
			wantKey: "component.err.spec-missing", wantMsg: []string{`--spec for kubelet lacks the required field "pkiDir"`},
		},
		{
			name: "required field empty", json: `{"apiServer":"x","pkiDir":"/p","listen":""}`,
			wantKey: "component.err.spec-missing", wantMsg: []string{`"listen"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got runtime.KubeletSpec
			err := decodeSpec(runtime.ComponentKubelet, tt.json, &got, required)
			if tt.wantKey == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !kubeletSpecsEqual(got, tt.want) {
					t.Errorf("decoded %+v, want %+v", got, tt.want)
				}
				return
			}
			if !errors.Is(err, i18n.NewError(tt.wantKey)) {
				t.Fatalf("err = %v, want the error %s", err, tt.wantKey)
			}
			for _, w := range tt.wantMsg {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not contain %q", err, w)
				}
			}
		})
	}
}

func kubeletSpecsEqual(a, b runtime.KubeletSpec) bool {
	if len(a.StaticPods) != len(b.StaticPods) {
		return false
	}
	for i := range a.StaticPods {
		if !reflect.DeepEqual(a.StaticPods[i], b.StaticPods[i]) {
			return false
		}
	}
	a.StaticPods, b.StaticPods = nil, nil
	return a.ClientSpec == b.ClientSpec && a.Listen == b.Listen && a.NodeIP == b.NodeIP && a.PodCIDR == b.PodCIDR &&
		a.ControlPlane == b.ControlPlane && a.CPU == b.CPU && a.Memory == b.Memory && a.Pods == b.Pods
}

// TestSpecFieldsMatchJSON checks jsonFields, which the top-level check and
// the unknown field's error use, against encoding/json's own view of every
// spec: each name it lists decodes, and each name encoding/json writes is
// listed.
func TestSpecFieldsMatchJSON(t *testing.T) {
	specs := map[string]any{
		runtime.ComponentEtcd:              &runtime.EtcdSpec{},
		runtime.ComponentAPIServer:         &runtime.APIServerSpec{},
		runtime.ComponentLB:                &runtime.LBSpec{},
		runtime.ComponentScheduler:         &runtime.SchedulerSpec{},
		runtime.ComponentControllerManager: &runtime.ControllerManagerSpec{},
		runtime.ComponentKubelet:           &runtime.KubeletSpec{},
		runtime.ComponentKubeProxy:         &runtime.KubeProxySpec{},
		runtime.ComponentDNS:               &runtime.DNSSpec{},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			fields := jsonFields(reflect.TypeOf(spec).Elem())
			for _, f := range fields {
				if err := decodeSpec(name, `{"`+f+`":null}`, spec, nil); err != nil {
					t.Errorf("field %q from jsonFields does not decode: %v", f, err)
				}
			}
			data, err := json.Marshal(spec)
			if err != nil {
				t.Fatal(err)
			}
			var written map[string]any
			if err := json.Unmarshal(data, &written); err != nil {
				t.Fatal(err)
			}
			for f := range written {
				if !slices.Contains(fields, f) {
					t.Errorf("encoding/json writes %q, which jsonFields %v lacks", f, fields)
				}
			}
		})
	}
}
