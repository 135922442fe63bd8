package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"slices"

	"github.com/docker/docker/api/types/container"

	"github.com/klab-dev/klab/cluster/runtime"
)

// Where the etcd certificates are inside a container: kubeadm's paths, so
// that the CKA's `etcdctl --cacert=/etc/kubernetes/pki/etcd/ca.crt
// --cert=/etc/kubernetes/pki/etcd/server.crt ...` names the same files in
// klab's etcd container as on a kubeadm control-plane node.
const (
	kubeadmPKIDir           = "/etc/kubernetes/pki"
	kubeadmEtcdPKIDir       = kubeadmPKIDir + "/etcd"
	etcdCAInContainer       = kubeadmEtcdPKIDir + "/ca.crt"
	etcdServerCertInCont    = kubeadmEtcdPKIDir + "/server.crt"
	etcdServerKeyInCont     = kubeadmEtcdPKIDir + "/server.key"
	etcdPeerCertInCont      = kubeadmEtcdPKIDir + "/peer.crt"
	etcdPeerKeyInCont       = kubeadmEtcdPKIDir + "/peer.key"
	apiServerEtcdCertInCont = kubeadmPKIDir + "/apiserver-etcd-client.crt"
	apiServerEtcdKeyInCont  = kubeadmPKIDir + "/apiserver-etcd-client.key"
)

// etcdMemberFiles points s's TLS files at their container paths and
// returns the copies to make (container path → host path). Only the etcd
// container gets the member's keys.
func etcdMemberFiles(s *runtime.EtcdSpec) map[string]string {
	files := make(map[string]string)
	move := func(field *string, inContainer string) {
		if *field != "" {
			files[inContainer] = *field
			*field = inContainer
		}
	}
	move(&s.TrustedCAFile, etcdCAInContainer)
	move(&s.PeerTrustedCAFile, etcdCAInContainer)
	move(&s.CertFile, etcdServerCertInCont)
	move(&s.KeyFile, etcdServerKeyInCont)
	move(&s.PeerCertFile, etcdPeerCertInCont)
	move(&s.PeerKeyFile, etcdPeerKeyInCont)
	return files
}

// apiServerEtcdFiles does the same for an API server's etcd client
// certificate and the etcd CA.
func apiServerEtcdFiles(s *runtime.APIServerSpec) map[string]string {
	files := make(map[string]string)
	for _, f := range []struct {
		field       *string
		inContainer string
	}{{&s.EtcdCAFile, etcdCAInContainer}, {&s.EtcdCertFile, apiServerEtcdCertInCont}, {&s.EtcdKeyFile, apiServerEtcdKeyInCont}} {
		if *f.field != "" {
			files[f.inContainer] = *f.field
			*f.field = f.inContainer
		}
	}
	return files
}

// copyEtcdFiles copies files (container path → host path) into a created
// container, keys readable by its owner only.
func (r *Runtime) copyEtcdFiles(ctx context.Context, id string, files map[string]string) error {
	if len(files) == 0 {
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dir := range []string{"etc", "etc/kubernetes", "etc/kubernetes/pki", "etc/kubernetes/pki/etcd"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: contextTime}); err != nil {
			return err
		}
	}
	targets := make([]string, 0, len(files))
	for target := range files {
		targets = append(targets, target)
	}
	slices.Sort(targets)
	for _, target := range targets {
		data, err := os.ReadFile(files[target])
		if err != nil {
			return fmt.Errorf("copy the etcd certificates: %w", err)
		}
		mode := int64(0o644)
		if path.Ext(target) == ".key" {
			mode = 0o600
		}
		if err := tw.WriteHeader(&tar.Header{Name: target[1:], Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(data)), ModTime: contextTime}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := r.cli.CopyToContainer(ctx, id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("copy the etcd certificates into the container: %w", err)
	}
	return nil
}
