package serviceaccount

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
)

func namespace(name string, phase v1.NamespacePhase) *v1.Namespace {
	return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NamespaceStatus{Phase: phase}}
}

func serviceAccount(ns, name string) *v1.ServiceAccount {
	return &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// TestSyncNamespace runs one sync of namespace ns1 and checks the requests
// it sent.
func TestSyncNamespace(t *testing.T) {
	cases := []struct {
		name     string
		ns       *v1.Namespace
		accounts []*v1.ServiceAccount
		// createErr makes the create fail.
		createErr   error
		wantActions []string
		wantErr     bool
	}{{
		name:        "new namespace gets default",
		ns:          namespace("ns1", v1.NamespaceActive),
		wantActions: []string{"create serviceaccounts ns1/default"},
	}, {
		name:     "default exists: nothing to do",
		ns:       namespace("ns1", v1.NamespaceActive),
		accounts: []*v1.ServiceAccount{serviceAccount("ns1", "default")},
	}, {
		name:     "other accounts do not count",
		ns:       namespace("ns1", v1.NamespaceActive),
		accounts: []*v1.ServiceAccount{serviceAccount("ns1", "builder"), serviceAccount("ns2", "default")},
		wantActions: []string{
			"create serviceaccounts ns1/default",
		},
	}, {
		name: "terminating namespace gets nothing",
		ns:   namespace("ns1", v1.NamespaceTerminating),
	}, {
		name: "namespace gone",
	}, {
		name:        "created meanwhile by someone else is fine",
		ns:          namespace("ns1", v1.NamespaceActive),
		createErr:   apierrors.NewAlreadyExists(schema.GroupResource{Resource: "serviceaccounts"}, "default"),
		wantActions: []string{"create serviceaccounts ns1/default"},
	}, {
		name:        "create failing is retried",
		ns:          namespace("ns1", v1.NamespaceActive),
		createErr:   apierrors.NewServiceUnavailable("etcd is down"),
		wantActions: []string{"create serviceaccounts ns1/default"},
		wantErr:     true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			if tc.ns != nil {
				objects = append(objects, tc.ns)
			}
			for _, sa := range tc.accounts {
				objects = append(objects, sa)
			}
			client := fake.NewClientset(objects...)
			if tc.createErr != nil {
				client.PrependReactor("create", "serviceaccounts", func(core.Action) (bool, runtime.Object, error) {
					return true, nil, tc.createErr
				})
			}
			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := newController(client, factory.Core().V1().ServiceAccounts(), factory.Core().V1().Namespaces(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.ns != nil {
				if err := factory.Core().V1().Namespaces().Informer().GetIndexer().Add(tc.ns); err != nil {
					t.Fatal(err)
				}
			}
			for _, sa := range tc.accounts {
				if err := factory.Core().V1().ServiceAccounts().Informer().GetIndexer().Add(sa); err != nil {
					t.Fatal(err)
				}
			}

			err = c.syncNamespace(context.Background(), "ns1")
			if (err != nil) != tc.wantErr {
				t.Errorf("syncNamespace = %v, want error %v", err, tc.wantErr)
			}
			var got []string
			for _, a := range client.Actions() {
				if create, ok := a.(core.CreateAction); ok {
					sa := create.GetObject().(*v1.ServiceAccount)
					got = append(got, "create "+a.GetResource().Resource+" "+a.GetNamespace()+"/"+sa.Name)
					continue
				}
				got = append(got, a.GetVerb()+" "+a.GetResource().Resource)
			}
			if diff := cmp.Diff(tc.wantActions, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeletedAccountQueuesItsNamespace checks the handlers: a deleted
// account brings its namespace back to the queue, as does a namespace
// event.
func TestDeletedAccountQueuesItsNamespace(t *testing.T) {
	client := fake.NewClientset()
	// The fake's watch replays nothing: a delete made before the
	// informer's watch is open would never reach the handler. Cache sync
	// means the list is done, not the watch, so wait for the watch too.
	watching := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("serviceaccounts", func(action core.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace())
		if err != nil {
			return false, nil, err
		}
		once.Do(func() { close(watching) })
		return true, w, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := newController(client, factory.Core().V1().ServiceAccounts(), factory.Core().V1().Namespaces(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.queue.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	<-watching

	sa := serviceAccount("ns1", "default")
	if _, err := client.CoreV1().ServiceAccounts("ns1").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().ServiceAccounts("ns1").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Get returns once the handler has queued the namespace.
	got := make(chan string, 1)
	go func() {
		key, _ := c.queue.Get()
		got <- key
	}()
	select {
	case key := <-got:
		if key != "ns1" {
			t.Fatalf("queued %q, want ns1", key)
		}
		c.queue.Done(key)
	case <-time.After(5 * time.Second):
		t.Fatal("deleting the account queued nothing")
	}
}
