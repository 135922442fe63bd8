package validation

import (
	"fmt"
	"testing"

	"github.com/klab-dev/klab/cluster/apiserver/defaults"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// validObjects is one ordinary, defaulted object of every kind the package
// knows. Each must pass create, a no-op update and a no-op status update.
func validObjects() []runtime.Object {
	now := metav1.NowMicro()
	objs := []runtime.Object{
		validPod(),
		validDeployment(),
		&appsv1.ReplicaSet{ObjectMeta: objectMeta("web-5d8f7"), Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: webLabels}, Template: podTemplate(webLabels)}},
		&appsv1.DaemonSet{ObjectMeta: objectMeta("agent"), Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: webLabels}, Template: podTemplate(webLabels)}},
		validJob(),
		validService(),
		validService(func(s *corev1.Service) { s.Spec.ClusterIP = "None"; s.Spec.Selector = nil; s.Spec.Ports = nil }),
		validService(func(s *corev1.Service) {
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com."}
		}),
		&corev1.Endpoints{ObjectMeta: objectMeta("web"), Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.244.1.5", NodeName: ptr.To("worker-1")}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 8080}, {Name: "metrics", Port: 9090}},
		}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", ResourceVersion: "1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", ResourceVersion: "1"},
			Spec: corev1.NodeSpec{PodCIDRs: []string{"10.244.1.0/24"}, Taints: []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute}}}},
		&corev1.ConfigMap{ObjectMeta: objectMeta("cfg"), Data: map[string]string{"app.properties": "a=b"}},
		&corev1.Secret{ObjectMeta: objectMeta("tls"), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
		&corev1.ServiceAccount{ObjectMeta: objectMeta("default")},
		&corev1.Event{ObjectMeta: objectMeta("web.17d"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
			Reason: "Scheduled", Message: "Successfully assigned default/web to worker-1", Type: corev1.EventTypeNormal},
		&eventsv1.Event{ObjectMeta: objectMeta("web.17e"), EventTime: now, ReportingController: "default-scheduler",
			ReportingInstance: "default-scheduler-master-1", Action: "Binding", Reason: "Scheduled", Type: corev1.EventTypeNormal,
			Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Namespace: "kube-node-lease", ResourceVersion: "1"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("worker-1"), LeaseDurationSeconds: ptr.To[int32](40)}},
		&discoveryv1.EndpointSlice{ObjectMeta: objectMeta("web-abcde"), AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: ptr.To("worker-1")}},
			Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}}},
	}
	for _, obj := range objs {
		defaults.Default(obj)
	}
	return objs
}

func TestDefaultedObjectsAreValid(t *testing.T) {
	for _, obj := range validObjects() {
		t.Run(fmt.Sprintf("%T", obj), func(t *testing.T) {
			checkErrors(t, ValidateCreate(obj))
			checkErrors(t, ValidateUpdate(obj, obj.DeepCopyObject()))
			checkErrors(t, ValidateStatusUpdate(obj, obj.DeepCopyObject()))
		})
	}
}

func TestBinding(t *testing.T) {
	tests := []struct {
		name   string
		target corev1.ObjectReference
		want   []string
	}{
		{name: "node", target: corev1.ObjectReference{Kind: "Node", Name: "worker-1"}},
		{name: "kind may be left out", target: corev1.ObjectReference{Name: "worker-1"}},
		{name: "not a node", target: corev1.ObjectReference{Kind: "Pod", Name: "x"},
			want: []string{`target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"`}},
		{name: "no name", target: corev1.ObjectReference{Kind: "Node"},
			want: []string{`target.name: Required value`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &corev1.Binding{ObjectMeta: objectMeta("web"), Target: tt.target}
			checkErrors(t, ValidateCreate(b), tt.want...)
		})
	}
}

func TestKindsOutsideThePackage(t *testing.T) {
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "Not Valid"}}
	checkErrors(t, ValidateCreate(class))
	checkErrors(t, ValidateUpdate(class, class))
	// ConfigMaps have no status subresource.
	cm := &corev1.ConfigMap{ObjectMeta: objectMeta("cfg")}
	checkErrors(t, ValidateStatusUpdate(cm, cm))
}

func TestUpdateWithDifferentKinds(t *testing.T) {
	errs := ValidateUpdate(validPod(), validService())
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
		t.Fatalf("ValidateUpdate(Pod, Service) = %v, want one internal error", errs)
	}
}

// Objects straight off the wire can have any field missing; nothing may
// panic on them, with or without defaulting.
func TestEmptyObjectsDoNotPanic(t *testing.T) {
	empties := []func() runtime.Object{
		func() runtime.Object { return &corev1.Pod{} },
		func() runtime.Object { return &corev1.Binding{} },
		func() runtime.Object { return &corev1.Service{} },
		func() runtime.Object { return &corev1.Endpoints{} },
		func() runtime.Object { return &corev1.Namespace{} },
		func() runtime.Object { return &corev1.Node{} },
		func() runtime.Object { return &corev1.ConfigMap{} },
		func() runtime.Object { return &corev1.Secret{} },
		func() runtime.Object { return &corev1.ServiceAccount{} },
		func() runtime.Object { return &corev1.Event{} },
		func() runtime.Object { return &eventsv1.Event{} },
		func() runtime.Object { return &appsv1.Deployment{} },
		func() runtime.Object { return &appsv1.ReplicaSet{} },
		func() runtime.Object { return &appsv1.DaemonSet{} },
		func() runtime.Object { return &batchv1.Job{} },
		func() runtime.Object { return &coordinationv1.Lease{} },
		func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		func() runtime.Object { return (*corev1.Pod)(nil) },
	}
	for _, empty := range empties {
		for _, defaulted := range []bool{false, true} {
			obj, old := empty(), empty()
			t.Run(fmt.Sprintf("%T defaulted=%v", obj, defaulted), func(t *testing.T) {
				if defaulted {
					defaults.Default(obj)
					defaults.Default(old)
				}
				ValidateCreate(obj)
				ValidateUpdate(obj, old)
				ValidateStatusUpdate(obj, old)
			})
		}
	}
	if errs := ValidateUpdate(validPod(), (*corev1.Pod)(nil)); len(errs) != 1 {
		t.Errorf("update against a nil old Pod: got %v, want one internal error", errs)
	}
}
