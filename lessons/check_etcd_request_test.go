package lessons

import (
	"strings"
	"testing"
)

func etcdReq(method, key, end, code string, component bool) EtcdRequestObserved {
	return EtcdRequestObserved{Member: "master-1", Method: method, Key: key, RangeEnd: end, Code: code, Component: component}
}

func TestEtcdRequestCheck(t *testing.T) {
	const obj = "/registry/deployments/default/hello"
	get := etcdReq("Range", obj, "", "OK", false)
	runScenarios(t, []scenario{
		{name: "etcdctl get of the key", check: "etcd-request: {method: Range, key: " + obj + ", from: outside}", after: []Observation{get}, pass: true},
		{name: "before the step does not count", check: "etcd-request: {method: Range, key: " + obj + "}", before: []Observation{get}, pass: false},
		{name: "the API server's read is not the student's", check: "etcd-request: {method: Range, key: " + obj + ", from: outside}",
			after: []Observation{etcdReq("Range", obj, "", "OK", true)}, pass: false},
		{name: "from cluster", check: "etcd-request: {method: Range, key: " + obj + ", from: cluster}",
			after: []Observation{etcdReq("Range", obj, "", "OK", true)}, pass: true},
		{name: "a prefix read holds the key", check: "etcd-request: {method: Range, key: " + obj + "}",
			after: []Observation{etcdReq("Range", "/registry/deployments/", "/registry/deployments0", "OK", false)}, pass: true},
		{name: "every key from / on", check: "etcd-request: {key: " + obj + "}",
			after: []Observation{etcdReq("Range", "/", "\x00", "OK", false)}, pass: true},
		{name: "another key", check: "etcd-request: {method: Range, key: " + obj + "}",
			after: []Observation{etcdReq("Range", obj+"2", "", "OK", false)}, pass: false},
		{name: "a range that ends before the key", check: "etcd-request: {key: " + obj + "}",
			after: []Observation{etcdReq("Range", "/registry/a", "/registry/d", "OK", false)}, pass: false},
		{name: "prefix: a key under it", check: "etcd-request: {prefix: /registry/namespaces/}",
			after: []Observation{etcdReq("Range", "/registry/namespaces/default", "", "OK", false)}, pass: true},
		{name: "prefix: a wider range", check: "etcd-request: {prefix: /registry/namespaces/}",
			after: []Observation{etcdReq("Range", "/registry/", "/registry0", "OK", false)}, pass: true},
		{name: "prefix: a range beside it", check: "etcd-request: {prefix: /registry/namespaces/}",
			after: []Observation{etcdReq("Range", "/registry/pods/", "/registry/pods0", "OK", false)}, pass: false},
		{name: "a refused request is not OK", check: "etcd-request: {method: Put, code: OK}",
			after: []Observation{etcdReq("Put", "/k", "", "Unavailable", false)}, pass: false},
		{name: "a refused request asked for", check: "etcd-request: {method: Put, code: Unavailable}",
			after: []Observation{etcdReq("Put", "/k", "", "Unavailable", false)}, pass: true},
		{name: "method without keys", check: "etcd-request: {method: MemberList}",
			after: []Observation{etcdReq("MemberList", "", "", "OK", false)}, pass: true},
		{name: "count", check: "etcd-request: {method: Put, count: 2}",
			after: []Observation{etcdReq("Put", "/a", "", "OK", false)}, pass: false},
	})
}

func TestEtcdRequestCheckRejects(t *testing.T) {
	for _, tt := range []struct{ check, want string }{
		{"etcd-request: {method: get}", `"get" is not one of: Range, Put`},
		{"etcd-request: {method: Range, code: ok}", `"ok" is not one of: OK,`},
		{"etcd-request: {method: Range, from: me}", `"me" is not one of: outside, cluster`},
		{"etcd-request: {key: /a, prefix: /b}", "give key or prefix, not both"},
		{"etcd-request: {key: ''}", "empty"},
		{"etcd-request: {count: 2}", "give at least one of: method, key, prefix"},
		{"etcd-request: {method: Range, verb: get}", `unknown key "verb"`},
	} {
		_, err := loadOne(t, "x.yaml", strings.Replace(sample, "check: leader-changed", "check: {"+tt.check+"}", 1))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one with %q", tt.check, err, tt.want)
		}
	}
}
