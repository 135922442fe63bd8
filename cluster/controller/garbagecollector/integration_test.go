package garbagecollector_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/garbagecollector"
)

const ns = "lab"

// cluster is a real API server with the garbage collector running against
// it as system:kube-controller-manager, and admin-side caches of pods and
// ConfigMaps (the owners in these tests) whose changes wake waiters.
type cluster struct {
	client     kubernetes.Interface
	pods       cache.SharedIndexInformer
	configMaps cache.SharedIndexInformer
	changed    chan struct{}
}

func startGarbageCollector(t *testing.T) *cluster {
	t.Helper()
	api := apiservertest.New(t, apiservertest.Options{})
	admin := api.Client()
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := api.Config(0, auth.KubeControllerManager)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	metaFactory := metadatainformer.NewSharedInformerFactory(meta, 0)
	gc, err := garbagecollector.Init(ctx, controllerctx.Context{
		Client:            client,
		Informers:         informers.NewSharedInformerFactory(client, 0),
		Metadata:          meta,
		MetadataInformers: metaFactory,
		Recorder: func(component string) record.EventRecorder {
			return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}

	watchFactory := informers.NewSharedInformerFactoryWithOptions(admin, 0, informers.WithNamespace(ns))
	c := &cluster{
		client:     admin,
		pods:       watchFactory.Core().V1().Pods().Informer(),
		configMaps: watchFactory.Core().V1().ConfigMaps().Informer(),
		changed:    make(chan struct{}, 1),
	}
	poke := func() {
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	for _, inf := range []cache.SharedIndexInformer{c.pods, c.configMaps} {
		inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() },
		})
	}
	metaFactory.Start(ctx.Done())
	watchFactory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { gc.Run(ctx, 2) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		metaFactory.Shutdown()
		watchFactory.Shutdown()
		broadcaster.Shutdown()
	})
	return c
}

// waitFor re-checks cond on every pod or ConfigMap change until it holds.
func (c *cluster) waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-c.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s: %s", what, state)
		}
	}
}

// gone waits until the named object is absent from the cache.
func (c *cluster) gone(t *testing.T, inf cache.SharedIndexInformer, name string) {
	t.Helper()
	c.waitFor(t, name+" deleted", func() (bool, string) {
		_, exists, _ := inf.GetStore().GetByKey(ns + "/" + name)
		return !exists, name + " still exists"
	})
}

func (c *cluster) cachedPod(name string) (*corev1.Pod, bool) {
	obj, ok, _ := c.pods.GetStore().GetByKey(ns + "/" + name)
	if !ok {
		return nil, false
	}
	return obj.(*corev1.Pod), true
}

func (c *cluster) createOwner(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func ownerRef(owner *corev1.ConfigMap, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: &block}
}

// createPod creates an unscheduled pod (deleted at once, no kubelet
// needed) with the given owners and finalizers, and waits until the cache
// has it.
func (c *cluster) createPod(t *testing.T, name string, owners []metav1.OwnerReference, finalizers ...string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: owners, Finalizers: finalizers},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	if _, err := c.client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	c.waitFor(t, "pod "+name+" cached", func() (bool, string) {
		_, ok := c.cachedPod(name)
		return ok, "not yet"
	})
}

func (c *cluster) deleteOwner(t *testing.T, name string, policy *metav1.DeletionPropagation) {
	t.Helper()
	if err := c.client.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: policy}); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
}

func ownerUIDs(pod *corev1.Pod) []types.UID {
	var out []types.UID
	for _, ref := range pod.OwnerReferences {
		out = append(out, ref.UID)
	}
	return out
}

func TestGarbageCollectorAgainstAPIServer(t *testing.T) {
	c := startGarbageCollector(t)
	ctx := context.Background()

	t.Run("background: dependents of a deleted owner are deleted", func(t *testing.T) {
		owner := c.createOwner(t, "bg")
		c.createPod(t, "bg-1", []metav1.OwnerReference{ownerRef(owner, false)})
		c.createPod(t, "bg-2", []metav1.OwnerReference{ownerRef(owner, true)})
		c.deleteOwner(t, "bg", nil)
		c.gone(t, c.pods, "bg-1")
		c.gone(t, c.pods, "bg-2")
	})

	t.Run("a dependent with a second live owner only loses the dead reference", func(t *testing.T) {
		dead, alive := c.createOwner(t, "two-dead"), c.createOwner(t, "two-alive")
		c.createPod(t, "two-1", []metav1.OwnerReference{ownerRef(dead, false), ownerRef(alive, false)})
		c.deleteOwner(t, "two-dead", nil)
		c.waitFor(t, "two-1 owned by two-alive only", func() (bool, string) {
			pod, ok := c.cachedPod("two-1")
			if !ok {
				return false, "pod two-1 was deleted"
			}
			owners := ownerUIDs(pod)
			return len(owners) == 1 && owners[0] == alive.UID, fmt.Sprintf("owners %v", owners)
		})
	})

	t.Run("a dependent of an owner that never existed is deleted", func(t *testing.T) {
		ghost := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ghost", UID: "uid-of-no-object"}}
		c.createPod(t, "ghost-1", []metav1.OwnerReference{ownerRef(ghost, false)})
		c.gone(t, c.pods, "ghost-1")
	})

	t.Run("foreground: the owner waits for its blocking dependents", func(t *testing.T) {
		owner := c.createOwner(t, "fg")
		// A finalizer holds the blocking dependent after the collector
		// deletes it, so the wait can be seen.
		c.createPod(t, "fg-held", []metav1.OwnerReference{ownerRef(owner, true)}, "example.com/hold")
		c.createPod(t, "fg-free", []metav1.OwnerReference{ownerRef(owner, false)})
		c.deleteOwner(t, "fg", ptr.To(metav1.DeletePropagationForeground))
		c.gone(t, c.pods, "fg-free")
		c.waitFor(t, "fg-held being deleted", func() (bool, string) {
			pod, ok := c.cachedPod("fg-held")
			return ok && pod.DeletionTimestamp != nil, "not marked deleted"
		})
		cm, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, "fg", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("owner gone while a blocking dependent remains: %v", err)
		}
		if cm.DeletionTimestamp == nil || len(cm.Finalizers) != 1 || cm.Finalizers[0] != metav1.FinalizerDeleteDependents {
			t.Errorf("owner deletionTimestamp %v finalizers %v; want deleted with [foregroundDeletion]", cm.DeletionTimestamp, cm.Finalizers)
		}
		// Release the dependent: it goes, and then so does the owner.
		held, _ := c.cachedPod("fg-held")
		held = held.DeepCopy()
		held.Finalizers = nil
		if _, err := c.client.CoreV1().Pods(ns).Update(ctx, held, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.gone(t, c.pods, "fg-held")
		c.gone(t, c.configMaps, "fg")
	})

	t.Run("orphan: dependents stay without the owner reference", func(t *testing.T) {
		owner := c.createOwner(t, "orphan")
		c.createPod(t, "orphan-1", []metav1.OwnerReference{ownerRef(owner, true)})
		c.deleteOwner(t, "orphan", ptr.To(metav1.DeletePropagationOrphan))
		c.gone(t, c.configMaps, "orphan")
		pod, err := c.client.CoreV1().Pods(ns).Get(ctx, "orphan-1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			t.Fatal("orphaned dependent was deleted")
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(pod.OwnerReferences) != 0 {
			t.Errorf("orphaned pod still has owners %v", pod.OwnerReferences)
		}
	})
}
