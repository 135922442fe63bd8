package pki

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/klab-dev/klab/internal/atomicfile"
)

// ContextName returns the name of a cluster's context and cluster entry in
// the kubeconfigs klab writes: "klab-<cluster>", in the way kind names its
// contexts "kind-<cluster>".
func ContextName(cluster string) string { return "klab-" + cluster }

// Kubeconfig returns a kubeconfig for user against server (an https URL):
// one cluster and one context, both named ContextName(clusterName), with
// the CA embedded, and one user entry named after the user holding its
// bearer token. The context is the current one.
func (p *PKI) Kubeconfig(clusterName, server, user string) (*clientcmdapi.Config, error) {
	token, ok := p.Token(user)
	if !ok {
		return nil, fmt.Errorf("kubeconfig: no token for user %q in %s", user, p.path(TokenFile))
	}
	name := ContextName(clusterName)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.CAPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	return cfg, nil
}

// WriteKubeconfig writes the kubeconfig of [PKI.Kubeconfig] to path,
// readable by its owner only (it holds a token).
func (p *PKI) WriteKubeconfig(path, clusterName, server, user string) error {
	cfg, err := p.Kubeconfig(clusterName, server, user)
	if err != nil {
		return err
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	return atomicfile.Write(path, data, 0o600)
}

// RESTConfig returns the client-go configuration the same kubeconfig
// yields, for klab's components and commands that talk to the API server.
func (p *PKI) RESTConfig(clusterName, server, user string) (*rest.Config, error) {
	cfg, err := p.Kubeconfig(clusterName, server, user)
	if err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("rest config: %w", err)
	}
	return rc, nil
}
