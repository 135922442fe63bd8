package lab

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
)

// componentCredentialsDirName is the folder of the cluster's state dir
// that holds one credentials folder per component and node
// (credentials/<node>/<component>/), each with only that component's own
// files: the cluster PKI in pki/ stays the API server's and klab's, as
// /etc/kubernetes/pki on a kubeadm master is.
const componentCredentialsDirName = "credentials"

// componentCredentials writes the credentials of component on node n, as
// the component's identity id, and returns their folder: what its spec's
// PKIDir names, what the local runtime's component reads and what the
// Docker runtime copies into its container, and nothing more.
func (b *bringUp) componentCredentials(n runtime.Node, component string, id pki.ComponentIdentity) (string, error) {
	b.undoCredentials()
	dir := filepath.Join(b.c.dir, componentCredentialsDirName, n.Name, component)
	if err := b.certs.EnsureComponentCredentials(dir, id); err != nil {
		return "", err
	}
	return dir, nil
}

// clientSpec is what a client component of node n needs to reach server:
// its own credentials, as user.
func (b *bringUp) clientSpec(server string, n runtime.Node, component, user string) (runtime.ClientSpec, error) {
	id, _ := pki.ClientIdentity(user)
	if component == runtime.ComponentKubelet {
		// The kubelet's serving certificate names the addresses the API
		// server (the node's InternalIP) and this machine reach it at.
		id.ServingHosts = []string{n.Host, n.Name, "localhost", "127.0.0.1"}
	}
	dir, err := b.componentCredentials(n, component, id)
	if err != nil {
		return runtime.ClientSpec{}, err
	}
	return runtime.ClientSpec{Cluster: b.c.spec.Name, APIServer: server, PKIDir: dir, Speed: b.c.spec.Speed}, nil
}

// trustOnlyDir writes the credentials of a component that only verifies
// API servers (the load balancer): ca.crt alone.
func (b *bringUp) trustOnlyDir(n runtime.Node, component string) (string, error) {
	b.undoCredentials()
	dir := filepath.Join(b.c.dir, componentCredentialsDirName, n.Name, component)
	if err := b.certs.EnsureTrustOnly(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// undoCredentials, the first time a bring-up writes credentials, makes a
// failed bring-up remove the credentials folder if it did not exist before
// (as it removes the PKI it made).
func (b *bringUp) undoCredentials() {
	b.credsOnce.Do(func() {
		root := filepath.Join(b.c.dir, componentCredentialsDirName)
		if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
			b.onFailure("remove the components' credentials", func(context.Context) error { return os.RemoveAll(root) })
		}
	})
}
