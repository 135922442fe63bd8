package inprocess

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// Cluster DNS as a pod's resolv.conf names it (dnsPolicy ClusterFirst):
// the kube-dns Service at the tenth service IP, the cluster domain.
const (
	clusterDNS    = "10.96.0.10"
	clusterDomain = "cluster.local"
)

// rootfsDirs are the directories a container image's root has.
var rootfsDirs = []string{"bin", "dev", "etc", "home", "proc", "root", "run", "sys", "tmp", "usr/bin", "usr/local/bin", "var/log", "var/tmp"}

// makeRootfs makes a pod's filesystem: the usual directories, and the
// files the kubelet and the runtime put in every container (/etc/hosts,
// /etc/resolv.conf, /etc/hostname) in upstream's format.
func makeRootfs(dir string, cfg cri.SandboxConfig, ip string) error {
	for _, d := range rootfsDirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("make the pod's filesystem: %w", err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		return fmt.Errorf("make the pod's filesystem: %w", err)
	}
	hostname := cfg.Hostname
	if hostname == "" {
		hostname = cfg.Name
	}
	hosts := strings.Join([]string{
		"# Kubernetes-managed hosts file.",
		"127.0.0.1\tlocalhost",
		"::1\tlocalhost ip6-localhost ip6-loopback",
		"fe00::0\tip6-localnet",
		"fe00::0\tip6-mcastprefix",
		"fe00::1\tip6-allnodes",
		"fe00::2\tip6-allrouters",
		ip + "\t" + hostname,
	}, "\n") + "\n"
	ns := cfg.Namespace
	resolv := fmt.Sprintf("search %s.svc.%s svc.%s %s\nnameserver %s\noptions ndots:5\n", ns, clusterDomain, clusterDomain, clusterDomain, clusterDNS)
	for name, content := range map[string]string{"etc/hosts": hosts, "etc/resolv.conf": resolv, "etc/hostname": hostname + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("make the pod's filesystem: %w", err)
		}
	}
	return nil
}
