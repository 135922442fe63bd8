package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/etcd"
)

// TestWritesWhenEtcdIsOutOfSpace: once etcd's space quota is full, the API
// server answers writes as upstream does — a 500 carrying etcd's own
// message, which kubectl prints as "Error from server: etcdserver: mvcc:
// database space exceeded" — while reads and deletes still work.
func TestWritesWhenEtcdIsOutOfSpace(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{TuneEtcd: func(cfg *etcd.Config) {
		cfg.QuotaBackendBytes = 4 << 20
		cfg.SnapshotCount, cfg.SnapshotCatchUp = 50, 5
	}})
	cs := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data := map[string]string{"blob": strings.Repeat("x", 128<<10)}
	var err error
	created := 0
	for ; created < 100; created++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fill-%03d", created)}, Data: data}
		if _, err = cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			break
		}
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("after %d ConfigMaps of 128 KiB in a 4 MiB quota: %v, want etcd's space error", created, err)
	}
	st := status.Status()
	if st.Code != http.StatusInternalServerError || st.Message != "etcdserver: mvcc: database space exceeded" || st.Reason != metav1.StatusReasonUnknown {
		t.Fatalf("write into a full etcd: code %d reason %q message %q; want 500, no reason, etcd's message", st.Code, st.Reason, st.Message)
	}
	t.Logf("etcd's quota filled after %d ConfigMaps", created)

	// Small writes fail alike; reads and deletes still work.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); !apierrors.IsInternalError(err) && !strings.Contains(fmt.Sprint(err), "database space exceeded") {
		t.Errorf("namespace create while NOSPACE: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "fill-000", metav1.GetOptions{}); err != nil {
		t.Errorf("read while NOSPACE: %v", err)
	}
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "fill-000", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete while NOSPACE: %v", err)
	}
}
