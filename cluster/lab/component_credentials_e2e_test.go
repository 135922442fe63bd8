package lab

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// wantComponentFiles are the files each component's credentials hold: its
// own and nothing else (no tokens.csv, no apiserver.key, no other
// component's key).
var wantComponentFiles = map[string][]string{
	runtime.ComponentScheduler:         {pki.CACertFile, pki.ComponentClientCertFile, pki.ComponentClientKeyFile},
	runtime.ComponentControllerManager: {pki.CACertFile, pki.CAKeyFile, pki.ComponentClientCertFile, pki.ComponentClientKeyFile},
	runtime.ComponentKubeProxy:         {pki.CACertFile, pki.ComponentClientCertFile, pki.ComponentClientKeyFile},
	runtime.ComponentDNS:               {pki.CACertFile, pki.ComponentClientCertFile, pki.ComponentClientKeyFile},
	runtime.ComponentKubelet: {pki.CACertFile, pki.ComponentClientCertFile, pki.ComponentClientKeyFile,
		pki.KubeletServingCertFile, pki.KubeletServingKeyFile},
	runtime.ComponentLB: {pki.CACertFile},
}

// componentUser is the user a component's client certificate names.
func componentUser(node, component string) string {
	switch component {
	case runtime.ComponentScheduler:
		return auth.KubeScheduler
	case runtime.ComponentControllerManager:
		return auth.KubeControllerManager
	case runtime.ComponentKubeProxy:
		return auth.KubeProxy
	case runtime.ComponentDNS:
		return auth.CoreDNS
	case runtime.ComponentKubelet:
		return auth.NodeUser(node)
	}
	return ""
}

// checkOwnFiles checks one component's credential files (name → content):
// exactly the expected names, its own user in the client certificate, and
// the admin's token in none of them.
func checkOwnFiles(t *testing.T, where, node, component string, files map[string][]byte, adminToken string) {
	t.Helper()
	var names []string
	for name, data := range files {
		names = append(names, name)
		if bytes.Contains(data, []byte(adminToken)) {
			t.Errorf("%s: %s holds the admin's token", where, name)
		}
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(wantComponentFiles[component]))
	if !slices.Equal(names, want) {
		t.Errorf("%s holds %v, want only %v", where, names, want)
	}
	if user := componentUser(node, component); user != "" {
		dir := t.TempDir()
		for name, data := range files {
			os.WriteFile(filepath.Join(dir, name), data, 0o600)
		}
		creds, err := pki.LoadComponentCredentials(dir)
		if err != nil {
			t.Errorf("%s: %v", where, err)
		} else if creds.User() != user {
			t.Errorf("%s: client certificate of %q, want %q", where, creds.User(), user)
		}
	}
}

// TestComponentsHoldOnlyTheirOwnCredentials checks, on a local cluster,
// that each component's spec names a credentials folder with only its own
// files, and that the scheduler, once its binding is removed, is refused
// with upstream's 403, which the API server's request stream shows with
// the decision; with the binding back it is allowed again, by it.
func TestComponentsHoldOnlyTheirOwnCredentials(t *testing.T) {
	f := startLoopCluster(t, 1, 1, 10)
	adminToken := adminTokenOf(t, f.c)
	root := filepath.Join(f.c.dir, componentCredentialsDirName)
	seen := 0
	for _, nc := range f.c.topo {
		for _, component := range nc.Components {
			if component == runtime.ComponentEtcd || component == runtime.ComponentAPIServer {
				continue
			}
			dir := filepath.Join(root, nc.Node, component)
			files := map[string][]byte{}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Errorf("%s/%s: %v", nc.Node, component, err)
				continue
			}
			for _, e := range entries {
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				files[e.Name()] = data
			}
			checkOwnFiles(t, nc.Node+"/"+component, nc.Node, component, files, adminToken)
			seen++
		}
	}
	if seen < 5 {
		t.Errorf("checked %d components' credentials, want the scheduler, controller manager, kubelets and kube-proxies", seen)
	}
	checkSchedulerBindingRemoved(t, f.ctx, f.client, nil)
}

// adminTokenOf reads the admin's token from the cluster's kubeconfig.
func adminTokenOf(t *testing.T, c *Cluster) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		if u.Token != "" {
			return u.Token
		}
	}
	t.Fatal("the kubeconfig holds no token")
	return ""
}

// checkSchedulerBindingRemoved deletes the ClusterRoleBinding
// system:kube-scheduler and waits for the API server's request stream to
// show the scheduler's requests forbidden; logs, when given, must then
// show upstream's 403 text too. The binding is put back at the end, and
// the scheduler is allowed by it again.
func checkSchedulerBindingRemoved(t *testing.T, ctx context.Context, cs kubernetes.Interface, logs func() string) {
	t.Helper()
	binding, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "system:kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitSchedulerRequest(t, ctx, cs, "allowed by its binding", func(ev apiserver.RequestEvent) bool {
		return ev.Decision == apiserver.DecisionAllow && strings.Contains(ev.Reason, `ClusterRoleBinding "system:kube-scheduler"`) &&
			slices.Contains(ev.Groups, auth.AllAuthenticated)
	})
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSchedulerRequest(t, ctx, cs, "forbidden without its binding", func(ev apiserver.RequestEvent) bool {
		return ev.Code == 403 && ev.Decision == apiserver.DecisionForbid
	})
	if logs != nil {
		want := `User "system:kube-scheduler" cannot`
		deadline := time.Now().Add(60 * time.Second)
		// klog quotes the error inside its structured line (err="...\"...").
		for !strings.Contains(strings.ReplaceAll(logs(), `\"`, `"`), want) {
			if time.Now().After(deadline) {
				t.Fatalf("the scheduler's logs never show upstream's 403 (%q):\n%s", want, tail(logs(), 3000))
			}
			time.Sleep(time.Second)
		}
	}
	binding.ResourceVersion, binding.UID = "", ""
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSchedulerRequest(t, ctx, cs, "allowed again", func(ev apiserver.RequestEvent) bool {
		return ev.Decision == apiserver.DecisionAllow && strings.Contains(ev.Reason, `ClusterRoleBinding "system:kube-scheduler"`)
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitSchedulerRequest follows the API server's request stream until a
// request of the scheduler's started after the call matches.
func waitSchedulerRequest(t *testing.T, ctx context.Context, cs kubernetes.Interface, what string, match func(apiserver.RequestEvent) bool) {
	t.Helper()
	since := time.Now()
	readCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	stream, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/klab/events").Stream(readCtx)
	if err != nil {
		t.Fatalf("request stream: %v", err)
	}
	defer stream.Close()
	sc := bufio.NewScanner(stream)
	sc.Buffer(nil, 1<<20)
	var last apiserver.RequestEvent
	for sc.Scan() {
		var ev apiserver.RequestEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.User != auth.KubeScheduler || ev.Time.Before(since) {
			continue
		}
		last = ev
		if match(ev) {
			return
		}
	}
	t.Fatalf("no request of the scheduler's %s in the stream (last: %+v): %v", what, last, sc.Err())
}

// TestDockerComponentsHoldOnlyTheirOwnCredentials checks the containers:
// the PKI folder of each holds only that component's credentials (the
// kube-proxy's only kube-proxy's), none but the API server's holds the
// token file, and the admin's token is in none; removing the scheduler's
// binding shows upstream's 403 in the scheduler container's log.
func TestDockerComponentsHoldOnlyTheirOwnCredentials(t *testing.T) {
	bin := requireDocker(t)
	testHome(t)
	name := dockerClusterName(t, "h30-creds")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c, err := Up(ctx, Spec{Name: name, Masters: 1, Workers: 1, Speed: 10, Runtime: RuntimeDocker, NoFsync: true}, Options{Binary: bin})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	defer Down(context.Background(), name, false, nil)
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	adminToken := adminTokenOf(t, c)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	containerOf := func(node, component string) string { return labels.Prefix(name) + "-" + node + "-" + component }
	checked := 0
	for _, nc := range c.topo {
		for _, component := range nc.Components {
			if component == runtime.ComponentEtcd {
				continue
			}
			where := containerOf(nc.Node, component)
			files, err := containerFiles(ctx, cli, where, "/etc/klab/pki")
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			checked++
			if component == runtime.ComponentAPIServer {
				if _, ok := files[pki.TokenFile]; !ok {
					t.Errorf("%s has no %s: the API server authenticates klab's users with it", where, pki.TokenFile)
				}
				if _, ok := files[pki.CAKeyFile]; ok {
					t.Errorf("%s holds %s", where, pki.CAKeyFile)
				}
				continue
			}
			checkOwnFiles(t, where, nc.Node, component, files, adminToken)
		}
	}
	if checked < 6 {
		t.Errorf("checked %d containers, want every component's but etcd's", checked)
	}
	logs := func() string {
		rc, err := cli.ContainerLogs(ctx, containerOf("master-1", runtime.ComponentScheduler), container.LogsOptions{ShowStdout: true, ShowStderr: true})
		if err != nil {
			return err.Error()
		}
		defer rc.Close()
		data, _ := io.ReadAll(rc)
		return string(data)
	}
	checkSchedulerBindingRemoved(t, ctx, cs, logs)
}

// containerFiles reads the regular files under dir in a container, by
// base name.
func containerFiles(ctx context.Context, cli *client.Client, container, dir string) (map[string][]byte, error) {
	rc, _, err := cli.CopyFromContainer(ctx, container, dir)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[path.Base(h.Name)] = data
	}
}
