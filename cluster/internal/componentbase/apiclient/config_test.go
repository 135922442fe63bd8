package apiclient

import (
	"testing"

	"k8s.io/client-go/rest"
)

func TestConfig(t *testing.T) {
	d := Defaults{UserAgent: "kube-scheduler", QPS: 1000, Burst: 2000}
	base := &rest.Config{Host: "https://127.0.0.1:6443"}
	got := Config(base, d)
	if got.QPS != 1000 || got.Burst != 2000 || got.UserAgent != "kube-scheduler" || got.Host != base.Host {
		t.Errorf("defaults not applied: %+v", got)
	}
	if base.QPS != 0 || base.UserAgent != "" {
		t.Error("the base config was changed")
	}
	set := Config(&rest.Config{QPS: 7, Burst: 9, UserAgent: "mine"}, d)
	if set.QPS != 7 || set.Burst != 9 || set.UserAgent != "mine" {
		t.Errorf("settings of the base replaced: %+v", set)
	}
}
