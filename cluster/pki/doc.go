// Package pki creates and loads a cluster's certificates, tokens and
// kubeconfig, the files kubeadm keeps in /etc/kubernetes/pki and
// /etc/kubernetes/admin.conf.
//
// Each cluster has its own certificate authority (ca.crt, ca.key: ECDSA
// P-256, valid ten years). It signs the API server's serving certificate
// (apiserver.crt, apiserver.key), whose subject alternative names cover
// every address a client may use: the hosts klab passes in (node
// addresses, the load balancer), localhost, 127.0.0.1, ::1, the in-cluster
// names kubernetes, kubernetes.default, kubernetes.default.svc,
// kubernetes.default.svc.cluster.local and the first service IP
// 10.96.0.1. A client that trusts ca.crt can then reach any API server,
// directly or through the load balancer, and verify whom it talks to.
// It also signs the API server's client certificate to kubelets
// (apiserver-kubelet-client.crt and .key, user
// kube-apiserver-kubelet-client in group kubeadm:cluster-admins, as
// kubeadm has issued it since Kubernetes 1.29), with which the API server
// opens logs, exec, attach and port-forward streams; kubelets authorize it
// with a SubjectAccessReview, which the ClusterRoleBinding
// kubeadm:cluster-admins allows.
//
// The service-account key pair (sa.key, sa.pub, as kubeadm names them)
// signs and verifies ServiceAccount tokens; unlike the serving
// certificate it is never replaced, since every token handed out depends
// on it.
//
// klab's own users prove who they are with bearer tokens, listed in
// tokens.csv in kube-apiserver's --token-auth-file format (see package
// cluster/apiserver/auth): the admin of the user's kubeconfig
// (kubernetes-admin, group system:masters) and a read-only klab-viewer
// (group klab:viewers). The API server alone holds that file.
//
// Each component holds only its own credentials, as on a kubeadm node
// (see [PKI.EnsureComponentCredentials]): a folder with ca.crt and a client
// certificate whose common name is its upstream user
// (system:kube-scheduler, system:kube-controller-manager,
// system:kube-proxy, system:node:<node> in group system:nodes, and the
// kube-system/coredns service account for the DNS server); a kubelet's
// also holds its serving certificate (kubelet.crt), the controller
// manager's the CA key its CSR signer signs with, and the load balancer's
// ca.crt alone.
//
// [Ensure] is idempotent: a second call returns the same CA and tokens. It
// issues a new serving certificate only when the wanted names changed, the
// old one no longer matches the CA, or it is about to expire. Every file is
// replaced atomically (written to a temporary file, then renamed), and
// keys and tokens are readable by their owner only.
package pki
