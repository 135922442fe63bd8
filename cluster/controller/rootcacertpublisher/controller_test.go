package rootcacertpublisher

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func configMap(data map[string]string, annotations map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: ConfigMapName, Annotations: annotations}, Data: data}
}

// TestSyncNamespace runs one sync of namespace dev and checks what it
// wrote.
func TestSyncNamespace(t *testing.T) {
	published := configMap(map[string]string{CAKey: testCA}, map[string]string{descriptionAnnotation: description})
	cases := []struct {
		name        string
		phase       v1.NamespacePhase // "" means no namespace
		existing    *v1.ConfigMap
		wantActions []string
		wantData    map[string]string
	}{
		{name: "new namespace gets the CA", phase: v1.NamespaceActive,
			wantActions: []string{"create configmaps"}, wantData: map[string]string{CAKey: testCA}},
		{name: "published already: nothing to do", phase: v1.NamespaceActive, existing: published},
		{name: "changed data is put back", phase: v1.NamespaceActive,
			existing:    configMap(map[string]string{CAKey: "forged", "extra": "x"}, nil),
			wantActions: []string{"update configmaps"}, wantData: map[string]string{CAKey: testCA}},
		{name: "terminating namespace gets nothing", phase: v1.NamespaceTerminating},
		{name: "namespace gone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			if tc.phase != "" {
				objects = append(objects, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Status: v1.NamespaceStatus{Phase: tc.phase}})
			}
			if tc.existing != nil {
				objects = append(objects, tc.existing)
			}
			client := fake.NewClientset(objects...)
			factory := informers.NewSharedInformerFactory(client, 0)
			cms, nss := factory.Core().V1().ConfigMaps(), factory.Core().V1().Namespaces()
			c, err := New(client, cms, nss, []byte(testCA), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, obj := range objects {
				switch o := obj.(type) {
				case *v1.Namespace:
					nss.Informer().GetIndexer().Add(o)
				case *v1.ConfigMap:
					cms.Informer().GetIndexer().Add(o)
				}
			}
			client.ClearActions()
			if err := c.syncNamespace(context.Background(), "dev"); err != nil {
				t.Fatal(err)
			}
			var got []string
			var written *v1.ConfigMap
			for _, a := range client.Actions() {
				got = append(got, a.GetVerb()+" "+a.GetResource().Resource)
				switch a := a.(type) {
				case core.CreateAction:
					written = a.GetObject().(*v1.ConfigMap)
				case core.UpdateAction:
					written = a.GetObject().(*v1.ConfigMap)
				}
			}
			if diff := cmp.Diff(tc.wantActions, got); diff != "" {
				t.Fatalf("actions (-want +got):\n%s", diff)
			}
			if written == nil {
				return
			}
			if diff := cmp.Diff(tc.wantData, written.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			if written.Name != ConfigMapName || written.Annotations[descriptionAnnotation] != description {
				t.Errorf("wrote %s with annotations %v", written.Name, written.Annotations)
			}
		})
	}
}
