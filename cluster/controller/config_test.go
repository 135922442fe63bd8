package controller

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

func TestEnabledControllers(t *testing.T) {
	all := knownControllers()
	cases := []struct {
		name      string
		selection []string
		want      []string
		wantErr   string
	}{
		{name: "nil means all", selection: nil, want: all},
		{name: "star means all", selection: []string{"*"}, want: all},
		{name: "empty list means none", selection: []string{}, want: nil},
		{name: "one by name", selection: []string{"serviceaccount"}, want: []string{"serviceaccount"}},
		{name: "star minus one", selection: []string{"*", "-namespace"},
			want: []string{"clusterrole-aggregation", "cronjob", "csrsigning", "daemonset", "deployment", "disruption", "endpoint", "endpointslice", "garbagecollector", "horizontalpodautoscaling", "job",
				"nodelifecycle", "replicaset", "replicationcontroller", "resourcequota", "root-ca-cert-publisher", "serviceaccount", "statefulset", "taint-eviction-controller"}},
		{name: "first mention wins", selection: []string{"-namespace", "namespace"}, want: nil},
		{name: "unknown name", selection: []string{"*", "-replicaset-typo"}, wantErr: `"-replicaset-typo" is not in the list of known controllers`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := enabledControllers(tc.selection)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("enabled (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkersFor(t *testing.T) {
	cases := []struct {
		name    string
		workers int
		ctrl    string
		want    int
	}{
		{name: "upstream default", ctrl: "namespace", want: 10},
		{name: "one service account worker", ctrl: "serviceaccount", want: 1},
		{name: "unlisted controller", ctrl: "somethingnew", want: defaultConcurrentSyncs},
		{name: "override", workers: 2, ctrl: "namespace", want: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Config{Workers: tc.workers}).workersFor(tc.ctrl); got != tc.want {
				t.Errorf("workersFor(%q) = %d, want %d", tc.ctrl, got, tc.want)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:1"}
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "no REST config", cfg: Config{Identity: "master-1"}, wantErr: "no REST config"},
		{name: "no identity", cfg: Config{REST: rc}, wantErr: "no identity"},
		{name: "unknown controller", cfg: Config{REST: rc, Identity: "master-1", Controllers: []string{"nope"}}, wantErr: `"nope" is not in the list`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New = %v, want %q", err, tc.wantErr)
			}
		})
	}
	m, err := New(Config{REST: rc, Identity: "master-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Identity(), "master-1_") || len(m.Identity()) != len("master-1_")+36 {
		t.Errorf("identity %q, want master-1_<uuid>", m.Identity())
	}
	if m.rest.QPS != clientDefaults.QPS || m.rest.Burst != clientDefaults.Burst || m.rest.UserAgent != componentName {
		t.Errorf("QPS/Burst = %v/%v, user agent %q; want %v/%v, %q", m.rest.QPS, m.rest.Burst, m.rest.UserAgent, clientDefaults.QPS, clientDefaults.Burst, componentName)
	}
}
