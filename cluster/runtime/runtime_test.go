package runtime

import (
	"testing"
)

func TestParseRef(t *testing.T) {
	if r, err := ParseRef("master-2/etcd"); err != nil || r != (Ref{Node: "master-2", Component: "etcd"}) || r.String() != "master-2/etcd" {
		t.Errorf("ParseRef = %v, %v", r, err)
	}
	for _, bad := range []string{"", "master-2", "/etcd", "master-2/", "a/b/c"} {
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) accepted", bad)
		}
	}
}

func TestComponentSpecValidate(t *testing.T) {
	ref := Ref{Node: "master-1", Component: "x"}
	tests := []struct {
		name string
		spec ComponentSpec
		ok   bool
	}{
		{"one thing", ComponentSpec{Ref: ref, Etcd: &EtcdSpec{}}, true},
		{"nothing", ComponentSpec{Ref: ref}, false},
		{"two things", ComponentSpec{Ref: ref, LB: &LBSpec{}, Kubelet: &KubeletSpec{}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.spec.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestServePort checks the port a runtime waits on for each kind of
// component: the one it serves its clients on.
func TestServePort(t *testing.T) {
	ref := Ref{Node: "master-1", Component: "x"}
	tests := []struct {
		name    string
		spec    ComponentSpec
		want    int
		wantErr bool
	}{
		{"etcd serves clients", ComponentSpec{Ref: ref, Etcd: &EtcdSpec{ListenClient: "10.1.0.11:2379", ListenPeer: "10.1.0.11:2380"}}, 2379, false},
		{"apiserver", ComponentSpec{Ref: ref, APIServer: &APIServerSpec{Listen: "10.1.0.11:6443"}}, 6443, false},
		{"lb", ComponentSpec{Ref: ref, LB: &LBSpec{Listen: "10.1.0.2:6443"}}, 6443, false},
		{"scheduler", ComponentSpec{Ref: ref, Scheduler: &SchedulerSpec{DebugListen: "10.1.0.11:10259"}}, 10259, false},
		{"controller manager", ComponentSpec{Ref: ref, ControllerManager: &ControllerManagerSpec{DebugListen: "10.1.0.11:10257"}}, 10257, false},
		{"kubelet", ComponentSpec{Ref: ref, Kubelet: &KubeletSpec{Listen: "10.1.0.11:10250"}}, 10250, false},
		{"kube-proxy", ComponentSpec{Ref: ref, KubeProxy: &KubeProxySpec{Listen: "10.1.0.11:10256"}}, 10256, false},
		{"serves nothing", ComponentSpec{Ref: ref, Scheduler: &SchedulerSpec{}}, 0, false},
		{"nothing to run", ComponentSpec{Ref: ref}, 0, false},
		{"no port", ComponentSpec{Ref: ref, Kubelet: &KubeletSpec{Listen: "10.1.0.11"}}, 0, true},
		{"bad port", ComponentSpec{Ref: ref, Kubelet: &KubeletSpec{Listen: "10.1.0.11:http"}}, 0, true},
		{"port out of range", ComponentSpec{Ref: ref, Kubelet: &KubeletSpec{Listen: "10.1.0.11:70000"}}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.spec.ServePort()
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ServePort = %d, %v; want %d (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
