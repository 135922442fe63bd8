package docker

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

func TestCommandFor(t *testing.T) {
	client := runtime.ClientSpec{Cluster: "demo", APIServer: "https://10.1.0.11:6443", PKIDir: "/home/u/.klab/demo/pki", Speed: 1}
	ref := runtime.Ref{Node: "master-1"}
	tests := []struct {
		name     string
		spec     runtime.ComponentSpec
		wantCmd0 string
		// check inspects the decoded --spec JSON.
		check func(t *testing.T, spec map[string]any)
	}{
		{"apiserver", runtime.ComponentSpec{Ref: ref, APIServer: &runtime.APIServerSpec{
			EtcdEndpoints: []string{"http://10.1.0.11:2379"}, Listen: "10.1.0.11:6443", PKIDir: "/host/pki",
		}}, runtime.ComponentAPIServer, nil},
		{"lb", runtime.ComponentSpec{Ref: ref, LB: &runtime.LBSpec{Listen: "10.1.0.2:6443", Backends: []string{"10.1.0.11:6443"}, PKIDir: "/host/pki"}},
			runtime.ComponentLB, nil},
		{"scheduler", runtime.ComponentSpec{Ref: ref, Scheduler: &runtime.SchedulerSpec{ClientSpec: client, DebugListen: "10.1.0.11:10259"}},
			runtime.ComponentScheduler, nil},
		{"controller manager", runtime.ComponentSpec{Ref: ref, ControllerManager: &runtime.ControllerManagerSpec{ClientSpec: client, DebugListen: "10.1.0.11:10257"}},
			runtime.ComponentControllerManager, nil},
		{"kubelet", runtime.ComponentSpec{Ref: ref, Kubelet: &runtime.KubeletSpec{ClientSpec: client, Listen: "10.1.0.11:10250", PodCIDR: "127.9.9.0/24"}},
			runtime.ComponentKubelet, func(t *testing.T, spec map[string]any) {
				if spec["podCIDR"] != "10.1.1.0/24" {
					t.Errorf("kubelet podCIDR = %v, want the node's 10.1.1.0/24", spec["podCIDR"])
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, err := commandFor(tt.spec, "10.1.1.0/24", "10.96.0.0/12")
			if err != nil {
				t.Fatal(err)
			}
			if len(run.cmd) != 5 || run.cmd[0] != tt.wantCmd0 || run.cmd[1] != "--node" || run.cmd[2] != "master-1" || run.cmd[3] != "--spec" {
				t.Fatalf("command = %q, want [%s --node master-1 --spec <json>]", run.cmd, tt.wantCmd0)
			}
			var spec map[string]any
			if err := json.Unmarshal([]byte(run.cmd[4]), &spec); err != nil {
				t.Fatalf("--spec is not JSON: %v", err)
			}
			if spec["pkiDir"] != pkiInContainer {
				t.Errorf("pkiDir = %v, want %s", spec["pkiDir"], pkiInContainer)
			}
			if run.pkiDir == "" || run.pkiDir == pkiInContainer {
				t.Errorf("host PKI dir to copy = %q", run.pkiDir)
			}
			if tt.check != nil {
				tt.check(t, spec)
			}
		})
	}

	t.Run("etcd", func(t *testing.T) {
		member := &runtime.EtcdSpec{
			Name: "master-1", DataDir: "/host/data", InitialClusterToken: "tok",
			InitialCluster: []etcd.Peer{{Name: "master-1", PeerURL: "http://10.1.0.11:2380", ClientURL: "http://10.1.0.11:2379"}},
			ListenClient:   "10.1.0.11:2379", ListenPeer: "10.1.0.11:2380", UnsafeNoFsync: true,
		}
		run, err := commandFor(runtime.ComponentSpec{Ref: runtime.Ref{Node: "master-1", Component: "etcd"}, Etcd: member}, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(run.cmd) != 5 || run.cmd[0] != "etcd" || run.cmd[1] != "--node" || run.cmd[2] != "master-1" || run.cmd[3] != "--spec" {
			t.Fatalf("etcd command = %q, want etcd --node master-1 --spec <json>", run.cmd)
		}
		var got runtime.EtcdSpec
		if err := json.Unmarshal([]byte(run.cmd[4]), &got); err != nil {
			t.Fatal(err)
		}
		want := *member
		want.DataDir = etcdDataDir
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("etcd spec in the container (-want +got):\n%s", diff)
		}
		if member.DataDir != "/host/data" {
			t.Error("commandFor changed the caller's spec")
		}
		if run.pkiDir != "" {
			t.Errorf("etcd gets a PKI dir %q", run.pkiDir)
		}
	})

	for _, bad := range []struct {
		name string
		spec runtime.ComponentSpec
	}{
		{"nothing to run", runtime.ComponentSpec{Ref: ref}},
		{"two things to run", runtime.ComponentSpec{Ref: ref, LB: &runtime.LBSpec{PKIDir: "/p"}, Kubelet: &runtime.KubeletSpec{}}},
		{"no PKI dir", runtime.ComponentSpec{Ref: ref, LB: &runtime.LBSpec{Listen: "10.1.0.2:6443"}}},
	} {
		t.Run(bad.name, func(t *testing.T) {
			if _, err := commandFor(bad.spec, "", ""); err == nil {
				t.Error("commandFor accepted it")
			}
		})
	}
}

// TestServePortLabel checks that the port Start waits on is read from the
// label CreateComponent records, and that a bad label is an error rather
// than a port.
func TestServePortLabel(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		want    int
		wantErr bool
	}{
		{"recorded", map[string]string{labels.ServePort: "2379"}, 2379, false},
		{"serves nothing", map[string]string{labels.Component: "kube-scheduler"}, 0, false},
		{"no labels", nil, 0, false},
		{"not a number", map[string]string{labels.ServePort: "http"}, 0, true},
		{"out of range", map[string]string{labels.ServePort: "70000"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := servePort(tt.labels)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("servePort = %d, %v; want %d (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestPKIArchive(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"ca.crt": "CA", "ca.key": "SECRET", "apiserver.crt": "CRT", "apiserver.key": "KEY", "tokens.csv": "t,u,1"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)

	buf, err := pkiArchive(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var dirs []string
	tr := tar.NewReader(buf)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeDir {
			dirs = append(dirs, h.Name)
			continue
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = string(b)
		if h.Mode != 0o600 {
			t.Errorf("%s has mode %o, want the host file's 600", h.Name, h.Mode)
		}
	}
	if want := []string{"etc/", "etc/klab/", "etc/klab/pki/"}; !slices.Equal(dirs, want) {
		t.Errorf("directories = %q, want %q", dirs, want)
	}
	for name, content := range files {
		inside := strings.TrimPrefix(pkiInContainer, "/") + "/" + name
		if name == "ca.key" {
			if _, ok := got[inside]; ok {
				t.Error("the CA's private key was copied into the container")
			}
			continue
		}
		if got[inside] != content {
			t.Errorf("%s = %q, want %q", inside, got[inside], content)
		}
	}
	if len(got) != len(files)-1 {
		t.Errorf("archive holds %d files, want %d: %v", len(got), len(files)-1, got)
	}

	// The controller manager's copy holds the CA key, for its signer.
	buf, err = pkiArchive(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	withKey := tar.NewReader(buf)
	found := false
	for {
		h, err := withKey.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		found = found || h.Name == strings.TrimPrefix(pkiInContainer, "/")+"/ca.key"
	}
	if !found {
		t.Error("the archive with the CA key lacks ca.key")
	}

	if _, err := pkiArchive(t.TempDir(), false); err == nil {
		t.Error("an empty PKI directory was accepted")
	}
	if _, err := pkiArchive(filepath.Join(dir, "missing"), false); err == nil {
		t.Error("a missing PKI directory was accepted")
	}
}
