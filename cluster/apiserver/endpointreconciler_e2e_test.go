package apiserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestKubernetesServiceEndpoints: every API server lists itself in the
// kubernetes Service's Endpoints and EndpointSlice through its master
// lease, and a server that stops takes itself off.
func TestKubernetesServiceEndpoints(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	n := 0
	c := apiservertest.New(t, apiservertest.Options{APIServers: 2, Tune: func(cfg *apiserver.Config) {
		n++
		cfg.AdvertiseAddress = fmt.Sprintf("10.0.0.%d:6443", n)
	}})
	client := adminClient(t, c)
	ctx := testContext(t, testTimeout)

	waitEndpoints(ctx, t, client, []string{"10.0.0.1", "10.0.0.2"})
	ep, err := client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantPorts := []corev1.EndpointPort{{Name: "https", Port: 6443, Protocol: corev1.ProtocolTCP}}
	if diff := cmp.Diff(wantPorts, ep.Subsets[0].Ports); diff != "" {
		t.Errorf("endpoints ports (-want +got):\n%s", diff)
	}
	if ep.Labels[discoveryv1.LabelSkipMirror] != "true" {
		t.Errorf("endpoints labels = %v, want %s=true", ep.Labels, discoveryv1.LabelSkipMirror)
	}
	slice, err := client.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slice.Labels[discoveryv1.LabelServiceName] != "kubernetes" || slice.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("slice labels %v, address type %s", slice.Labels, slice.AddressType)
	}
	if len(slice.Ports) != 1 || *slice.Ports[0].Name != "https" || *slice.Ports[0].Port != 6443 || *slice.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("slice ports = %+v", slice.Ports)
	}
	for _, e := range slice.Endpoints {
		if e.Conditions.Ready == nil || !*e.Conditions.Ready {
			t.Errorf("endpoint %v is not ready", e.Addresses)
		}
	}

	// A graceful stop removes the server at once, without waiting for
	// its lease to expire.
	c.Stop(1)
	waitEndpoints(ctx, t, client, []string{"10.0.0.1"})
}

// waitEndpoints waits until the kubernetes Service's Endpoints and
// EndpointSlice both list exactly ips.
func waitEndpoints(ctx context.Context, t *testing.T, client kubernetes.Interface, ips []string) {
	t.Helper()
	var got, gotSlice []string
	for ctx.Err() == nil {
		got, gotSlice = nil, nil
		if ep, err := client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil {
			for _, s := range ep.Subsets {
				for _, a := range s.Addresses {
					got = append(got, a.IP)
				}
			}
		}
		if s, err := client.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil {
			for _, e := range s.Endpoints {
				gotSlice = append(gotSlice, e.Addresses...)
			}
		}
		if cmp.Equal(got, ips) && cmp.Equal(gotSlice, ips) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("kubernetes endpoints %v, slice %v, want %v", got, gotSlice, ips)
}
