package apiserver

import (
	"context"
	"fmt"
	"net"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultNamespaces exist from the start, as in every cluster.
var DefaultNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// bootstrap creates what a new cluster has before anybody asks: the
// default namespaces and the `kubernetes` Service in default, whose
// ClusterIP is the first address of the service range. Every API server
// does it at start and tolerates finding it done (several start at once).
// Each namespace's "default" ServiceAccount is the service account
// controller's job upstream; klab's API server makes the ones of the
// default namespaces so that pods can be created before the controller
// manager runs.
func (s *Server) bootstrap(ctx context.Context) error {
	for _, name := range DefaultNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := s.ensure(ctx, namespacesGVR, "", ns); err != nil {
			return err
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
		if err := s.ensure(ctx, serviceAccountsGVR, name, sa); err != nil {
			return err
		}
	}
	if err := s.ensureSystemPriorityClasses(ctx); err != nil {
		return err
	}
	first, err := firstServiceIP(s.cfg.ServiceCIDR)
	if err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: first,
			Ports:     []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(DefaultSecurePort)}},
		},
	}
	return s.ensure(ctx, schema.GroupVersionResource{Version: "v1", Resource: "services"}, metav1.NamespaceDefault, svc)
}

func (s *Server) ensure(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj runtime.Object) error {
	res, _ := s.reg.Lookup(gvr)
	m, _ := meta.Accessor(obj)
	_, err := s.createObject(ctx, res, namespace, obj, writeParams{manager: kubeAPIServerManager})
	if err == nil || apierrors.IsAlreadyExists(err) {
		return nil
	}
	if !apierrors.IsInvalid(err) || gvr.Resource != "services" {
		return fmt.Errorf("bootstrap %s: %w", gvr.Resource, err)
	}
	// The ClusterIP is taken: by another API server starting at the same
	// moment, between its allocation and its write. Wait for its Service
	// to appear, for a while: if that server died in between, the address
	// leaked and only a repair would free it.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	key := res.Key(namespace, m.GetName())
	got, getErr := s.store.Client().Get(ctx, key)
	if getErr != nil {
		return fmt.Errorf("bootstrap %s: %w", gvr.Resource, getErr)
	}
	if len(got.Kvs) > 0 {
		return nil
	}
	// Watch from just after that read, so a write in between is seen.
	created := s.store.Client().Watch(ctx, key, clientv3.WithRev(got.Header.Revision+1), clientv3.WithFilterDelete())
	select {
	case resp := <-created:
		if resp.Err() == nil && len(resp.Events) > 0 {
			return nil
		}
	case <-ctx.Done():
	}
	return fmt.Errorf("bootstrap %s: %w", gvr.Resource, err)
}

// firstServiceIP returns the first usable address of the service range,
// which the kubernetes Service gets.
func firstServiceIP(cidr string) (string, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return "", err
	}
	ip := n.IP.To4()
	if ip == nil {
		ip = n.IP
	}
	first := append(net.IP(nil), ip...)
	first[len(first)-1]++
	return first.String(), nil
}
